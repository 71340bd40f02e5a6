"""SQuAD v1.1 / v2.0: reader, sliding-window featurization, n-best decoding and EM/F1.

Alignment. ALBERT normalises text before SentencePiece (whitespace collapse, NFKD with combining
marks dropped, lowercasing) and SentencePiece normalises again (NFKC-like, dropping some invisible
characters), so a piece's place in the context has to be recovered. We do it exactly as the official
code (see "Character alignment" below), so every piece gets the official character span: gold answers
are mapped to pieces (training labels) and predicted spans are cut from the original context
(``context[start:end].strip()``, original case, accents and spacing) as officially. Only contexts
the official code drops as a MISMATCH get offset-based spans instead (kept, not dropped).

Bad answers. An answer whose ``answer_start`` does not point at its ``text`` in the context is a
data error. ``read_squad`` raises :class:`SquadFormatError` naming the article title and question
id by default (``on_bad_answer="error"``); with ``on_bad_answer="skip"`` the question is dropped,
counted, and reported through the optional ``skipped`` list. Scoring functions read the dataset
JSON directly, so a skipped question still counts (it scores 0, as a missing prediction does in
the official v1.1 script).

Scores are percentages, like the official scripts' output.
"""
from __future__ import annotations

import collections
import functools
import json
import os
import re
import string
import unicodedata
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Sequence, Tuple, Union

import numpy as np

from components.text.normalize import preprocess_text

__all__ = [
    "SquadExample",
    "FeatureMeta",
    "SquadFormatError",
    "load_squad_json",
    "read_squad",
    "normalize_with_offsets",
    "ContextAlignment",
    "align_contexts",
    "piece_char_spans",
    "convert_squad_examples",
    "postprocess_squad",
    "apply_null_threshold",
    "best_null_threshold",
    "normalize_answer",
    "exact_match",
    "f1_score",
    "squad_v1_metrics",
    "squad_v2_metrics",
    "write_squad_predictions",
    "write_null_odds",
]

SPIECE_UNDERLINE = "\u2581"


class SquadFormatError(ValueError):
    """The SQuAD JSON is malformed (e.g. an answer_start that does not point at the answer)."""


@dataclass
class SquadExample:
    qid: str
    title: str
    question: str
    context: str
    answers: List[Dict] = field(default_factory=list)  # [{"text", "answer_start"}] as in the file
    is_impossible: bool = False

    @property
    def answer_text(self) -> Optional[str]:
        return self.answers[0]["text"] if self.answers else None

    @property
    def start_char(self) -> Optional[int]:
        return int(self.answers[0]["answer_start"]) if self.answers else None

    @property
    def end_char(self) -> Optional[int]:  # exclusive
        return self.start_char + len(self.answer_text) if self.answers else None


@dataclass
class FeatureMeta:
    """How one window (feature row) maps back to its example."""
    example_index: int
    qid: str
    window_index: int
    doc_offset: int            # feature position of the first context piece (len(query) + 2)
    doc_start: int             # index (in the example's context pieces) of the window's first piece
    doc_length: int            # number of context pieces in the window
    max_context: np.ndarray    # bool [doc_length]: this window is the best context for the piece
    char_spans: np.ndarray     # int32 [doc_length, 2]: original-context [start, end) of each piece (official)


# ---------------------------------------------------------------------------------------------
# Reading


def load_squad_json(dataset: Union[str, Dict, List]) -> List[Dict]:
    """Path, parsed JSON ({"version", "data"}) or the "data" list → list of articles."""
    if isinstance(dataset, (str, os.PathLike)):
        with open(dataset, encoding="utf-8") as f:
            dataset = json.load(f)
    if isinstance(dataset, dict):
        if "data" not in dataset:
            raise SquadFormatError("SQuAD JSON has no 'data' field")
        dataset = dataset["data"]
    return dataset


def read_squad(dataset: Union[str, Dict, List], on_bad_answer: str = "error",
               skipped: Optional[list] = None) -> List[SquadExample]:
    """SQuAD v1.1 / v2.0 JSON → examples (v2's ``is_impossible``; v1.1 questions are answerable).

    Every answer (all gold answers, not only the first) must satisfy
    ``context[answer_start:answer_start + len(text)] == text``. See the module docstring for
    ``on_bad_answer`` ("error" | "skip"); skipped questions are appended to ``skipped`` as
    ``(title, qid, reason)``.
    """
    if on_bad_answer not in ("error", "skip"):
        raise ValueError(f"on_bad_answer must be 'error' or 'skip', got {on_bad_answer!r}")
    articles = load_squad_json(dataset)
    examples: List[SquadExample] = []
    for a_i, article in enumerate(articles):
        title = article.get("title", f"<article {a_i}>")
        for paragraph in article.get("paragraphs", []):
            context = paragraph["context"]
            for qa in paragraph.get("qas", []):
                qid = qa.get("id")
                if qid is None or "question" not in qa:
                    raise SquadFormatError(f"article {title!r}: question without 'id' or 'question': {qa!r}")
                is_impossible = bool(qa.get("is_impossible", False))
                answers = list(qa.get("answers", []))
                reason = None
                if is_impossible:
                    answers = []  # v2 puts plausible answers in 'plausible_answers'; no gold span
                elif not answers:
                    reason = "answerable question without answers"
                for ans in answers:
                    if reason:
                        break
                    if "text" not in ans or "answer_start" not in ans:
                        reason = f"answer without 'text'/'answer_start': {ans!r}"
                        break
                    start, text = int(ans["answer_start"]), ans["text"]
                    if start < 0 or context[start:start + len(text)] != text:
                        found = context[max(start, 0):max(start, 0) + len(text)]
                        reason = (f"answer_start {start} does not point at answer {text!r} "
                                  f"(context has {found!r} there)")
                if reason:
                    if on_bad_answer == "error":
                        raise SquadFormatError(f"article {title!r}, question id {qid}: {reason}")
                    if skipped is not None:
                        skipped.append((title, qid, reason))
                    continue
                examples.append(SquadExample(qid, title, qa["question"], context, answers, is_impossible))
    return examples


