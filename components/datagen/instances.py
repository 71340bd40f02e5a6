"""Training instances from one document: segment pairing (SOP/NSP), truncation and n-gram masking.

Follows the official ALBERT ``create_pretraining_data.py`` procedure (see docs/albert-reference.md,
"Official pretraining data") with three deliberate differences, each for reproducibility or sanity:

* Every random choice, including the n-gram length the official code draws from the unseeded global
  ``np.random``, comes from the explicit ``rng``; one ``rng`` per (document, pass) is derived with
  :func:`document_seed`, so the output does not depend on how documents are spread over workers.
* Documents are processed independently; a "random other document" is supplied by the caller through
  ``random_document(rng)`` (the official code indexes its in-memory list of all documents).
* A masking candidate word never continues across [CLS]/[SEP]: a non-word-start piece right after a
  [SEP] starts a new word (the official code glues it to the last word of segment A). n-grams are still
  runs of consecutive candidate words and may straddle the [SEP] (which itself is never masked), as in
  the official code.

Official quirks kept on purpose: the short target is drawn once per document and pass (not per chunk);
near the end of the sequence an n-gram is clipped to the words that remain; when a span is over the
prediction budget its n is shrunk one word at a time and the span is skipped if even one word is too
many; spans touching an already-masked token are skipped; the random replacement id is uniform over
the whole vocabulary (special pieces included).
"""
from __future__ import annotations

import functools
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Callable, List, NamedTuple, Optional, Tuple

import numpy as np

from components.datagen.datagen_config import DataGenConfig

SOP_MODES = ("official", "pure", "nsp")
# Replacement kinds of a masked token (``Instance.mask_kinds``).
KIND_MASK, KIND_RANDOM, KIND_KEEP = 0, 1, 2

SPIECE_UNDERLINE = "\u2581"
# The official _is_start_piece_sp: note it has no "'", "<", "=", ">" (the list repeats '"' instead).
_OFFICIAL_SPECIAL_CHARS = frozenset('!"#$%&"()*+,-./:;?@[\\]^_`{|}~')
_ENGLISH = frozenset("abcdefghijklmnopqrstuvwxyz")

RandomDocument = Callable[[np.random.Generator], Sequence[np.ndarray]]


class TokenizedDocument(Sequence):
    """One document's sentences stored flat: sentence j is ``flat[offsets[j]:offsets[j + 1]]`` (a view).
    ``offsets`` has n + 1 strictly increasing int64 entries (no empty sentences); it starts at 0 for a
    document of its own, elsewhere for a document viewed inside a larger buffer (the random-document pool).

    Instance building works on this form: a chunk of sentences is found with one ``searchsorted`` over the
    offsets and its segments are slices of ``flat``, instead of a Python loop over sentences and a
    concatenation per segment (book-length documents have tens of thousands of sentences).

    ``starts`` (bool, parallel to ``flat``, or None): which pieces begin a masking unit, when a segmenter decided
    them (``datagen.segmenters``); None: the vocabulary's rule (``VocabInfo.is_word_start``).
    """

    __slots__ = ("flat", "offsets", "starts")

    def __init__(self, flat: np.ndarray, offsets: np.ndarray, starts: Optional[np.ndarray] = None):
        self.flat = flat
        self.offsets = offsets
        self.starts = starts

    @classmethod
    def from_sentences(cls, sentences: Sequence[np.ndarray]) -> "TokenizedDocument":
        """From one id array per sentence; empty sentences are dropped."""
        if isinstance(sentences, TokenizedDocument):
            return sentences
        arrays = [np.asarray(s, dtype=np.int32).reshape(-1) for s in sentences]
        arrays = [a for a in arrays if a.shape[0]]
        offsets = np.zeros(len(arrays) + 1, dtype=np.int64)
        if not arrays:
            return cls(np.zeros(0, np.int32), offsets)
        np.cumsum([a.shape[0] for a in arrays], out=offsets[1:])
        return cls(np.concatenate(arrays), offsets)

    @property
    def num_tokens(self) -> int:
        return int(self.offsets[-1] - self.offsets[0])

    def __len__(self) -> int:
        return self.offsets.shape[0] - 1

    def __getitem__(self, j):
        n = self.offsets.shape[0] - 1
        if isinstance(j, slice):
            return [self[k] for k in range(*j.indices(n))]
        if j < 0:
            j += n
        if not 0 <= j < n:
            raise IndexError(j)
        return self.flat[self.offsets[j]:self.offsets[j + 1]]

    def __eq__(self, other) -> bool:  # compares as the list of its sentences (``doc == []`` for an empty one)
        if isinstance(other, (list, tuple, TokenizedDocument)):
            return len(self) == len(other) and all(np.array_equal(a, b) for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None

    def __repr__(self) -> str:
        return f"TokenizedDocument({len(self)} sentences, {self.num_tokens} tokens)"


def _is_int(x: object) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, bool)


