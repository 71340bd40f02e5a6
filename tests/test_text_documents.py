"""Document record, official on-disk format, fingerprints and bounded sentences."""
from components.text.documents import (
    MAX_SENTENCE_CHARS,
    Document,
    chunk_text,
    clean_sentences,
    doc_fingerprint,
    make_document,
    parse_text_blocks,
    to_text_block,
)


def _doc(sentences, doc_id="wiki:1"):
    return Document(doc_id=doc_id, source="wikipedia", title="T", sentences=list(sentences))


def test_text_block_round_trip():
    docs = [_doc(["First one.", "Second one."]), _doc(["Only one."], "book:a.txt")]
    text = "".join(to_text_block(d) for d in docs)
    assert text == "First one.\nSecond one.\n\nOnly one.\n\n"
    assert list(parse_text_blocks(text.splitlines(keepends=True))) == [["First one.", "Second one."], ["Only one."]]


def test_parse_ignores_runs_of_blank_lines_and_missing_final_blank():
    lines = ["\n", "a.\n", "   \n", "\n", "b.\n", "c."]
    assert list(parse_text_blocks(lines)) == [["a."], ["b.", "c."]]


def test_text_block_cannot_be_corrupted_by_newlines_or_empty_sentences():
    doc = _doc(["Line one\nstill one.", "   ", "", "Two\u2028parts\x85here."])
    assert to_text_block(doc) == "Line one still one.\nTwo parts here.\n\n"
    assert to_text_block(_doc(["  ", ""])) == ""


def test_clean_sentences_drops_control_characters():
    assert clean_sentences(["The End\x1a\x1a", "\x00"]) == ["The End"]


def test_overlong_sentence_is_chunked_on_spaces():
    long = ("word " * 5000).strip()  # 24,999 chars
    chunks = clean_sentences([long])
    assert len(chunks) == 3
    assert all(len(c) <= MAX_SENTENCE_CHARS for c in chunks)
    assert " ".join(chunks) == long


def test_chunk_without_spaces_is_hard_cut():
    chunks = chunk_text("x" * 25_000, 10_000)
    assert [len(c) for c in chunks] == [10_000, 10_000, 5_000]


def test_make_document_splits_paragraphs_and_bounds_a_10mb_line():
    doc = make_document("wiki:7", "wikipedia", "Seven", ["Hello there. General Kenobi!", "", "a" * 10_000_000])
    assert doc.sentences[:2] == ["Hello there.", "General Kenobi!"]
    assert len(doc.sentences) == 2 + 1000
    assert max(len(s) for s in doc.sentences) <= MAX_SENTENCE_CHARS
    assert doc.doc_id == "wiki:7" and doc.source == "wikipedia" and doc.title == "Seven"


def test_fingerprint_ignores_case_accents_and_whitespace_but_not_content():
    a = _doc(["Café  au lait.", "Second."])
    b = _doc(["cafe au LAIT.", "Second."], "book:x.txt")
    c = _doc(["Cafe au lait.", "Third."])
    assert doc_fingerprint(a) == doc_fingerprint(b)
    assert doc_fingerprint(a) != doc_fingerprint(c)
    assert len(doc_fingerprint(a)) == 40
    # sentence boundaries matter: the same words split differently are a different document
    assert doc_fingerprint(_doc(["a b.", "c."])) != doc_fingerprint(_doc(["a.", "b c."]))