# ---------------------------------------------------------------------------------------------
# Character alignment
#
# The official alignment (``squad_utils.convert_examples_to_features``): the pieces are concatenated
# with "▁" read as a space ("chartok" text); a banded longest-common-subsequence table matches it
# character by character against the original context, each original character compared after
# ``preprocess_text`` on that character alone; every piece's first/last chartok character is then
# mapped to the original through ``_convert_index``, which places unmatched characters between their
# matched neighbours. We compute the same table (for many contexts at once, in NumPy), follow the
# same back-pointers and apply the same ``_convert_index``, so every piece gets the official span
# (the official Python loop visits ~19 M table cells on the v1.1 dev set; batched, this takes seconds).
# A context the official code drops ("MISMATCH DETECTED": fewer than 80 % of its characters
# matched) is kept here with spans carried through normalisation and SentencePiece's byte offsets.

_NONE = -1                                    # the official index lists' None
_UP, _LEFT, _DIAG, _NO_ENTRY = 0, 1, 2, 3     # the official back-pointers g; 3: no entry in g
_ALIGN_CELLS = 1 << 23                        # table cells (one byte each) per NumPy batch
_CONTEXT_BLOCK = 512                          # contexts aligned per call by convert_squad_examples


@functools.lru_cache(maxsize=65536)
def _char_code(ch: str, lower: bool) -> int:
    """What the official match compares a context character by: ``preprocess_text`` of the character
    alone (no whitespace removal); a result that is not exactly one character never matches."""
    out = preprocess_text(ch, lower=lower, remove_space=False)
    return ord(out) if len(out) == 1 else -3   # -3: equal to no chartok code (>= 0) nor padding (-1, -2)


def _context_codes(text: str, lower: bool) -> np.ndarray:
    if text.isascii():  # NFKD is the identity and nothing is combining
        return np.frombuffer((text.lower() if lower else text).encode("ascii"), np.uint8).astype(np.int32)
    return np.fromiter((_char_code(c, lower) for c in text), np.int32, len(text))


def _lcs_tables(a_list: List[np.ndarray], b_list: List[np.ndarray], half_width: np.ndarray
                ) -> Tuple[np.ndarray, np.ndarray]:
    """The official ``_lcs_match(max_dist)`` for several (context, chartok) pairs at once.

    Row i of a pair covers columns ``j = i - w + k`` for ``k < 2w`` (w = max_dist), the official band;
    cells outside it read as 0, as in the official zero-filled table. Within a row,
    ``f[i, j] = max(f[i-1, j], f[i, j-1], f[i-1, j-1] + 1 if match)`` is a running maximum along j,
    and the back-pointer follows the official order of comparisons (up; left if strictly larger;
    diagonal if strictly larger than both). Returns ``f[n-1, m-1]`` per pair and the back-pointers as
    ``moves[pair, k, i]`` (one diagonal per k). Cells past the context's or the chartok text's end hold
    values no valid cell reads (nor the walk back, which starts at (n-1, m-1) and only decreases)."""
    count = len(a_list)
    n = np.array([len(x) for x in a_list], np.int64)
    m = np.array([len(x) for x in b_list], np.int64)
    w = half_width.astype(np.int64)
    width, n_max = int(2 * w.max()), int(n.max())
    a = np.full((count, n_max), -2, np.int32)
    b = np.full((count, n_max + width), -1, np.int32)   # b[p, i + k] is chartok[j]: j + w = i + k
    for p in range(count):
        a[p, :n[p]] = a_list[p]
        b[p, w[p]:w[p] + min(m[p], n_max + width - w[p])] = b_list[p][:n_max + width - w[p]]
    moves = np.empty((count, width, n_max), np.int8)
    prev = np.zeros((count, width + 1), np.int32)   # row i-1; the extra column is the band's outside
    left = np.zeros((count, width), np.int32)
    score = np.zeros(count, np.int64)
    in_band = (np.arange(width)[None, :] < 2 * w[:, None]).astype(np.int32)
    at_end = m - n + w                              # k of (n-1, m-1)
    for i in range(n_max):
        up, diag = prev[:, 1:], prev[:, :-1]
        take = (diag + 1) * (b[:, i:i + width] == a[:, i:i + 1])
        cur = np.maximum.accumulate(np.maximum(up, take), axis=1)
        cur *= in_band
        left[:, 1:] = cur[:, :-1]
        move = np.where(take > np.maximum(up, left), _DIAG, np.where(left > up, _LEFT, _UP if i else _NO_ENTRY))
        moves[:, :, i] = move
        prev[:, :width] = cur
        ends = np.flatnonzero(n == i + 1)
        score[ends] = cur[ends, at_end[ends]]
    return score, moves