@dataclass(frozen=True)
class InstanceParams:
    """Knobs of instance creation; defaults are the official ALBERT run (L=512, P=20, 3-grams, SOP).

    ``sop_mode``: ``official`` = ALBERT's code (swap with p 0.5; a one-sentence chunk gets B from a random
    document, label 1), ``pure`` = only swaps (a one-sentence chunk is split at a word boundary, see
    :func:`create_instances_from_document`), ``nsp`` = BERT's next-sentence prediction.
    ``random_token_prob`` / ``keep_prob``: shares of masked tokens replaced by a random id / left
    unchanged; the rest become [MASK] (official 0.1 / 0.1 / 0.8).
    """

    # The defaults are DataGenConfig's (the node's settings), stated once there.
    max_seq_length: int = DataGenConfig.max_seq_length
    max_predictions_per_seq: int = DataGenConfig.max_predictions_per_seq
    masked_lm_prob: float = DataGenConfig.masked_lm_prob
    short_seq_prob: float = DataGenConfig.short_seq_prob
    max_ngram: int = DataGenConfig.max_ngram
    sop_mode: str = DataGenConfig.sop_mode
    random_token_prob: float = 0.1
    keep_prob: float = 0.1

    def __post_init__(self) -> None:
        problems = []
        if not _is_int(self.max_seq_length) or self.max_seq_length < 5:
            problems.append(f"max_seq_length must be an int >= 5 ([CLS] A [SEP] B [SEP] with A, B >= 1 and a "
                            f"target of at least 2), got {self.max_seq_length!r}")
        if not _is_int(self.max_predictions_per_seq) or self.max_predictions_per_seq < 0:
            problems.append(f"max_predictions_per_seq must be an int >= 0, got {self.max_predictions_per_seq!r}")
        if not _is_int(self.max_ngram) or self.max_ngram < 1:
            problems.append(f"max_ngram must be an int >= 1, got {self.max_ngram!r}")
        for name in ("masked_lm_prob", "short_seq_prob", "random_token_prob", "keep_prob"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0.0 <= float(v) <= 1.0:
                problems.append(f"{name} must be a probability in [0, 1], got {v!r}")
        if not problems and self.random_token_prob + self.keep_prob > 1.0:
            problems.append(f"random_token_prob + keep_prob must be <= 1, got "
                            f"{self.random_token_prob} + {self.keep_prob}")
        if self.sop_mode not in SOP_MODES:
            problems.append(f"sop_mode must be one of {SOP_MODES}, got {self.sop_mode!r}")
        if problems:
            raise ValueError("invalid InstanceParams: " + "; ".join(problems))

    @property
    def max_num_tokens(self) -> int:
        """Room for A + B after [CLS], [SEP], [SEP]."""
        return self.max_seq_length - 3

    @property
    def ngram_probs(self) -> np.ndarray:
        """p(n) ∝ 1/n for n = 1..max_ngram (6/11, 3/11, 2/11 for 3), the paper's n-gram distribution."""
        p = 1.0 / np.arange(1, self.max_ngram + 1)
        return p / p.sum()

    @functools.cached_property
    def ngram_cdf(self) -> np.ndarray:
        """Cumulative :attr:`ngram_probs`, last entry forced to 1 (cached: it is used per instance)."""
        cdf = np.cumsum(self.ngram_probs)
        cdf[-1] = 1.0
        return cdf


def official_is_start_piece(piece: str) -> bool:
    """The official ``_is_start_piece_sp``: '▁'-prefixed, '<'-prefixed, a single punctuation piece, or a piece
    with any character outside a-z and that punctuation (digits, "'", foreign letters) starts a word."""
    if piece.startswith(SPIECE_UNDERLINE) or piece.startswith("<") or piece in _OFFICIAL_SPECIAL_CHARS:
        return True
    allowed = _ENGLISH | _OFFICIAL_SPECIAL_CHARS
    return not all(str(c).lower() in allowed for c in piece)


@dataclass(frozen=True)
class VocabInfo:
    """What instance creation needs to know about the vocabulary, precomputed once per worker.

    ``is_word_start[id]``: the piece starts a whole word (masking groups pieces into words with it and it is
    ``token_boundary``). ``digit_comma[id]``: the piece is digits followed by "," and gets the official
    re-encoding quirk, so :func:`components.datagen.generate.tokenize_document` can batch-encode safely.
    """

    vocab_size: int
    cls_id: int
    sep_id: int
    mask_id: int
    pad_id: int
    is_word_start: np.ndarray
    digit_comma: Optional[np.ndarray] = None

    def __post_init__(self) -> None:
        if self.is_word_start.shape != (self.vocab_size,):
            raise ValueError(f"is_word_start must have shape ({self.vocab_size},), got {self.is_word_start.shape}")

    @classmethod
    def from_pieces(cls, pieces: Sequence[str], cls_id: int = 2, sep_id: int = 3, mask_id: int = 4,
                    pad_id: int = 0, rule: str = "official") -> "VocabInfo":
        """``rule``: ``official`` (:func:`official_is_start_piece`), ``underline`` (only '▁' starts a word) or
        ``wordpiece`` (every piece but a '##' continuation starts one: the official ``_is_start_piece_bert``; a
        WordPiece vocabulary has no digits-comma quirk)."""
        if rule == "official":
            start = [official_is_start_piece(p) for p in pieces]
        elif rule == "underline":
            start = [p.startswith(SPIECE_UNDERLINE) for p in pieces]
        elif rule == "wordpiece":
            start = [not p.startswith("##") for p in pieces]
        else:
            raise ValueError(f"rule must be 'official', 'underline' or 'wordpiece', got {rule!r}")
        digit_comma = None if rule == "wordpiece" else np.asarray(
            [len(p) > 1 and p[-1] == "," and p[-2].isdigit() for p in pieces], dtype=bool)
        return cls(vocab_size=len(pieces), cls_id=cls_id, sep_id=sep_id, mask_id=mask_id, pad_id=pad_id,
                   is_word_start=np.asarray(start, dtype=bool), digit_comma=digit_comma)

    @classmethod
    def from_tokenizer(cls, tok, word_starts: str = "official") -> "VocabInfo":
        """From a tokenizer (``components.text.tokenizers.load_tokenizer``: ids of [CLS]/[SEP]/[MASK]/pad, its
        pieces) and ``datagen.word_starts``: ``official`` takes the release's rule for the vocabulary's kind
        (``_is_start_piece_sp`` or ``_is_start_piece_bert``), ``boundary`` the '▁' or '##' marks alone."""
        if tok.kind == "wordpiece":
            rule = "wordpiece"
        elif word_starts in ("official", "boundary"):
            rule = "official" if word_starts == "official" else "underline"
        else:
            raise ValueError(f"word_starts must be 'official' or 'boundary', got {word_starts!r}")
        return cls.from_pieces(tok.pieces, cls_id=tok.cls_id, sep_id=tok.sep_id, mask_id=tok.mask_id,
                               pad_id=tok.pad_id, rule=rule)


@dataclass
class Instance:
    """One pretraining example before padding, plus what the statistics need.

    ``input_ids`` already carry the masking; ``masked_lm_ids`` are the original ids at the sorted
    ``masked_lm_positions``. ``sop_label``: 1 = segments swapped or B from a random document (official SOP),
    1 = "random next" (``nsp``, BERT's ``is_random_next``), 0 = A really precedes B.
    ``mask_kinds`` (KIND_MASK/KIND_RANDOM/KIND_KEEP) align with the positions; ``ngram_lengths`` are the
    words each masked span covers, ``ngram_drawn`` the n drawn at every start word visited (masked or
    skipped): the sampler's p ∝ 1/n shows in the latter, the budget/overlap skew in the former.
    ``random_next``: the label comes from a random-document B, not from a swap decision.
    """

    input_ids: np.ndarray          # int32, length <= max_seq_length
    segment_ids: np.ndarray        # int8
    token_boundary: np.ndarray     # int8, 1 where a piece starts a word ([CLS]/[SEP] included)
    masked_lm_positions: np.ndarray  # int32, sorted
    masked_lm_ids: np.ndarray      # int32
    sop_label: int
    doc_index: int = 0
    chunk_index: int = 0           # order within the document pass; 0 marks the pass's first instance
    target_length: int = 0
    is_short_target: bool = False
    ngram_lengths: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    ngram_drawn: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    mask_kinds: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int8))
    random_next: bool = False      # B came from a random other document (official one-sentence chunks, NSP)

    @property
    def num_tokens(self) -> int:
        return int(self.input_ids.shape[0])

    @property
    def masked_lm_weights(self) -> np.ndarray:
        return np.ones(self.masked_lm_positions.shape[0], dtype=np.float32)


