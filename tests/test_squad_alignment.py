"""SQuAD character alignment = the official one (google-research/albert ``squad_utils.py``), piece for piece.

``official_alignment`` below restates, loop for loop, what ``convert_examples_to_features`` does to align a
context with its SentencePiece pieces: the pieces joined with "▁" read as a space, the banded
longest-common-subsequence table ``_lcs_match`` (each context character compared after ``preprocess_text`` of
that character alone), the walk back along its pointers, the MISMATCH rule, and ``_convert_index`` for the
pieces' first/last characters and for the gold answer. ``components.evaluation.squad.alignment`` computes the
same thing batched in NumPy; these tests require identical spans and answer pieces on crafted strings and on every piece
of the whole SQuAD v1.1 dev set.
"""
import json
import unicodedata

import numpy as np
import pytest

from components.evaluation.squad.alignment import align_contexts, piece_char_spans
from components.evaluation.squad.decoding import postprocess_squad
from components.evaluation.squad.squad_features import convert_squad_examples
from components.evaluation.squad.reading import SquadExample, read_squad

SP = "\u2581"


# --- the official algorithm, restated ----------------------------------------------------------------


def _char_form(ch, lower=True):
    """``preprocess_text(ch, remove_space=False)``: NFKD, combining marks dropped, lowercased."""
    out = "".join(c for c in unicodedata.normalize("NFKD", ch) if not unicodedata.combining(c))
    return out.lower() if lower else out


def _lcs_pass(forms, chartok, max_dist):
    """One ``_lcs_match(max_dist)``: f[n-1][m-1] and the pointers g, row by row as (first column, bytes): 0 up,
    1 left, 2 diagonal, 3 no entry. A row keeps only its band; a cell outside it reads 0, as in the official
    zero-filled table."""
    n, m = len(forms), len(chartok)
    pointers = []
    prev_lo, prev = 0, []
    for i in range(n):
        lo, hi = max(i - max_dist, 0), min(i + max_dist, m)
        row, g = [0] * max(hi - lo, 0), bytearray(b"\3" * max(hi - lo, 0))
        for j in range(lo, hi):
            k = j - prev_lo                                   # column j of the previous row
            value = 0
            if i > 0:
                g[j - lo] = 0
                value = prev[k] if 0 <= k < len(prev) else 0
            left = row[j - 1 - lo] if j - 1 >= lo else 0      # f[i, j-1]
            if j > 0 and left > value:
                g[j - lo] = 1
                value = left
            before = prev[k - 1] if i > 0 and j > 0 and 0 <= k - 1 < len(prev) else 0   # f[i-1, j-1]
            if forms[i] == chartok[j] and before + 1 > value:
                g[j - lo] = 2
                value = before + 1
            row[j - lo] = value
        pointers.append((lo, g))
        prev_lo, prev = lo, row
    last = m - 1 - prev_lo
    return (prev[last] if 0 <= last < len(prev) else 0), pointers


def _convert_index(index, pos, m=None, is_start=True):
    if index[pos] is not None:
        return index[pos]
    rear = pos
    while rear < len(index) - 1 and index[rear] is None:
        rear += 1
    front = pos
    while front > 0 and index[front] is None:
        front -= 1
    f, r = index[front], index[rear]
    assert f is not None or r is not None
    if f is None:
        if r >= 1:
            return 0 if is_start else r - 1
        return r
    if r is None:
        if m is not None and f < m - 1:
            return f + 1 if is_start else m - 1
        return f
    if is_start:
        return f + 1 if r > f + 1 else r
    return r - 1 if r > f + 1 else f


def official_alignment(context, pieces, lower=True):
    """(spans [start, end) per piece, chartok→piece, orig→chartok), or None where the official code logs
    "MISMATCH DETECTED!" and drops the context."""
    chartok = "".join(pieces).replace(SP, " ")
    forms = [_char_form(c, lower) for c in context]
    n, m = len(context), len(chartok)
    max_dist = abs(n - m) + 5
    for _ in range(2):
        score, pointers = _lcs_pass(forms, chartok, max_dist)
        if score > 0.8 * n:
            break
        max_dist *= 2
    orig_to_chartok, chartok_to_orig = [None] * n, [None] * m
    i, j = n - 1, m - 1
    while i >= 0 and j >= 0:
        lo, g = pointers[i]
        move = g[j - lo] if 0 <= j - lo < len(g) else 3
        if move == 2:
            orig_to_chartok[i], chartok_to_orig[j] = j, i
            i, j = i - 1, j - 1
        elif move == 1:
            j -= 1
        elif move == 0:
            i -= 1
        else:  # (i, j) not in g
            break
    if all(v is None for v in orig_to_chartok) or score < 0.8 * n:
        return None
    spans, chartok_to_piece, pos = [], [], 0
    for k, piece in enumerate(pieces):
        start, end = pos, pos + len(piece) - 1
        pos += len(piece)
        chartok_to_piece += [k] * len(piece)
        spans.append((_convert_index(chartok_to_orig, start, n, True),
                      _convert_index(chartok_to_orig, end, n, False) + 1))
    return spans, chartok_to_piece, orig_to_chartok