def _backtrack(moves: np.ndarray, n: int, m: int, w: int) -> Tuple[np.ndarray, np.ndarray]:
    """The official walk back from (n-1, m-1): (orig_to_chartok, chartok_to_orig), -1 for None.
    ``moves[k, i]`` as :func:`_lcs_tables` gives them; a run of diagonal moves is taken in one step."""
    flat = moves.tobytes()
    not_diag = (moves != _DIAG).tobytes()
    orig_to_tok, tok_to_orig = np.full(n, _NONE, np.int64), np.full(m, _NONE, np.int64)
    i, j = n - 1, m - 1
    while i >= 0 and j >= 0:
        k = j - i + w
        if not 0 <= k < 2 * w:
            break
        move = flat[k * n + i]
        if move == _DIAG:
            # the run reaches down to just after the previous non-diagonal move on this diagonal, or j = 0
            first = max(not_diag.rfind(1, k * n, k * n + i) - k * n + 1, 0, i - j)
            orig_to_tok[first:i + 1] = np.arange(first + j - i, j + 1)
            tok_to_orig[first + j - i:j + 1] = np.arange(first, i + 1)
            i, j = first - 1, first + j - i - 1
        elif move == _LEFT:
            j -= 1
        elif move == _UP:
            i -= 1
        else:
            break
    return orig_to_tok, tok_to_orig


def _lcs_alignments(a_list: List[np.ndarray], b_list: List[np.ndarray]
                    ) -> List[Optional[Tuple[np.ndarray, np.ndarray]]]:
    """Official character matches per pair (two passes, the second with a doubled band where the first
    matched at most 80 % of the context), None where the official code reports a MISMATCH."""
    count = len(a_list)
    n = np.array([len(x) for x in a_list], np.int64)
    m = np.array([len(x) for x in b_list], np.int64)
    w = np.abs(n - m) + 5
    out: List[Optional[Tuple[np.ndarray, np.ndarray]]] = [None] * count
    todo = [p for p in range(count) if n[p] and m[p]]
    for last_pass in (False, True):
        retry = []
        todo.sort(key=lambda p: (n[p], w[p]))
        at = 0
        while at < len(todo):  # batches of similar lengths (sorted), at most _ALIGN_CELLS table cells each
            batch, widest = [todo[at]], w[todo[at]]
            at += 1
            while at < len(todo) and (len(batch) + 1) * n[todo[at]] * 2 * max(widest, w[todo[at]]) \
                    <= _ALIGN_CELLS:
                batch.append(todo[at])
                widest = max(widest, w[todo[at]])
                at += 1
            score, moves = _lcs_tables([a_list[p] for p in batch], [b_list[p] for p in batch], w[batch])
            for q, p in enumerate(batch):
                if score[q] <= 0.8 * n[p] and not last_pass:
                    retry.append(p)
                    continue
                orig_to_tok, tok_to_orig = _backtrack(moves[q, :2 * w[p], :n[p]], int(n[p]), int(m[p]),
                                                      int(w[p]))
                if score[q] >= 0.8 * n[p] and (orig_to_tok >= 0).any():
                    out[p] = (orig_to_tok, tok_to_orig)
        todo = retry
        w[retry] *= 2
    return out


def _convert_index(index: np.ndarray, pos: Sequence[int], m: Optional[int], is_start: bool) -> np.ndarray:
    """The official ``_convert_index`` at many positions: ``index[pos]`` where matched, otherwise a
    value placed between the nearest matched neighbours (0 / ``m - 1`` bound the ends when given)."""
    size = len(index)
    at = np.arange(size)
    matched = index >= 0
    front = np.maximum.accumulate(np.where(matched, at, -1))[pos]
    rear = np.minimum.accumulate(np.where(matched, at, size)[::-1])[::-1][pos]
    f = np.where(front >= 0, index[np.maximum(front, 0)], _NONE)
    r = np.where(rear < size, index[np.minimum(rear, size - 1)], _NONE)
    if is_start:
        no_front = np.where(r >= 1, 0, r)
        no_rear = np.where(f < m - 1, f + 1, f) if m is not None else f
        between = np.where(r > f + 1, f + 1, r)
    else:
        no_front = np.where(r >= 1, r - 1, r)
        no_rear = np.where(f < m - 1, m - 1, f) if m is not None else f
        between = np.where(r > f + 1, r - 1, f)
    return np.where(index[pos] >= 0, index[pos], np.where(f < 0, no_front, np.where(r < 0, no_rear, between)))