class MaskResult(NamedTuple):
    masked_tokens: np.ndarray  # int32 copy of the input with replacements applied
    positions: np.ndarray      # int32, sorted
    labels: np.ndarray         # int32 original ids at positions
    kinds: np.ndarray          # int8 KIND_* per position
    span_ngrams: np.ndarray    # int32 words covered by each masked span
    span_ngrams_drawn: np.ndarray  # int32 n drawn at every visited start word, masked or skipped
    token_boundary: np.ndarray     # int8, see :func:`token_boundary`


def document_seed(global_seed: int, doc_id: str, pass_index: int) -> int:
    """64-bit seed from (global seed, document id, pass) via SHA-256: identical on every process and platform
    (Python's ``hash()`` is salted per process), so any sharding of documents yields the same bytes."""
    h = hashlib.sha256(f"albert-datagen\x00{int(global_seed)}\x00{doc_id}\x00{int(pass_index)}".encode("utf-8"))
    return int.from_bytes(h.digest()[:8], "little")


def token_boundary(tokens: np.ndarray, vocab: VocabInfo) -> np.ndarray:
    """1 where a piece starts a word or is [CLS]/[SEP], as the official code records it."""
    special = (tokens == vocab.cls_id) | (tokens == vocab.sep_id)
    return (vocab.is_word_start[tokens] | special).astype(np.int8)


