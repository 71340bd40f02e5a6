"""Wikipedia dump reading and wikitext cleaning, on the bundled real enwiki sample."""
import bz2
import io
import re
from pathlib import Path

import pytest

from components.text.corrupt_input import CorruptInputError
from components.corpus.wiki import is_disambiguation, iter_pages, page_to_document, wiki_documents
from components.corpus.wikitext import clean_wikitext

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "data/sample/wikipedia/enwiki-sample-pages-articles.xml.bz2"
SHARED_DUMP = ("wikipedia", "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2")
RESIDUE = re.compile(r"\{\{|\}\}|\[\[|\]\]|\{\||\|\}|<ref|</ref|&nbsp;|&amp;|&ndash;|<!--|__[A-Z]+__|'''|\bthumb\|")


@pytest.fixture(scope="module")
def sample_docs():
    return list(wiki_documents(SAMPLE))


def _xml(pages: str, version: str = "0.10") -> str:
    return (
        f'<mediawiki xmlns="http://www.mediawiki.org/xml/export-{version}/" version="{version}" xml:lang="en">'
        f"<siteinfo><sitename>Test</sitename></siteinfo>{pages}</mediawiki>"
    )


def _page(title: str, page_id: int, text: str, ns: int = 0, redirect: str = "") -> str:
    return (
        f"<page><title>{title}</title><ns>{ns}</ns><id>{page_id}</id>{redirect}"
        f'<revision><id>{page_id * 100}</id><contributor><id>99</id></contributor>'
        f'<text xml:space="preserve">{text}</text></revision></page>'
    )


# ---------------------------------------------------------------- real sample


def test_sample_pages_and_filters():
    pages = list(iter_pages(SAMPLE, articles_only=False))
    assert len(pages) == 38
    assert sum(p.redirect for p in pages) == 16
    assert {p.ns for p in pages} == {0, 4}
    anarchism = next(p for p in pages if p.title == "Anarchism")
    assert anarchism.page_id == 12 and not anarchism.redirect  # the page id, not the revision/contributor id
    assert anarchism.text.startswith("{{Redirect2|Anarchist")  # a hatnote template is not a redirect
    kept = [p.title for p in iter_pages(SAMPLE)]
    assert len(kept) == 19
    assert "AccessibleComputing" not in kept and "AfghanistanHistory" not in kept  # redirects
    assert not any("(disambiguation)" in t for t in kept)
    assert not any(t.startswith("Wikipedia:") for t in kept)


def test_sample_documents_are_clean_prose(sample_docs):
    titles = [d.title for d in sample_docs]
    assert titles[:4] == ["Anarchism", "Autism", "Albedo", "A"]
    assert {"ASCII", "Achilles", "Academy Award for Best Production Design"} <= set(titles)
    for doc in sample_docs:
        assert doc.source == "wikipedia" and re.fullmatch(r"wiki:\d+", doc.doc_id)
        assert doc.sentences
        for sentence in doc.sentences:
            assert not RESIDUE.search(sentence), (doc.title, sentence)
            assert sentence == sentence.strip() and "\n" not in sentence
    anarchism = sample_docs[0]
    assert anarchism.doc_id == "wiki:12"
    assert anarchism.sentences[0] == (
        "Anarchism is a political philosophy that advocates self-governed societies based on voluntary institutions."
    )
    text = " ".join(anarchism.sentences)
    assert "Pierre-Joseph Proudhon" in text  # link text kept
    assert "Cite book" not in text and "cite journal" not in text  # citation templates gone
    assert "Nettlau" not in text  # reference contents gone
    autism = " ".join(sample_docs[1].sentences)
    assert "Autism is a neurodevelopmental disorder" in autism


def test_sample_drops_reference_sections(sample_docs):
    for doc in sample_docs:
        joined = " ".join(doc.sentences)
        assert "External links" not in joined
        assert "ISBN" not in joined, doc.title