def _normalize_with_spans(text: str, lower: bool = True) -> Tuple[str, List[int], List[int]]:
    """ALBERT's ``preprocess_text`` plus, per output character, the [start, end) of the original
    characters it came from."""
    # 1. strip + collapse whitespace runs to one space (mapped to the run's first character).
    chars: List[Tuple[str, int, int]] = []
    pending_space = -1
    for i, c in enumerate(text):
        if c.isspace():
            if pending_space < 0:
                pending_space = i
            continue
        if pending_space >= 0 and chars:
            chars.append((" ", pending_space, pending_space + 1))
        pending_space = -1
        chars.append((c, i, i + 1))
    # 2. NFKD per character, drop combining marks. (Whole-string NFKD only differs by reordering
    #    combining marks, which are all dropped.)
    out = []
    for c, b, e in chars:
        for d in unicodedata.normalize("NFKD", c):
            if not unicodedata.combining(d):
                out.append((d, b, e))
    chars = out
    # 3. lowercase: whole-string when lengths agree (keeps context rules such as final sigma),
    #    otherwise per character (a few characters lowercase to two).
    if lower:
        s = "".join(c for c, _, _ in chars)
        low = s.lower()
        if len(low) == len(s):
            chars = [(lc, b, e) for lc, (_, b, e) in zip(low, chars)]
        else:
            chars = [(lc, b, e) for c, b, e in chars for lc in c.lower()]
    return "".join(c for c, _, _ in chars), [b for _, b, _ in chars], [e for _, _, e in chars]


def normalize_with_offsets(text: str, lower: bool = True) -> Tuple[str, List[int]]:
    """ALBERT's ``preprocess_text`` (components/text/normalize.py), plus for every output
    character the index of the (first) original character it came from."""
    norm, starts, _ = _normalize_with_spans(text, lower)
    return norm, starts


def _split_digit_comma(piece: str, sp) -> List[str]:
    """The official tokenizer's re-encoding of "▁1990," → ["▁1990", ","]."""
    sub = sp.encode(piece[:-1].replace(SPIECE_UNDERLINE, ""), out_type=str)
    if piece[0] != SPIECE_UNDERLINE and sub and sub[0][0] == SPIECE_UNDERLINE:
        if len(sub[0]) == 1:
            sub = sub[1:]
        else:
            sub[0] = sub[0][1:]
    return list(sub) + [piece[-1]]


def _encode_proto(sp, text: str):
    """SentencePiece pieces with byte offsets (``.pieces[i].piece/.begin/.end``), across versions."""
    try:
        return sp.encode(text, return_type="proto")      # sentencepiece >= 0.2.1
    except (TypeError, ValueError):
        return sp.encode(text, out_type="immutable_proto")  # 0.1.99 / 0.2.0


def _offset_piece_spans(text: str, tokenizer) -> Tuple[List[str], np.ndarray]:
    """The fallback for a MISMATCH context: pieces and ``[start, end)`` spans carried through normalisation
    and SentencePiece's byte offsets (leading whitespace excluded; a piece with no visible characters
    gets an empty span at its position)."""
    lower = getattr(tokenizer, "do_lower_case", True)
    norm, orig_start, orig_end = _normalize_with_spans(text, lower=lower)
    expected = tokenizer.normalize(text) if hasattr(tokenizer, "normalize") else norm
    if norm != expected:  # only if normalize.py changes; fall back to a proportional mapping
        norm = expected
        scale = len(text) / max(len(norm), 1)
        orig_start = [min(int(k * scale), max(len(text) - 1, 0)) for k in range(len(norm))]
        orig_end = [min(int((k + 1) * scale) + 1, len(text)) for k in range(len(norm))]
    proto = _encode_proto(tokenizer.sp, norm)
    data = norm.encode("utf-8")
    byte_to_char = np.zeros(len(data) + 1, dtype=np.int64)
    pos = 0
    for ci, ch in enumerate(norm):
        nb = len(ch.encode("utf-8"))
        byte_to_char[pos:pos + nb] = ci
        pos += nb
    byte_to_char[len(data)] = len(norm)

    pieces: List[str] = []
    norm_spans: List[Tuple[int, int]] = []
    for p in proto.pieces:
        b, e = int(byte_to_char[p.begin]), int(byte_to_char[p.end])
        piece = p.piece
        if len(piece) > 1 and piece[-1] == "," and piece[-2].isdigit():
            subs = _split_digit_comma(piece, tokenizer.sp)
            # Sub-pieces share the span left to right by their visible lengths; "," takes the last char.
            comma_pos = e - 1
            cursor = b
            while cursor < comma_pos and norm[cursor] == " ":
                cursor += 1
            for s in subs[:-1]:
                n_vis = len(s.replace(SPIECE_UNDERLINE, ""))
                end = min(cursor + n_vis, comma_pos)
                norm_spans.append((b if s is subs[0] else cursor, end))
                pieces.append(s)
                cursor = end
            pieces.append(subs[-1])
            norm_spans.append((comma_pos, e))
        else:
            pieces.append(piece)
            norm_spans.append((b, e))

    spans = np.zeros((len(pieces), 2), dtype=np.int32)
    n_orig = len(text)
    for k, (b, e) in enumerate(norm_spans):
        while b < e and norm[b] == " ":
            b += 1
        if b < e:
            spans[k] = (orig_start[b], orig_end[e - 1])
        else:  # whitespace-only or empty-surface piece
            at = orig_start[b] if b < len(norm) else n_orig
            spans[k] = (at, at)
    # A character expanded into several normalised characters (e.g. "ﬁ" → "fi") may be split
    # across pieces; make spans monotone so decoding never goes backwards.
    for k in range(1, len(spans)):
        if spans[k, 0] < spans[k - 1, 0]:
            spans[k, 0] = spans[k - 1, 0]
        if spans[k, 1] < spans[k, 0]:
            spans[k, 1] = spans[k, 0]
    return pieces, spans