def mask_tokens(tokens: np.ndarray, rng: np.random.Generator, params: InstanceParams,
                vocab: VocabInfo, starts: Optional[np.ndarray] = None) -> MaskResult:
    """Whole-word n-gram masking (official ``create_masked_lm_predictions`` without its permutation option).

    Candidates are whole words ([CLS]/[SEP] excluded). Budget = min(P, max(1, round(len × masked_lm_prob)))
    (0 when masked_lm_prob is 0). Start words are visited in random order; each draws n with p ∝ 1/n; a span
    over budget is shrunk word by word and skipped if still over; spans touching a masked token are skipped.
    Each masked token: [MASK] / random id / unchanged with 1 − r − k / r / k. ``starts`` (per position, or None
    for the vocabulary's rule): the pieces that begin a word, from a segmenter.

    Speed: only the ~budget visited words are touched in Python. The random visiting order is drawn as
    uniform picks with repeats rejected, which is distributed exactly like a prefix of a shuffle but does
    not shuffle all ~400 words of a 512-token sequence.
    """
    tokens = np.asarray(tokens, dtype=np.int32)
    n_tok = tokens.shape[0]
    budget = 0
    if params.masked_lm_prob > 0 and params.max_predictions_per_seq > 0:
        budget = min(params.max_predictions_per_seq, max(1, int(round(n_tok * params.masked_lm_prob))))
    special = (tokens == vocab.cls_id) | (tokens == vocab.sep_id)
    boundary = (vocab.is_word_start[tokens] if starts is None else starts) | special
    # Breaks: word starts, special tokens, the token after a special one, position 0, and n_tok as sentinel.
    brk = np.empty(n_tok + 1, dtype=bool)
    brk[:n_tok] = boundary
    brk[1:n_tok] |= special[:-1]
    brk[0] = brk[n_tok] = True
    bpos = np.flatnonzero(brk)
    is_word = ~special[bpos[:-1]]
    starts = bpos[:-1][is_word]
    n_words = starts.shape[0]
    empty = np.zeros(0, np.int32)
    if budget == 0 or n_words == 0:
        return MaskResult(tokens.copy(), empty, empty, np.zeros(0, np.int8), empty, empty,
                          boundary.astype(np.int8))
    ends = bpos[1:][is_word]  # a word ends at the next break
    sp_l = np.flatnonzero(special).tolist()
    cdf = params.ngram_cdf.tolist()
    max_n = params.max_ngram

    covered = bytearray(n_tok)
    seen = set()
    count = 0
    used_n: List[int] = []
    drawn_l: List[int] = []
    while count < budget and len(seen) < n_words:
        u = rng.random(64).tolist()  # 32 (word pick, n) pairs
        for j in range(0, 64, 2):
            if count >= budget or len(seen) >= n_words:
                break
            w = int(u[j] * n_words)
            if w in seen:
                continue
            seen.add(w)
            n = 1
            while n < max_n and u[j + 1] >= cdf[n - 1]:
                n += 1
            drawn_l.append(n)
            s = starts.item(w)
            while True:
                last = min(w + n, n_words)
                e = ends.item(last - 1)
                size = e - s
                for p in sp_l:  # a span crossing [SEP] does not mask it
                    if s < p < e:
                        size -= 1
                if count + size <= budget or n == 1:
                    break
                n -= 1
            if count + size > budget or covered.find(1, s, e) != -1:
                continue
            covered[s:e] = b"\x01" * (e - s)
            used_n.append(last - w)
            count += size

    cov = np.frombuffer(covered, dtype=np.uint8).view(bool) & ~special
    positions = np.flatnonzero(cov).astype(np.int32)
    m = positions.shape[0]
    labels = tokens[positions]
    u = rng.random(2 * m)
    p_mask = 1.0 - params.random_token_prob - params.keep_prob
    kinds = np.searchsorted(np.array([p_mask, p_mask + params.random_token_prob]), u[:m],
                            side="right").astype(np.int8)
    out = tokens.copy()
    out[positions[kinds == KIND_MASK]] = vocab.mask_id
    is_rand = kinds == KIND_RANDOM
    # floor(u × V) is uniform over the vocabulary ids (bias below 2^-40).
    out[positions[is_rand]] = (u[m:][is_rand] * vocab.vocab_size).astype(np.int32)
    return MaskResult(out, positions, labels, kinds, np.asarray(used_n, dtype=np.int32),
                      np.asarray(drawn_l, dtype=np.int32), boundary.astype(np.int8))


