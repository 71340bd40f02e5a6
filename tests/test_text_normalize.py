"""components/text/normalize.py: ALBERT's ``preprocess_text`` leaves LaTeX-style quotes alone.

Checked with the official ``30k-clean.model``: the official pipeline (whitespace collapse, NFKD, combining marks
dropped, lowercase; google-research/albert ``tokenization.preprocess_text``) keeps two backquotes and two
apostrophes, which SentencePiece encodes as their own pieces. Mapping them to '"' (XLNet's rule) is only the
named option ``latex_quotes=True``.
"""
import unicodedata

from components.datagen.generate import normalize_sentences, tokenize_document
from components.evaluation.squad.alignment import normalize_with_offsets, piece_char_spans
from components.text.normalize import preprocess_text

TEXTS = ["He said ``hello'' to me.", "Rock 'n' roll isn''t ``dead''", "  Café\t``naïve''  ", "plain \"quotes\""]


def _official_preprocess(text, lower=True):
    """The official function, written out independently: collapse, NFKD, drop combining, lower."""
    out = " ".join(text.strip().split())
    out = unicodedata.normalize("NFKD", out)
    out = "".join(c for c in out if not unicodedata.combining(c))
    return out.lower() if lower else out


def test_default_is_the_official_normalisation():
    for text in TEXTS:
        assert preprocess_text(text) == _official_preprocess(text)
        assert preprocess_text(text, lower=False) == _official_preprocess(text, lower=False)
    assert preprocess_text("He said ``hello''") == "he said ``hello''"


def test_latex_quotes_is_a_named_option():
    assert preprocess_text("He said ``hello''", latex_quotes=True) == 'he said "hello"'


def test_official_model_pieces_keep_the_quotes(tok):
    pieces = tok.tokenize("He said ``hello'' to me.")
    assert pieces == ["▁he", "▁said", "▁", "``", "hello", "'", "'", "▁to", "▁me", "."]
    # The old mapping would have produced different ids with this vocabulary.
    mapped = tok.sp.encode(preprocess_text("He said ``hello'' to me.", latex_quotes=True), out_type=str)
    assert mapped == ["▁he", "▁said", "▁", '"', "hello", '"', "▁to", "▁me", "."]


def test_every_path_agrees(tok, vocab):
    """Datagen's fast path, SQuAD's offset-tracking normaliser and the tokenizer agree on quote pairs."""
    assert normalize_sentences(tok, TEXTS) == [tok.normalize(t) for t in TEXTS]
    doc = tokenize_document(tok, TEXTS, vocab)
    assert [list(doc[i]) for i in range(len(doc))] == [tok.encode(t) for t in TEXTS]
    for text in TEXTS:
        norm, starts = normalize_with_offsets(text)
        assert norm == tok.normalize(text) and len(starts) == len(norm)
        pieces, spans = piece_char_spans(text, tok)
        assert pieces == tok.tokenize(text) and len(spans) == len(pieces)
    pieces, spans = piece_char_spans("He said ``hello''", tok)
    assert [("He said ``hello''"[s:e]) for s, e in spans][-4:] == ["``", "hello", "'", "'"]