def _char_to_piece(n_chars: int, spans: np.ndarray) -> np.ndarray:
    """Original character → index of the piece covering it (-1 for whitespace between pieces)."""
    out = np.full(n_chars, -1, dtype=np.int64)
    for k in range(len(spans) - 1, -1, -1):  # earlier pieces win on overlap
        s, e = spans[k]
        if e > s:
            out[s:e] = k
    return out


def _answer_piece_span(spans: np.ndarray, start_char: int, end_char: int) -> Tuple[int, int]:
    c2p = _char_to_piece(max(end_char, int(spans[:, 1].max(initial=0))), spans)
    s, e = start_char, end_char - 1
    while s <= e and c2p[s] < 0:
        s += 1
    while e >= s and c2p[e] < 0:
        e -= 1
    if s > e:
        return -1, -1
    return int(c2p[s]), int(c2p[e])


@dataclass
class ContextAlignment:
    """A context's pieces (exactly ``tokenizer.tokenize(context)``) and where each sits in the context."""
    pieces: List[str]
    spans: np.ndarray                         # int32 [P, 2]: context[start:end] is the piece's text
    orig_to_chartok: Optional[np.ndarray]     # official character matches; None: MISMATCH fallback
    chartok_to_piece: Optional[np.ndarray]

    @property
    def official(self) -> bool:
        """False where the official code would have dropped the context (MISMATCH)."""
        return self.orig_to_chartok is not None

    def answer_pieces(self, start_char: int, end_char: int) -> Tuple[int, int]:
        """First and last piece of the answer ``context[start_char:end_char]`` (the official
        ``tok_start_position`` / ``tok_end_position``); (-1, -1) if no piece covers it (fallback only)."""
        if self.orig_to_chartok is None:
            return _answer_piece_span(self.spans, start_char, end_char)
        s = _convert_index(self.orig_to_chartok, [start_char], None, is_start=True)[0]
        e = _convert_index(self.orig_to_chartok, [end_char - 1], None, is_start=False)[0]
        return int(self.chartok_to_piece[s]), int(self.chartok_to_piece[e])


def align_contexts(texts: Sequence[str], tokenizer) -> List[ContextAlignment]:
    """:class:`ContextAlignment` of each text, the official way (see above); batched, so aligning many
    contexts in one call is much faster than one by one."""
    lower = getattr(tokenizer, "do_lower_case", True)
    pieces = [list(tokenizer.tokenize(t)) for t in texts]
    chartok = ["".join(p).replace(SPIECE_UNDERLINE, " ") for p in pieces]
    matches = _lcs_alignments([_context_codes(t, lower) for t in texts],
                              [np.frombuffer(c.encode("utf-32-le"), np.uint32).astype(np.int32) for c in chartok])
    out = []
    for text, text_pieces, match in zip(texts, pieces, matches):
        if match is None:
            fallback_pieces, spans = _offset_piece_spans(text, tokenizer)
            assert fallback_pieces == text_pieces
            out.append(ContextAlignment(text_pieces, spans, None, None))
            continue
        orig_to_tok, tok_to_orig = match
        lengths = np.array([len(p) for p in text_pieces], np.int64)
        first = np.cumsum(lengths) - lengths
        spans = np.stack([_convert_index(tok_to_orig, first, len(text), is_start=True),
                          _convert_index(tok_to_orig, first + lengths - 1, len(text), is_start=False) + 1], axis=1)
        out.append(ContextAlignment(text_pieces, spans.astype(np.int32), orig_to_tok,
                                    np.repeat(np.arange(len(text_pieces)), lengths)))
    return out


def piece_char_spans(text: str, tokenizer) -> Tuple[List[str], np.ndarray]:
    """Pieces of ``text`` (exactly ``tokenizer.tokenize(text)``) and, per piece, the ``[start, end)`` of the
    original characters it covers: the official ``tok_start_to_orig_index`` / ``tok_end_to_orig_index``
    (+ 1), so ``text[start:end].strip()`` is the official text of a span starting and ending there."""
    alignment = align_contexts([text], tokenizer)[0]
    return alignment.pieces, alignment.spans


# ---------------------------------------------------------------------------------------------
# Featurization


def _windows(n_doc: int, max_tokens_for_doc: int, doc_stride: int) -> List[Tuple[int, int]]:
    spans = []
    start = 0
    while start < n_doc or (n_doc == 0 and not spans):
        length = min(n_doc - start, max_tokens_for_doc)
        spans.append((start, length))
        if start + length >= n_doc:
            break
        start += min(length, doc_stride)
    return spans


def _max_context_flags(windows: List[Tuple[int, int]], w: int) -> np.ndarray:
    start, length = windows[w]
    flags = np.zeros(length, dtype=bool)
    for j in range(length):
        pos = start + j
        best_score, best_w = None, None
        for wi, (s, l) in enumerate(windows):
            if pos < s or pos >= s + l:
                continue
            score = min(pos - s, s + l - 1 - pos) + 0.01 * l
            if best_score is None or score > best_score:
                best_score, best_w = score, wi
        flags[j] = best_w == w
    return flags