def official_answer_pieces(official, start_char, answer_text):
    _, chartok_to_piece, orig_to_chartok = official
    s = _convert_index(orig_to_chartok, start_char, is_start=True)
    e = _convert_index(orig_to_chartok, start_char + len(answer_text) - 1, is_start=False)
    return chartok_to_piece[s], chartok_to_piece[e]


def _spans(alignment):
    return [tuple(s) for s in alignment.spans.tolist()]


# --- crafted strings ----------------------------------------------------------------------------------


@pytest.mark.parametrize("text, pieces, spans", [
    # A bare "▁" opening the paragraph: the official code gives it the first visible character.
    ('"Hello," she said.', ["▁", '"', "hello", ",", '"', "▁she", "▁said", "."],
     [(0, 1), (0, 1), (1, 6), (6, 7), (7, 8), (8, 12), (12, 17), (17, 18)]),
    ("Stadtbahn trains run.", ["▁", "stadt", "bahn", "▁trains", "▁run", "."],
     [(0, 1), (0, 5), (5, 9), (9, 16), (16, 20), (20, 21)]),
    # A bare "▁" inside the text sits on its space; a word piece's span starts at the space before it.
    ('He said "hi" twice.', ["▁he", "▁said", "▁", '"', "hi", '"', "▁twice", "."],
     [(0, 2), (2, 7), (7, 8), (8, 9), (9, 11), (11, 12), (12, 18), (18, 19)]),
    # Invisible format characters (category Cf): byte-order mark, zero-width joiner, soft hyphen.
    ("Paris\ufeff is big.", ["▁paris", "▁is", "▁big", "."], [(0, 5), (6, 9), (9, 13), (13, 14)]),
    ("\ufeffParis is big.", ["▁paris", "▁is", "▁big", "."], [(0, 6), (6, 9), (9, 13), (13, 14)]),
    ("the\u200dword here", ["▁the", "▁word", "▁here"], [(0, 3), (3, 8), (8, 13)]),
    ("co\u00adoperate now", ["▁co", "\u00ad", "oper", "ate", "▁now"], [(0, 2), (2, 3), (3, 7), (7, 10), (10, 14)]),
    # Accents and a whitespace run.
    ("Café  Zoë naïve", ["▁cafe", "▁zoe", "▁naive"], [(0, 4), (4, 9), (9, 15)]),
    # A character NFKD expands ("½" → "1⁄2") is shared by the pieces it became.
    ("He had 5½ sacks.", ["▁he", "▁had", "▁51", "⁄", "2", "▁sacks", "."],
     [(0, 2), (2, 6), (6, 9), (8, 9), (8, 9), (9, 15), (15, 16)]),
])
def test_crafted_spans(tok, text, pieces, spans):
    (alignment,) = align_contexts([text], tok)
    assert alignment.pieces == pieces == tok.tokenize(text)
    assert alignment.official and _spans(alignment) == spans
    assert official_alignment(text, pieces)[0] == spans
    assert piece_char_spans(text, tok)[1].tolist() == [list(s) for s in spans]


@pytest.mark.parametrize("text, first, last, answer", [
    ('"Hello," she said.', 0, 0, '"'),            # the bare "▁" alone: its visible character, not ""
    ("Stadtbahn trains run.", 0, 0, "S"),
    ("Stadtbahn trains run.", 0, 2, "Stadtbahn"),
    ('He said "hi" twice.', 2, 2, ""),             # inside the text a bare "▁" is its space
    ('He said "hi" twice.', 2, 5, '"hi"'),
    ("Paris\ufeff is big.", 1, 2, "is big"),       # no byte-order mark kept in front of "is"
    ("\ufeffParis is big.", 0, 0, "\ufeffParis"),  # ... but kept where the official code keeps it
    ("the\u200dword here", 1, 2, "\u200dword here"),
    ("co\u00adoperate now", 0, 3, "co\u00adoperate"),
    ("co\u00adoperate now", 2, 3, "operate"),
    ("Café  Zoë naïve", 1, 1, "Zoë"),
    ("Café  Zoë naïve", 0, 2, "Café  Zoë naïve"),
    ("He had 5½ sacks.", 2, 4, "5½"),
])
def test_crafted_answer_text(tok, text, first, last, answer):
    """The decoder cuts ``context[start of first piece : end of last piece].strip()``, as the official one."""
    examples = [SquadExample("q", "t", "What?", text)]
    arrays, metas = convert_squad_examples(examples, tok, max_seq_length=40)
    start = np.zeros(arrays["input_ids"].shape)
    end = np.zeros(arrays["input_ids"].shape)
    start[0, metas[0].doc_offset + first] = end[0, metas[0].doc_offset + last] = 10.0
    predictions, _ = postprocess_squad(examples, metas, start, end)
    assert predictions["q"] == answer


