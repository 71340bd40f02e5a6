"""Where each SentencePiece piece of a SQuAD context sits in the original text (the alignment stage).

ALBERT normalises text before SentencePiece (whitespace collapse, NFKD with combining marks dropped,
lowercasing) and SentencePiece normalises again (NFKC-like, dropping some invisible characters), so a
piece's place in the context has to be recovered. We do it exactly as the official code (see "Character
alignment" below), so every piece gets the official character span: gold answers are mapped to pieces
(training labels, :mod:`.features`) and predicted spans are cut from the original context
(``context[start:end].strip()``, original case, accents and spacing) as officially (:mod:`.decoding`).
Only contexts the official code drops as a MISMATCH get offset-based spans instead (kept, not dropped).

A WordPiece tokenizer (a ``vocab.txt``, the official Chinese models') is aligned exactly instead, by offsets
(:func:`wordpiece_piece_spans`): BERT's ``BasicTokenizer`` never moves a character from one word to another, so
each word's characters are followed through its cleaning, lower-casing and accent stripping, and each piece covers
the original characters of its part of the word (an ``[UNK]`` the whole word). That is the character-level
alignment the Chinese reading-comprehension baselines (CMRC2018, DRCD) use; the LCS above would read the
``##`` and ``[UNK]`` of the pieces as characters of the context.
"""
from __future__ import annotations

import functools
import unicodedata
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

import numpy as np

from components.text.normalize import preprocess_text

__all__ = ["SPIECE_UNDERLINE", "ContextAlignment", "align_contexts", "normalize_with_offsets", "piece_char_spans",
           "wordpiece_piece_spans"]

SPIECE_UNDERLINE = "\u2581"


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
    if not hasattr(tokenizer, "sp"):
        raise TypeError(f"{type(tokenizer).__name__} is neither a SentencePiece tokenizer (AlbertTokenizer) nor a "
                        "WordPiece one: no character alignment for its pieces")
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


def _wordpiece_word_chars(word: List[Tuple[str, int]], lower: bool) -> List[Tuple[str, int]]:
    """One ``BasicTokenizer`` word's characters after step 1 (invalid characters dropped) and step 4 (lower-case,
    NFD, nonspacing marks dropped), each with the index of the original character it came from."""
    from components.text.wordpiece import is_control  # lazy: components.text.wordpiece, json (0.005 s)

    chars = [(c, i) for c, i in word if c != "\ufffd" and not is_control(c)]
    if not lower:
        return chars
    text = "".join(c for c, _ in chars)
    low = text.lower()
    if len(low) == len(text):  # whole-word lower-casing (Greek final sigma) when it keeps the length
        chars = [(lc, i) for lc, (_, i) in zip(low, chars)]
    else:
        chars = [(lc, i) for c, i in chars for lc in c.lower()]
    if all(c.isascii() for c, _ in chars):
        return chars
    return [(d, i) for c, i in chars for d in unicodedata.normalize("NFD", c) if unicodedata.category(d) != "Mn"]


def wordpiece_piece_spans(text: str, tokenizer) -> Tuple[List[str], np.ndarray]:
    """WordPiece pieces of ``text`` (exactly ``tokenizer.tokenize(text)``) and each one's ``[start, end)`` in
    ``text``, by offsets (see the module): a piece covers the original characters of its part of its word, an
    ``[UNK]`` the whole word (a part split off at punctuation). Pieces are in order and their spans never overlap."""
    from components.text.wordpiece import (_SPLITTING_CONTROL, _WORD, _drop_invalid, _strip_accents, CONTINUATION,
                                           is_punctuation)  # lazy: components.text.wordpiece, json (0.005 s)

    lower = bool(getattr(tokenizer, "do_lower_case", True))
    kept = [(c, i) for i, c in enumerate(text) if not _SPLITTING_CONTROL.match(c)]
    cleaned = "".join(c for c, _ in kept)
    pieces: List[str] = []
    spans: List[Tuple[int, int]] = []
    for match in _WORD.finditer(cleaned):
        word = kept[match.start():match.end()]
        chars = _wordpiece_word_chars(word, lower)
        expected = _drop_invalid(match.group())
        expected = _strip_accents(expected.lower()) if lower else expected
        if "".join(c for c, _ in chars) != expected:  # a Unicode corner case: the word's span for every character
            chars = [(c, word[0][1]) for c in expected[:-1]] + ([(expected[-1], word[-1][1])] if expected else [])
        parts: List[List[Tuple[str, int]]] = []
        run: List[Tuple[str, int]] = []
        for c, i in chars + [(" ", -1)]:   # BERT's whitespace split, then its punctuation split
            if c.isspace() or is_punctuation(c):
                if run:
                    parts.append(run)
                    run = []
                if not c.isspace():
                    parts.append([(c, i)])
            else:
                run.append((c, i))
        for part in parts:
            ids = tokenizer._wordpiece("".join(c for c, _ in part))
            if len(ids) == 1 and ids[0] == tokenizer.unk_id:
                pieces.append(tokenizer.pieces[ids[0]])
                spans.append((part[0][1], part[-1][1] + 1))
                continue
            at = 0
            for k, token_id in enumerate(ids):
                piece = tokenizer.pieces[token_id]
                n = len(piece) - (len(CONTINUATION) if k else 0)
                pieces.append(piece)
                spans.append((part[at][1], part[at + n - 1][1] + 1))
                at += n
    expected_pieces = list(tokenizer.tokenize(text))
    if pieces != expected_pieces:
        raise RuntimeError(f"WordPiece alignment lost its way in a context of {len(text)} characters: "
                           f"{len(pieces)} pieces against the tokenizer's {len(expected_pieces)}")
    return pieces, np.asarray(spans, dtype=np.int32).reshape(len(spans), 2)


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
    if getattr(tokenizer, "kind", None) == "wordpiece":
        return [ContextAlignment(*wordpiece_piece_spans(t, tokenizer), None, None) for t in texts]
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