def convert_squad_examples(examples: Sequence[SquadExample], tokenizer, max_seq_length: int = 384,
                           doc_stride: int = 128, max_query_length: int = 64, is_training: bool = False
                           ) -> Tuple[Dict[str, np.ndarray], List[FeatureMeta]]:
    """``[CLS] question [SEP] context-window [SEP]`` rows, one per sliding window.

    Returns int32 arrays input_ids/input_mask/segment_ids/p_mask [N, L] and start_positions,
    end_positions, is_impossible [N], plus one :class:`FeatureMeta` per row. ``p_mask`` is the official
    v2 mask of positions that cannot hold an answer: 1 on the question, both ``[SEP]`` and padding, 0 on
    ``[CLS]`` (the no-answer position) and the context. Training rows whose
    window does not contain the answer (and rows of unanswerable questions) point at [CLS]
    (start = end = 0) and have is_impossible = 1; answerable rows have the answer's first/last
    piece positions. Outside training the positions are 0 and is_impossible is the example's flag.
    """
    rows_ids, rows_seg, starts, ends, impossible = [], [], [], [], []
    metas: List[FeatureMeta] = []
    # Questions share paragraphs: contexts are aligned in blocks of _CONTEXT_BLOCK (batched), in file order.
    contexts = list(dict.fromkeys(ex.context for ex in examples))
    block_of = {c: k // _CONTEXT_BLOCK for k, c in enumerate(contexts)}
    cache: Dict[str, Tuple[List[int], ContextAlignment]] = {}
    for ex_i, ex in enumerate(examples):
        q_ids = list(tokenizer.encode(ex.question))[:max_query_length]
        if ex.context not in cache:
            if len(cache) >= 4 * _CONTEXT_BLOCK:
                cache.clear()
            block = contexts[block_of[ex.context] * _CONTEXT_BLOCK:][:_CONTEXT_BLOCK]
            cache.update((c, ([tokenizer.sp.piece_to_id(p) for p in a.pieces], a))
                         for c, a in zip(block, align_contexts(block, tokenizer)))
        doc_ids, alignment = cache[ex.context]
        spans = alignment.spans
        max_tokens_for_doc = max_seq_length - len(q_ids) - 3
        if max_tokens_for_doc <= 0:
            raise ValueError(f"max_seq_length {max_seq_length} leaves no room for the context after a "
                             f"{len(q_ids)}-piece question (question id {ex.qid})")
        tok_start = tok_end = -1
        if is_training and not ex.is_impossible:
            tok_start, tok_end = alignment.answer_pieces(ex.start_char, ex.end_char)
        windows = _windows(len(doc_ids), max_tokens_for_doc, doc_stride)
        for w, (d_start, d_len) in enumerate(windows):
            ids = [tokenizer.cls_id] + q_ids + [tokenizer.sep_id]
            seg = [0] * len(ids)
            doc_offset = len(ids)
            ids += doc_ids[d_start:d_start + d_len] + [tokenizer.sep_id]
            seg += [1] * (d_len + 1)
            start_pos = end_pos = 0
            row_impossible = int(ex.is_impossible)
            if is_training:
                if ex.is_impossible or tok_start < 0 or tok_start < d_start or tok_end >= d_start + d_len:
                    row_impossible = 1
                else:
                    start_pos = tok_start - d_start + doc_offset
                    end_pos = tok_end - d_start + doc_offset
            rows_ids.append(ids)
            rows_seg.append(seg)
            starts.append(start_pos)
            ends.append(end_pos)
            impossible.append(row_impossible)
            metas.append(FeatureMeta(
                example_index=ex_i, qid=ex.qid, window_index=w, doc_offset=doc_offset,
                doc_start=d_start, doc_length=d_len, max_context=_max_context_flags(windows, w),
                char_spans=spans[d_start:d_start + d_len].copy()))
    n = len(rows_ids)
    input_ids = np.zeros((n, max_seq_length), dtype=np.int32)
    input_mask = np.zeros((n, max_seq_length), dtype=np.int32)
    segment_ids = np.zeros((n, max_seq_length), dtype=np.int32)
    p_mask = np.ones((n, max_seq_length), dtype=np.int32)
    for i, (ids, seg, meta) in enumerate(zip(rows_ids, rows_seg, metas)):
        input_ids[i, :len(ids)] = ids
        input_mask[i, :len(ids)] = 1
        segment_ids[i, :len(seg)] = seg
        p_mask[i, 0] = 0
        p_mask[i, meta.doc_offset:meta.doc_offset + meta.doc_length] = 0
    arrays = {
        "input_ids": input_ids,
        "input_mask": input_mask,
        "segment_ids": segment_ids,
        "p_mask": p_mask,
        "start_positions": np.asarray(starts, dtype=np.int32).reshape(n),
        "end_positions": np.asarray(ends, dtype=np.int32).reshape(n),
        "is_impossible": np.asarray(impossible, dtype=np.int32).reshape(n),
    }
    return arrays, metas


# ---------------------------------------------------------------------------------------------
# Decoding

_NO_CANDIDATE_SCORE = -1e9  # "best non-null score" when no valid span exists (keeps JSON finite)


def postprocess_squad(examples: Sequence[SquadExample], metas: Sequence[FeatureMeta], start_logits,
                      end_logits, n_best_size: int = 20, max_answer_length: int = 30,
                      version_2: bool = False, null_threshold: float = 0.0
                      ) -> Tuple[Dict[str, str], Dict[str, float]]:
    """Best answer text per question, and its null odds.

    The official v1 decoding (``accumulate_predictions_v1`` / ``write_predictions_v1``): per window, s among
    the row's ``n_best_size`` highest start logits and e among its highest end logits (over *all* positions,
    so question or padding positions can take slots and are then dropped), kept when both are context
    pieces of the window, s <= e, e - s + 1 <= ``max_answer_length`` and the window is the max-context
    window of s; score = start[s] + end[e], ties broken by window, then start rank, then end rank. The no-answer score of a question is the minimum over its windows of
    start[0] + end[0]; ``null_odds = null_score - best_non_null_score``. With ``version_2`` the
    prediction is "" when ``null_odds > null_threshold``; otherwise it is always the best span
    (what :func:`best_null_threshold` needs).
    """
    start_logits = np.asarray(start_logits, dtype=np.float64)
    end_logits = np.asarray(end_logits, dtype=np.float64)
    if start_logits.shape != end_logits.shape or start_logits.shape[0] != len(metas):
        raise ValueError(f"logit shapes {start_logits.shape}/{end_logits.shape} do not match "
                         f"{len(metas)} features")
    by_example: Dict[int, List[int]] = collections.defaultdict(list)
    for f_i, meta in enumerate(metas):
        by_example[meta.example_index].append(f_i)

    predictions: Dict[str, str] = {}
    null_odds: Dict[str, float] = {}
    for ex_i, ex in enumerate(examples):
        best_score, best_span = _NO_CANDIDATE_SCORE, None
        null_score = None
        for f_i in by_example.get(ex_i, []):
            meta = metas[f_i]
            s_log, e_log = start_logits[f_i], end_logits[f_i]
            feature_null = s_log[0] + e_log[0]
            null_score = feature_null if null_score is None else min(null_score, feature_null)
            lo, hi = meta.doc_offset, meta.doc_offset + meta.doc_length
            if hi > s_log.shape[0]:
                raise ValueError(f"window of {meta.qid} extends past the logits' length {s_log.shape[0]}")
            if meta.doc_length == 0:
                continue
            top_s = [int(i) - lo for i in np.argsort(-s_log, kind="stable")[:n_best_size] if lo <= i < hi]
            top_e = [int(i) - lo for i in np.argsort(-e_log, kind="stable")[:n_best_size] if lo <= i < hi]
            doc_s, doc_e = s_log[lo:hi], e_log[lo:hi]
            for s in top_s:
                if not meta.max_context[s]:
                    continue
                for e in top_e:
                    if e < s or e - s + 1 > max_answer_length:
                        continue
                    score = doc_s[s] + doc_e[e]
                    if score > best_score:
                        best_score = score
                        best_span = (int(meta.char_spans[s, 0]), int(meta.char_spans[e, 1]))
        if null_score is None:
            null_score = 0.0
        text = ex.context[best_span[0]:best_span[1]].strip() if best_span else ""
        odds = float(null_score - best_score)
        null_odds[ex.qid] = odds
        predictions[ex.qid] = "" if (version_2 and odds > null_threshold) else text
    return predictions, null_odds


def apply_null_threshold(predictions: Dict[str, str], null_odds: Dict[str, float],
                         threshold: float) -> Dict[str, str]:
    """v2 predictions: "" where ``null_odds > threshold``, else the span text."""
    return {q: ("" if null_odds.get(q, float("-inf")) > threshold else t) for q, t in predictions.items()}


# ---------------------------------------------------------------------------------------------
# Metrics (the official definitions)

_PUNCT = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)