def test_truncated_bz2_raises_naming_file(tmp_path):
    data = SAMPLE.read_bytes()
    broken = tmp_path / "broken-pages-articles.xml.bz2"
    broken.write_bytes(data[: len(data) // 2])
    with pytest.raises(CorruptInputError) as info:
        for _ in iter_pages(broken):
            pass
    message = str(info.value)
    assert str(broken) in message and info.value.path == str(broken)
    assert "truncated" in message and "after" in message


def test_corrupt_bz2_bytes_raise(tmp_path):
    data = bytearray(SAMPLE.read_bytes())
    data[5000:5100] = b"\x00" * 100
    bad = tmp_path / "bad.xml.bz2"
    bad.write_bytes(bytes(data))
    with pytest.raises(CorruptInputError, match="bad.xml.bz2"):
        list(iter_pages(bad))


def test_malformed_xml_raises_with_position_and_page(tmp_path):
    xml = _xml(_page("Good", 1, "Fine text.") + "<page><title>Broken page</title><ns>0</ns><id>2</id><revision><text>x</revison>")
    path = tmp_path / "malformed.xml"
    path.write_text(xml, encoding="utf-8")
    seen = []
    with pytest.raises(CorruptInputError) as info:
        for page in iter_pages(path):
            seen.append(page.title)
    assert seen == ["Good"]  # pages before the damage were delivered
    message = str(info.value)
    assert "malformed.xml" in message and "line 1, column" in message and "Broken page" in message


def test_not_a_mediawiki_export_and_empty_file(tmp_path):
    other = tmp_path / "other.xml"
    other.write_text("<rss><item/></rss>", encoding="utf-8")
    with pytest.raises(CorruptInputError, match="not a MediaWiki export"):
        list(iter_pages(other))
    empty = tmp_path / "empty.xml.bz2"
    empty.write_bytes(b"")
    with pytest.raises(CorruptInputError, match="empty.xml.bz2"):
        list(iter_pages(empty))


def test_pickled_error_keeps_path_and_detail():
    import pickle

    err = pickle.loads(pickle.dumps(CorruptInputError("/x/y.bz2", "broken at 3")))
    assert err.path == "/x/y.bz2" and str(err) == "/x/y.bz2: broken at 3"


# ---------------------------------------------------------------- synthetic exports


@pytest.mark.parametrize("version", ["0.10", "0.11", "0.3"])
def test_any_export_version_plain_or_compressed_path_or_stream(tmp_path, version):
    body = "Paris is the capital of France. It is large and old, with many museums and famous old bridges."
    xml = _xml(
        _page("Paris", 5, " ".join([body] * 3))
        + _page("Talk:Paris", 6, body, ns=1)
        + _page("Old name", 7, "#REDIRECT [[Paris]]")
        + _page("Lutetia", 8, "Something", redirect='<redirect title="Paris" />')
        + _page("Mercury", 9, "'''Mercury''' may mean a planet or an element.\n{{disambiguation|geo}}")
        + _page("Mercury (disambiguation)", 10, " ".join([body] * 3)),
        version,
    ).encode("utf-8")
    plain, packed = tmp_path / "a.xml", tmp_path / "a.xml.bz2"
    plain.write_bytes(xml)
    packed.write_bytes(bz2.compress(xml))

    class NoPeek(io.RawIOBase):  # a stream with neither peek nor seek (network-like)
        def __init__(self, data):
            self._buf = io.BytesIO(data)

        def readable(self):
            return True

        def readinto(self, b):
            data = self._buf.read(len(b))
            b[: len(data)] = data
            return len(data)

    for source in (plain, packed, io.BytesIO(bz2.compress(xml)), NoPeek(bz2.compress(xml)), NoPeek(xml)):
        pages = list(iter_pages(source, articles_only=False))
        assert [p.page_id for p in pages] == [5, 6, 7, 8, 9, 10]
        assert [p.redirect for p in pages] == [False, False, True, True, False, False]
        assert [p.title for p in iter_pages(source if isinstance(source, Path) else io.BytesIO(xml))] == ["Paris"]
    docs = list(wiki_documents(packed))
    assert [d.doc_id for d in docs] == ["wiki:5"]
    assert docs[0].sentences[:2] == ["Paris is the capital of France.", "It is large and old, with many museums and famous old bridges."]


def test_min_chars_drops_stubs():
    from components.corpus.wiki import WikiPage

    stub = WikiPage(page_id=1, title="Stub", ns=0, redirect=False, text="'''Stub''' is short.")
    assert page_to_document(stub) is None
    assert page_to_document(stub, min_chars=5).sentences == ["Stub is short."]


def test_disambiguation_detection():
    assert is_disambiguation("X", "text\n{{Disambiguation|geo|hndis}}")
    assert is_disambiguation("X", "text {{dab}}")
    assert is_disambiguation("X", "{{set index article|ships}}")
    assert is_disambiguation("X", "{{hndis|name}}")
    assert is_disambiguation("Austin (disambiguation)", "")
    # An inline cleanup tag is not a disambiguation page.
    assert not is_disambiguation("X", "He went there.{{disambiguation needed|date=May 2015}}")
    assert not is_disambiguation("X", "{{Redirect2|Anarchist|the disambiguation page}}")


# ---------------------------------------------------------------- clean_wikitext units


def test_nested_templates_tables_and_refs():
    text = (
        "{{Infobox person|name=X|birth={{birth date|1900|1|1}}|note={{efn|a {{nested|b}} c}}}}\n"
        "'''X''' was a ''writer''.<ref name=a>{{cite book|title=T}}</ref> She wrote.<ref name=\"b\" />\n"
        "{| class=\"wikitable\"\n|-\n| cell || {{flag|FR}}\n{|\n| inner\n|}\n| more\n|}\n"
        "After the table.<!-- hidden\ncomment --> Done."
    )
    assert clean_wikitext(text) == "X was a writer. She wrote.\nAfter the table. Done."


def test_links_files_categories_and_external_links():
    text = (
        "[[File:Map.png|thumb|A map of [[Paris|the city]] [see above] with Bi[1.1]x]]"
        "The [[Seine]] flows through [[Paris, France|Paris]]es.[[Image:x.jpg]] "
        "See [[wikt:river|river]] and [http://example.com the site] or [http://example.com/bare]. "
        "Pipe trick: [[Paris (band)|]].\n[[Category:Cities| ]]\n[[de:Paris]]\n[[fr:Paris]]"
    )
    assert clean_wikitext(text) == (
        "The Seine flows through Parises. See river and the site or. Pipe trick: Paris."
    )


def test_html_entities_and_tags():
    text = (
        "A&nbsp;B &amp;nbsp;C &ndash; D&amp;amp;E <b>bold</b> <span style=\"x\">span</span> x<sup>2</sup>"
        "<br/>end <math>E=mc^2</math><gallery>\nFile:A.jpg|cap\n</gallery> __TOC__ __NOTOC__ fin."
    )
    assert clean_wikitext(text) == "A B C – D&E bold span x2 end fin."


def test_inline_templates_that_carry_sentence_text_are_rendered():
    text = (
        "Peak ({{formatnum: 3003}} m), {{convert|1500|km|0|abbr=on}} away; rain {{convert|400|to|670|mm|1|abbr=on}}. "
        "{{As of|2014}}, from Greek {{lang|grc|ἀναρχία}} or {{lang-ar|جبال}}, {{nowrap|$900 bn}} in 3500 {{sc|bc}}"
        "{{snd}}so {{citation needed|date=May 2015}}{{Infobox|area={{convert|5|km2}}}}"
    )
    assert clean_wikitext(text) == (
        "Peak (3003 m), 1500 km away; rain 400 to 670 mm. As of 2014, from Greek ἀναρχία or جبال, $900 bn in 3500 bc – so"
    )


def test_headings_reference_sections_and_lists():
    text = (
        "Intro text here.\n\n== History ==\nHistory text.\n* a list item\n# numbered\n: indented prose.\n"
        "=== Early ===\nEarly text.\n== See also ==\n* [[Other]]\n=== Sub of see also ===\nhidden\n"
        "== References ==\n{{reflist}}\n== Legacy ==\nLegacy text.\n== External links ==\n* [http://x.org X]"
    )
    assert clean_wikitext(text).split("\n") == ["Intro text here.", "History text.", "indented prose.", "Early text.", "Legacy text."]
    with_lists = clean_wikitext(text, keep_lists=True).split("\n")
    assert "a list item" in with_lists and "numbered" in with_lists and "Other" not in with_lists


def test_paragraphs_join_wrapped_lines_and_unclosed_markup_is_contained():
    text = "Line one\nline two.\n\nA {{broken template\nrest of para.\n\nNext paragraph [[unclosed link\n\nLast."
    assert clean_wikitext(text).split("\n") == ["Line one line two.", "A", "Next paragraph unclosed link", "Last."]


# ---------------------------------------------------------------- full staged sample (optional)


def test_full_shared_sample(shared_data):
    SHARED = Path(shared_data(*SHARED_DUMP))
    pages = list(iter_pages(SHARED, articles_only=False))
    assert len(pages) == 206
    assert sum(p.ns == 0 for p in pages) == 205
    assert sum(p.redirect for p in pages) == 100
    docs = list(wiki_documents(SHARED))
    assert len(docs) == 97  # of the 105 non-redirect articles, those the cleaner's filters keep
    assert len({d.doc_id for d in docs}) == len(docs)
    sentences = [s for d in docs for s in d.sentences]
    assert len(sentences) == 18_350
    dirty = [s for s in sentences if RESIDUE.search(s)]
    assert not dirty, dirty[:5]