def truncation_counts(len_a: int, len_b: int, max_num_tokens: int) -> Tuple[int, int]:
    """Tokens the official ``truncate_seq_pair`` removes from A and from B.

    It removes one token at a time from the longer segment (B on ties); that is a closed form, so a
    100k-token sentence costs O(1) instead of a 100k-step loop.
    """
    k = len_a + len_b - max_num_tokens
    if k <= 0:
        return 0, 0
    d = abs(len_a - len_b)
    if k <= d:
        return (k, 0) if len_a > len_b else (0, k)
    r = k - d
    return max(len_a - len_b, 0) + r // 2, max(len_b - len_a, 0) + (r + 1) // 2


def truncate_pair(a: np.ndarray, b: np.ndarray, max_num_tokens: int,
                  rng: np.random.Generator) -> Tuple[np.ndarray, np.ndarray]:
    """Official truncation: from the longer side, each removed token from the front or back with p 0.5
    (the front count of each side is Binomial(removed, 0.5), the same distribution as token-by-token)."""
    (fa, ea), (fb, eb) = _truncation_cuts(a.shape[0], b.shape[0], max_num_tokens, rng)
    return a[fa:ea], b[fb:eb]


def _truncation_cuts(len_a: int, len_b: int, max_num_tokens: int,
                     rng: np.random.Generator) -> Tuple[Tuple[int, int], Tuple[int, int]]:
    """The kept ``[start, end)`` of A and of B under :func:`truncate_pair`'s draws."""
    ra, rb = truncation_counts(len_a, len_b, max_num_tokens)
    fa = int(rng.binomial(ra, 0.5)) if ra else 0
    fb = int(rng.binomial(rb, 0.5)) if rb else 0
    return (fa, len_a - (ra - fa)), (fb, len_b - (rb - fb))