def normalize_answer(s: str) -> str:
    """Lowercase, drop ASCII punctuation, replace articles a/an/the by a space, collapse spaces."""
    s = s.lower()
    s = "".join(ch for ch in s if ch not in _PUNCT)
    s = _ARTICLES.sub(" ", s)
    return " ".join(s.split())


def exact_match(prediction: str, gold: str) -> int:
    return int(normalize_answer(prediction) == normalize_answer(gold))


def f1_score(prediction: str, gold: str, empty_matches_empty: bool = True) -> float:
    """Token-overlap F1 of normalised answers. With ``empty_matches_empty`` (v2.0 rule) two empty
    answers score 1 and an empty vs non-empty pair 0; v1.1 scores any empty side 0."""
    p_toks = normalize_answer(prediction).split() if prediction else []
    g_toks = normalize_answer(gold).split() if gold else []
    if empty_matches_empty and (not p_toks or not g_toks):
        return float(p_toks == g_toks)
    common = collections.Counter(p_toks) & collections.Counter(g_toks)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision, recall = same / len(p_toks), same / len(g_toks)
    return 2 * precision * recall / (precision + recall)


def _iter_qas(articles: List[Dict]) -> Iterable[Dict]:
    for article in articles:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                yield qa


def squad_v1_metrics(dataset, predictions: Dict[str, str]) -> Dict[str, float]:
    """Official v1.1 EM/F1 (max over gold answers; unanswered questions score 0)."""
    articles = load_squad_json(dataset)
    em = f1 = 0.0
    total = missing = 0
    for qa in _iter_qas(articles):
        total += 1
        if qa["id"] not in predictions:
            missing += 1
            continue
        pred = predictions[qa["id"]]
        golds = [a["text"] for a in qa["answers"]]
        if not golds:
            continue  # an unanswerable (v2) question has no v1.1 gold answer: 0
        em += max(exact_match(pred, g) for g in golds)
        f1 += max(f1_score(pred, g, empty_matches_empty=False) for g in golds)
    if total == 0:
        return {"exact_match": float("nan"), "f1": float("nan"), "total": 0, "missing": 0}
    return {"exact_match": 100.0 * em / total, "f1": 100.0 * f1 / total, "total": total, "missing": missing}