@pytest.mark.parametrize("text, answer, pieces", [
    ("He had 5½ sacks.", "5½", (2, 4)),
    ("Café  Zoë naïve", "Zoë", (1, 1)),
    ("Paris\ufeff is big.", "is big", (1, 2)),
    ("Stadtbahn trains run.", "Stadtbahn", (1, 2)),   # the opening bare "▁" is not part of the label
    ("co\u00adoperate now", "operate", (2, 3)),
])
def test_crafted_training_labels(tok, text, answer, pieces):
    start = text.index(answer)
    (alignment,) = align_contexts([text], tok)
    assert alignment.answer_pieces(start, start + len(answer)) == pieces
    assert official_answer_pieces(official_alignment(text, alignment.pieces), start, answer) == pieces


def test_second_pass_with_a_doubled_band(tok):
    """Eight zero-width spaces at the start (gone from the pieces) and three "½" at the end (each three chartok
    characters) shift the match beyond the first band: the official second pass, band doubled, aligns it."""
    text = "\u200b" * 8 + "The quick brown fox jumps over the lazy dog near the river bank." + "½" * 3
    (alignment,) = align_contexts([text], tok)
    n, m = len(text), len("".join(alignment.pieces))
    forms = [_char_form(c) for c in text]
    chartok = "".join(alignment.pieces).replace(SP, " ")
    assert _lcs_pass(forms, chartok, abs(n - m) + 5)[0] <= 0.8 * n < _lcs_pass(forms, chartok, 2 * (abs(n - m) + 5))[0]
    assert alignment.official
    assert _spans(alignment) == official_alignment(text, alignment.pieces)[0]
    assert _spans(alignment)[:2] == [(0, 11), (11, 17)]   # "▁the" starts at the first zero-width space


def test_mismatch_context_keeps_offset_spans(tok):
    """Where the official code finds too few matching characters (MISMATCH, example dropped), the context is kept
    with spans carried through normalisation and SentencePiece offsets."""
    text = "ﬁﬁﬁ ﬂﬂ ﬁ"   # every letter is a ligature: no character matches on its own
    (alignment,) = align_contexts([text], tok)
    assert official_alignment(text, alignment.pieces) is None and not alignment.official
    assert alignment.pieces == ["▁fi", "fi", "fi", "▁fl", "fl", "▁fi"]
    assert _spans(alignment) == [(0, 1), (1, 2), (2, 3), (4, 5), (5, 6), (7, 8)]
    assert alignment.answer_pieces(4, 6) == (3, 4)


def test_batched_equals_one_by_one_and_official_on_the_sample(tok, sample_dir):
    """Bundled sample contexts: one batched call, one call per context and the restatement agree."""
    with open(f"{sample_dir}/squad/dev-v1.1-sample.json", encoding="utf-8") as f:
        contexts = [p["context"] for a in json.load(f)["data"] for p in a["paragraphs"]]
    batched = align_contexts(contexts, tok)
    assert len(contexts) > 10
    for context, alignment in zip(contexts, batched):
        (alone,) = align_contexts([context], tok)
        assert alone.pieces == alignment.pieces and _spans(alone) == _spans(alignment)
        assert _spans(alignment) == official_alignment(context, alignment.pieces)[0]


# --- the whole SQuAD v1.1 dev set ----------------------------------------------------------------------


def test_whole_dev_set_matches_the_official_alignment(tok, shared_data):
    """Every piece of every dev paragraph gets the official span, and every question's first gold answer
    the official first/last piece (the training label)."""
    examples = read_squad(shared_data("squad", "dev-v1.1.json"))
    contexts = list(dict.fromkeys(e.context for e in examples))
    alignments = dict(zip(contexts, align_contexts(contexts, tok)))
    assert len(contexts) == 2067 and len(examples) == 10570
    official = {}
    pieces_checked = 0
    for context, alignment in alignments.items():
        assert alignment.pieces == tok.tokenize(context)
        official[context] = official_alignment(context, alignment.pieces)
        assert official[context] is not None and alignment.official   # no dev paragraph is a MISMATCH
        assert _spans(alignment) == official[context][0], context[:60]
        pieces_checked += len(alignment.pieces)
    assert pieces_checked == 335919
    for e in examples:
        got = alignments[e.context].answer_pieces(e.start_char, e.end_char)
        assert got == official_answer_pieces(official[e.context], e.start_char, e.answer_text), e.qid