def _random_segment(rng: np.random.Generator, random_document: RandomDocument, target_b_length: int,
                    with_starts: bool = False):
    """B from a random document: whole sentences from a random start until the target length is reached.
    (Sentences are taken as given, not filtered, to stay O(length of B) on book-sized documents.) With
    ``with_starts``: (B, its segmenter word starts or None)."""
    doc = random_document(rng)
    if len(doc) == 0:
        raise ValueError("random_document(rng) returned an empty document; it must return a non-empty one")
    start = int(rng.integers(0, len(doc)))
    need = max(target_b_length, 1)
    if isinstance(doc, TokenizedDocument):  # the pool's documents: one searchsorted, one slice
        off = doc.offsets
        end = min(int(np.searchsorted(off, off[start] + need, side="left")), len(doc))
        if with_starts:
            st = None if doc.starts is None else doc.starts[off[start]:off[end]]
            return doc.flat[off[start]:off[end]], st
        return doc.flat[off[start]:off[end]]
    out: List[np.ndarray] = []
    length = 0
    for j in range(start, len(doc)):
        out.append(np.asarray(doc[j], dtype=np.int32))
        length += out[-1].shape[0]
        if length >= need:
            break
    if length == 0:
        raise ValueError("random_document(rng) returned empty sentences; tokenize_document drops them")
    segment = np.concatenate(out) if len(out) > 1 else out[0]
    return (segment, None) if with_starts else segment


def _split_sentence(sent: np.ndarray, rng: np.random.Generator, vocab: VocabInfo,
                    starts: Optional[np.ndarray] = None) -> Optional[int]:
    """Split point for ``pure`` mode's one-sentence chunks: a random word start after the first piece, else
    any piece boundary; None for a one-piece sentence."""
    if sent.shape[0] < 2:
        return None
    cand = np.flatnonzero(vocab.is_word_start[sent[1:]] if starts is None else starts[1:]) + 1
    if cand.shape[0] == 0:
        return int(rng.integers(1, sent.shape[0]))
    return int(cand[rng.integers(0, cand.shape[0])])


def create_instances_from_document(doc_tokens: Sequence[np.ndarray], doc_index: int, rng: np.random.Generator,
                                   params: InstanceParams, vocab: VocabInfo,
                                   random_document: Optional[RandomDocument] = None) -> List[Instance]:
    """All instances of one document for one pass (the official ``create_instances_from_document``).

    ``doc_tokens``: one id array per sentence (empty ones are dropped, an empty document gives []).
    Target length L−3, or with p ``short_seq_prob`` uniform in [2, L−3], once per call. Whole sentences
    are accumulated until the target is reached or the document ends; A = the first ``a_end`` sentences
    (uniform in [1, n−1]), B = the rest. Then, by ``params.sop_mode``:

    * ``official``: a one-sentence chunk takes B from ``random_document(rng)`` (label 1; the official
      "put back" rewinds by the chunk's unused sentences, which is always 0 here); otherwise swap with p 0.5
      (label 1) or keep (label 0). With ``random_document=None`` one-sentence chunks are skipped.
    * ``pure``: only order is ever the signal. A one-sentence chunk is split at a random word start inside
      it (any piece boundary if it is one word; skipped if it is one piece), then swapped with p 0.5.
    * ``nsp``: BERT. A one-sentence chunk, or with p 0.5 any chunk, gets B from a random document and label 1
      ("random next"); the unused sentences are put back. Needs ``random_document``.

    ``random_document(rng)`` must return a non-empty document other than this one, chosen with ``rng``.
    The pair is truncated to L−3 with :func:`truncate_pair`, so sentences longer than L are fine.
    """
    if params.sop_mode == "nsp" and random_document is None:
        raise ValueError("sop_mode='nsp' needs random_document to draw random next segments")
    document = TokenizedDocument.from_sentences(doc_tokens)
    n_sent = len(document)
    if n_sent == 0:
        return []
    flat, off, st = document.flat, document.offsets, document.starts
    max_num_tokens = params.max_num_tokens
    target = max_num_tokens
    is_short = bool(rng.random() < params.short_seq_prob)
    if is_short:
        target = int(rng.integers(2, max_num_tokens, endpoint=True))

    instances: List[Instance] = []
    mode = params.sop_mode
    # A chunk is sentences i..j: j is the first sentence at which the chunk reaches ``target`` tokens (the
    # official loop's "current_length >= target_seq_length"), or the document's last sentence.
    chunk_ends = np.minimum(np.searchsorted(off, off[:-1] + target, side="left"), n_sent) - 1
    i = 0
    while i < n_sent:
        j = int(chunk_ends[i])
        k = j - i + 1  # sentences in the chunk
        a_end = 1 if k < 2 else int(rng.integers(1, k))
        cut = int(off[i + a_end])
        a: Optional[np.ndarray] = None
        b: Optional[np.ndarray] = None
        a_st = b_st = None  # their segmenter word starts, when the document has them
        label = 0
        next_i = j + 1
        if mode == "pure":
            if k == 1:
                sent = flat[off[i]:off[j + 1]]
                sent_st = None if st is None else st[off[i]:off[j + 1]]
                split = _split_sentence(sent, rng, vocab, sent_st)
                if split is not None:
                    a, b = sent[:split], sent[split:]
                    if st is not None:
                        a_st, b_st = sent_st[:split], sent_st[split:]
            else:
                a, b = flat[off[i]:cut], flat[cut:off[j + 1]]
                if st is not None:
                    a_st, b_st = st[off[i]:cut], st[cut:off[j + 1]]
            if a is not None and rng.random() < 0.5:
                a, b, label = b, a, 1
                a_st, b_st = b_st, a_st
        else:
            a = flat[off[i]:cut]
            if st is not None:
                a_st = st[off[i]:cut]
            random_next = k == 1 or (mode == "nsp" and rng.random() < 0.5)
            if random_next:
                if random_document is not None:
                    if st is None:
                        b = _random_segment(rng, random_document, target - a.shape[0])
                    else:
                        b, b_st = _random_segment(rng, random_document, target - a.shape[0], with_starts=True)
                    label = 2  # label 1, B from a random document
                    next_i = i + a_end  # put the unused sentences back
                else:
                    a = None
            else:
                b = flat[cut:off[j + 1]]
                if st is not None:
                    b_st = st[cut:off[j + 1]]
                if mode == "official" and rng.random() < 0.5:
                    a, b, label = b, a, 1
                    a_st, b_st = b_st, a_st
        if a is not None and b is not None:
            instances.append(_make_instance(a, b, min(label, 1), rng, params, vocab, doc_index, len(instances),
                                            target, is_short, label == 2, a_st, b_st))
        i = next_i
    return instances