def _v2_raw_scores(articles, predictions):
    has_ans: Dict[str, bool] = {}
    exact: Dict[str, float] = {}
    f1: Dict[str, float] = {}
    for qa in _iter_qas(articles):
        qid = qa["id"]
        has_ans[qid] = bool(qa["answers"])
        golds = [a["text"] for a in qa["answers"] if normalize_answer(a["text"])] or [""]
        if qid not in predictions:
            continue
        pred = predictions[qid]
        exact[qid] = max(exact_match(pred, g) for g in golds)
        f1[qid] = max(f1_score(pred, g) for g in golds)
    return has_ans, exact, f1


def _best_threshold(predictions, scores, na_probs, has_ans) -> Tuple[float, float]:
    """Sweep thresholds in increasing na-prob order (the official ``find_best_thresh``)."""
    score = best = float(sum(1 for v in has_ans.values() if not v))
    best_thresh = 0.0
    for qid in sorted(na_probs, key=lambda q: na_probs[q]):
        if qid not in scores:
            continue
        if has_ans[qid]:
            diff = scores[qid]
        else:
            diff = -1 if predictions[qid] else 0
        score += diff
        if score > best:
            best, best_thresh = score, na_probs[qid]
    return 100.0 * best / max(len(scores), 1), float(best_thresh)


def squad_v2_metrics(dataset, predictions: Dict[str, str], null_odds: Optional[Dict[str, float]] = None,
                     null_threshold: float = 1.0) -> Dict[str, float]:
    """Official v2.0 metrics: exact/f1/total, HasAns_* and NoAns_* splits and, when ``null_odds``
    (the na-prob file) is given, best_exact/best_f1 and their thresholds. A question whose null
    odds exceed ``null_threshold`` (the official ``--na-prob-thresh``, default 1.0) counts as
    predicted unanswerable. Missing predictions are left out of every total (as officially)."""
    articles = load_squad_json(dataset)
    has_ans, exact_raw, f1_raw = _v2_raw_scores(articles, predictions)
    na = null_odds if null_odds is not None else {q: 0.0 for q in predictions}

    def thresholded(raw):
        return {q: (float(not has_ans[q]) if na[q] > null_threshold else s) for q, s in raw.items()}

    exact_t, f1_t = thresholded(exact_raw), thresholded(f1_raw)

    def block(qids):
        qids = [q for q in qids if q in exact_t]
        n = len(qids)
        if n == 0:
            return {"exact": float("nan"), "f1": float("nan"), "total": 0}
        return {"exact": 100.0 * sum(exact_t[q] for q in qids) / n,
                "f1": 100.0 * sum(f1_t[q] for q in qids) / n, "total": n}

    out: Dict[str, float] = dict(block(list(exact_t)))
    has_qids = [q for q, v in has_ans.items() if v]
    no_qids = [q for q, v in has_ans.items() if not v]
    if has_qids:
        out.update({f"HasAns_{k}": v for k, v in block(has_qids).items()})
    if no_qids:
        out.update({f"NoAns_{k}": v for k, v in block(no_qids).items()})
    if null_odds is not None:
        out["best_exact"], out["best_exact_thresh"] = _best_threshold(predictions, exact_raw, na, has_ans)
        out["best_f1"], out["best_f1_thresh"] = _best_threshold(predictions, f1_raw, na, has_ans)
    missing = sum(1 for q in has_ans if q not in predictions)
    if missing:
        out["missing"] = missing
    return out


def best_null_threshold(dataset, predictions: Dict[str, str], null_odds: Dict[str, float]
                        ) -> Tuple[float, float]:
    """(threshold, best F1) over the dev set: answer "" when ``null_odds > threshold``.

    ``predictions`` must be the best *non-null* spans (``postprocess_squad(..., version_2=False)``).
    """
    articles = load_squad_json(dataset)
    has_ans, _, f1_raw = _v2_raw_scores(articles, predictions)
    best_f1, thresh = _best_threshold(predictions, f1_raw, null_odds, has_ans)
    return thresh, best_f1


# ---------------------------------------------------------------------------------------------
# Files


def write_squad_predictions(predictions: Dict[str, str], path: str) -> None:
    """Official prediction file: a JSON object {question id: answer text} ("" = no answer)."""
    parent = os.path.dirname(path)
    if parent:
        os.makedirs(parent, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(predictions, f, indent=2, ensure_ascii=False)


def write_null_odds(null_odds: Dict[str, float], path: str) -> None:
    """The v2.0 ``--na-prob-file``: {question id: null odds} (higher = more likely unanswerable)."""
    parent = os.path.dirname(path)
    if parent:
        os.makedirs(parent, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump({k: float(v) for k, v in null_odds.items()}, f, indent=2)
