"""SentencePiece tokenization with ALBERT's conventions.

``AlbertTokenizer`` wraps a SentencePiece model and reproduces the official ``encode_pieces``:
text is normalised with :func:`preprocess_text` (or, for other scripts, :func:`normalize_text` with the
vocabulary's ``normalization`` and ``strip_accents``), and a piece made of digits followed by a comma
("▁1990,") is re-encoded without the comma with "," appended as its own piece.
"""
from __future__ import annotations

from typing import List, Sequence

import sentencepiece as spm

from components.text.normalize import normalize_text
from config.errors import UserError

SPIECE_UNDERLINE = "\u2581"
PAD, UNK, CLS, SEP, MASK = "<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]"
# Where ALBERT expects its special pieces (pad=0, unk=1, control symbols 2..4).
EXPECTED_SPECIAL_IDS = {PAD: 0, UNK: 1, CLS: 2, SEP: 3, MASK: 4}


class SpecialIdError(UserError, ValueError):
    """The SentencePiece model does not put ALBERT's special pieces at ids 0-4."""


def check_special_ids(sp: spm.SentencePieceProcessor, model_path: str = "<model>") -> None:
    """Fail clearly unless pad/unk/[CLS]/[SEP]/[MASK] sit at ids 0..4."""
    problems = []
    for piece, want in EXPECTED_SPECIAL_IDS.items():
        got = sp.piece_to_id(piece)
        actual = sp.id_to_piece(want) if want < sp.get_piece_size() else None
        if got != want or actual != piece:
            problems.append(f"{piece!r} expected at id {want}, model has it at {got} (id {want} is {actual!r})")
    if problems:
        raise SpecialIdError(f"SentencePiece model {model_path} is not an ALBERT vocabulary: " + "; ".join(problems))


class AlbertTokenizer:
    """Normalise → SentencePiece pieces → ids, the way ALBERT's ``FullTokenizer`` does."""

    kind = "sentencepiece"

    def __init__(self, model_path: str, do_lower_case: bool = True, check_ids: bool = True,
                 normalization: str = "albert", strip_accents: bool = False):
        self.model_path = model_path
        self.do_lower_case = do_lower_case
        self.normalization, self.strip_accents = normalization, strip_accents
        self.sp = spm.SentencePieceProcessor()
        with open(model_path, "rb") as f:  # read bytes so gs:// paths opened by callers work too
            self.sp.load_from_serialized_proto(f.read())
        if check_ids:
            check_special_ids(self.sp, model_path)
        self.vocab_size = self.sp.get_piece_size()
        self.pad_id, self.unk_id = 0, 1
        self.cls_id, self.sep_id, self.mask_id = (self.sp.piece_to_id(p) for p in (CLS, SEP, MASK))

    @classmethod
    def from_serialized(cls, model_proto: bytes, do_lower_case: bool = True, normalization: str = "albert",
                        strip_accents: bool = False, path: str = "<serialized>") -> "AlbertTokenizer":
        self = cls.__new__(cls)
        self.model_path = path
        self.do_lower_case = do_lower_case
        self.normalization, self.strip_accents = normalization, strip_accents
        self.sp = spm.SentencePieceProcessor()
        self.sp.load_from_serialized_proto(model_proto)
        check_special_ids(self.sp, path)
        self.vocab_size = self.sp.get_piece_size()
        self.pad_id, self.unk_id = 0, 1
        self.cls_id, self.sep_id, self.mask_id = (self.sp.piece_to_id(p) for p in (CLS, SEP, MASK))
        return self

    def normalize(self, text: str) -> str:
        return normalize_text(text, self.normalization, lower=self.do_lower_case, accents=self.strip_accents)

    def tokenize(self, text: str) -> List[str]:
        """Normalised text → pieces, with the official digits-comma split."""
        pieces = self.sp.encode(self.normalize(text), out_type=str)
        out: List[str] = []
        for piece in pieces:
            if len(piece) > 1 and piece[-1] == "," and piece[-2].isdigit():
                sub = self.sp.encode(piece[:-1].replace(SPIECE_UNDERLINE, ""), out_type=str)
                if piece[0] != SPIECE_UNDERLINE and sub and sub[0][0] == SPIECE_UNDERLINE:
                    if len(sub[0]) == 1:
                        sub = sub[1:]
                    else:
                        sub[0] = sub[0][1:]
                out.extend(sub)
                out.append(piece[-1])
            else:
                out.append(piece)
        return out

    def encode(self, text: str) -> List[int]:
        return [self.sp.piece_to_id(p) for p in self.tokenize(text)]

    def encode_batch(self, texts: Sequence[str]) -> List[List[int]]:
        return [self.encode(t) for t in texts]

    def piece_to_id(self, piece: str) -> int:
        """The id of one piece (``tokenize``'s output): what ``encode`` gives for it."""
        return self.sp.piece_to_id(piece)

    @property
    def pieces(self) -> List[str]:
        """Every piece, in id order."""
        return [self.sp.id_to_piece(i) for i in range(self.vocab_size)]

    def convert_ids_to_pieces(self, ids: Sequence[int]) -> List[str]:
        return [self.sp.id_to_piece(int(i)) for i in ids]

    def is_word_start(self, token_id: int) -> bool:
        """A piece that starts with '▁' starts a whole word (used by whole-word n-gram masking)."""
        return self.sp.id_to_piece(int(token_id)).startswith(SPIECE_UNDERLINE)