def _make_instance(a: np.ndarray, b: np.ndarray, label: int, rng: np.random.Generator, params: InstanceParams,
                   vocab: VocabInfo, doc_index: int, chunk_index: int, target: int, is_short: bool,
                   random_next: bool = False, a_st: Optional[np.ndarray] = None,
                   b_st: Optional[np.ndarray] = None) -> Instance:
    starts = None
    if a_st is None and b_st is None:
        a, b = truncate_pair(a, b, params.max_num_tokens, rng)
    else:  # a segmenter's word starts travel with the pieces (a random document's B may have none)
        (fa, ea), (fb, eb) = _truncation_cuts(a.shape[0], b.shape[0], params.max_num_tokens, rng)
        a_st = vocab.is_word_start[a] if a_st is None else a_st
        b_st = vocab.is_word_start[b] if b_st is None else b_st
        a, b, a_st, b_st = a[fa:ea], b[fb:eb], a_st[fa:ea], b_st[fb:eb]
        starts = np.concatenate([[True], a_st, [True], b_st, [True]]).astype(bool)
    la, lb = a.shape[0], b.shape[0]
    tokens = np.empty(la + lb + 3, dtype=np.int32)
    tokens[0] = vocab.cls_id
    tokens[1:la + 1] = a
    tokens[la + 1] = vocab.sep_id
    tokens[la + 2:la + 2 + lb] = b
    tokens[-1] = vocab.sep_id
    segment_ids = np.zeros(tokens.shape[0], dtype=np.int8)
    segment_ids[la + 2:] = 1
    m = mask_tokens(tokens, rng, params, vocab, starts)
    return Instance(input_ids=m.masked_tokens, segment_ids=segment_ids, token_boundary=m.token_boundary,
                    masked_lm_positions=m.positions, masked_lm_ids=m.labels, sop_label=label, doc_index=doc_index,
                    chunk_index=chunk_index, target_length=target, is_short_target=is_short,
                    ngram_lengths=m.span_ngrams, ngram_drawn=m.span_ngrams_drawn, mask_kinds=m.kinds,
                    random_next=random_next)
