"""WikiExtractor output (the official BERT/ALBERT data route), on cuts of real files: tests/fixtures/corpus/README.md.

The pure core (``components/corpus/wikiextractor_output.py``), no Beam: each fixture gives exactly these documents and
sentences, and each class of broken file is one error naming the file and the line (or byte)."""
import bz2
import gzip
from pathlib import Path

import pytest

from components.text.corrupt_input import CorruptInputError
from components.corpus.wiki import sniff_wikipedia_format
from components.corpus.wikiextractor_output import (extracted_documents, extracted_paragraphs, extracted_to_document,
                                                  iter_extracted)
from tests.conftest import shared_path

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "corpus" / "wikiextractor"
PLAIN = FIXTURES / "AA" / "wiki_00"
BZ2 = FIXTURES / "AB" / "wiki_00.bz2"

CENTILLION = [
    "One centillion is a number, which is equal to either 10303 or 10600, depending on the system used.",
    "In areas using the short scale, such as Canada, the US, and the UK, a centillion is 10303.",
    "It is formed on a pattern starting with a million: a million (1,000,000) has three zeroes more than a thousand "
    "(1,000); a billion (1,000,000,000) has two groups of three zeroes more than a thousand, and so on.",
    "One centillion has one hundred groups of three zeroes more than one thousand.",
    "A centillion in the short-scale system is equivalent to a quinquagintilliard, or a thousand quinquagintillion, in "
    "the long-scale system.",
    "In long scale usage, one centillion is 10600, which is equal to (106)100; that is, it is the number with a "
    "hundred times as many zeroes as a million.",
    "A centillion in the long scale is equivalent to a cennovemnonagintillion in the short scale.",
]
CONJUNCTION = [
    "Conjunction introduction (often abbreviated simply as conjunction and also called and introduction) is a valid "
    "rule of inference of propositional logic.",
    "The rule makes it possible to introduce a conjunction into a logical proof.",
    'It is the inference that if the proposition "p" is true, and proposition "q" is true, then the logical '
    'conjunction of the two propositions "p and q" is true.',
    "For example, if it's true that it's raining, and it's true that I'm inside, then it's true that \"it's raining and "
    "I'm inside\".",
    "The rule can be stated:",
    "where the rule is that wherever an instance of and appear on lines of a proof, a can be placed on a subsequent "
    "line.",
    'The "conjunction introduction" rule may be written in sequent notation:',
    "where is a metalogical symbol meaning that is a syntactic consequence if and are each on lines of a proof in some "
    "logical system;",
    "where and are propositions expressed in some formal system.",
]
DISJUNCTION = [
    "Disjunction introduction or addition (also called or introduction) is a simple valid argument form, an "
    "immediate inference and a rule of inference of propositional logic.",
    "The rule makes it possible to introduce disjunctions to logical proofs.",
    'It is the inference that if "P" is true, then "P or Q" must be true.',
    "The rule can be expressed as:",
    "where the rule is that whenever instances of appear on lines of a proof, can be placed on a subsequent line.",
    "Disjunction introduction is controversial in paraconsistent logic because in combination with other rules of "
    "logic, it leads to explosion (i.e. everything becomes provable).",
    "See Tradeoffs in Paraconsistent logic.",
    'The "disjunction introduction" rule may be written in sequent notation:',
    "where is a metalogical symbol meaning that is a syntactic consequence of in some logical system;",
    "and expressed as a truth-functional tautology or theorem of propositional logic:",
    "where and are propositions expressed in some formal system.",
]
# An infobox-like list that WikiExtractor leaves as one value per line (its "<br>" prefixes removed here); kept, as
# the official route keeps whatever WikiExtractor writes.
BRUNEI = ['"Total:"', "13 km (private line)", '"Narrow gauge:"', "13 km, gauge", '"total:"', "3,650 km", '"paved:"',
          "2,819 km", '"unpaved:"', "831 km (2005)", "209 km; navigable by craft drawing less than 1.2 m (2008)",
          "gas (37 km); oil 18 km (2008)", "Bandar Seri Begawan, Kuala Belait, Muara, Seria, Tutong", '"total:"',
          "8 ships (with a volume of gross register tons (GRT) or over) totaling GRT/ tonnes deadweight (DWT)",
          '"ships by type:"', "Liquefied Gas Carrier 8 (", '"foreign-owned:"', "1 (United Kingdom) (2008)", "2 (2013)",
          '"total:"', "2", '"over 3,047 m:"', "1 (Brunei International Airport)", '"up to 914 m:"',
          "1 (Anduki Airfield)", "3 (2007)"]
# What each fixture gives: (id, title, sentences); "Atomic" ("Atomic may refer to:") is under min_chars and
# "Atlantic (disambiguation)" is not an article.
EXPECTED = {
    PLAIN: [("wiki:7498", "Centillion", CENTILLION), ("wiki:6563", "Conjunction introduction", CONJUNCTION)],
    BZ2: [("wiki:8528", "Disjunction introduction", DISJUNCTION), ("wiki:3663", "Transport in Brunei", BRUNEI)],
}


@pytest.mark.parametrize("path", [PLAIN, BZ2], ids=["plain", "bz2"])
def test_each_fixture_gives_exactly_its_documents_and_sentences(path):
    docs = list(extracted_documents(path))
    assert [(d.doc_id, d.title, d.sentences) for d in docs] == EXPECTED[path]
    assert {d.source for d in docs} == {"wikipedia"}


def test_one_document_per_doc_block_and_the_title_line_is_the_title():
    blocks = list(iter_extracted(PLAIN))
    assert [(b.page_id, b.title, b.line) for b in blocks] == [(7498, "Centillion", 1), (6563, "Conjunction introduction",
                                                                                          15), (1194, "Atomic", 26)]
    assert blocks[0].lines[0] == "Centillion"  # WikiExtractor repeats the title as the body's first line
    assert "Centillion" not in extracted_to_document(blocks[0]).sentences
    assert extracted_to_document(blocks[2]) is None  # "Atomic may refer to:": 20 characters
    assert extracted_to_document(blocks[2], min_chars=0).sentences == ["Atomic may refer to:"]
    every = [b.title for b in iter_extracted(BZ2, articles_only=False)]
    assert every == ["Disjunction introduction", "Transport in Brunei", "Atlantic (disambiguation)"]


def test_headings_and_formulas_are_named_settings():
    centillion, conjunction = list(iter_extracted(PLAIN))[:2]
    # keep_headings keeps the headings of sections with text; "References." (an empty section at the end) still goes.
    kept = extracted_paragraphs(centillion, keep_headings=True)
    assert [p for p in kept if p.endswith(".") and len(p.split()) <= 2] == ["Short scale.", "Long scale."]
    assert "References." not in kept and "Centillion" not in kept
    with_formulas = extracted_paragraphs(conjunction, keep_formulas=True)
    assert with_formulas[1] == ('where the rule is that wherever an instance of "formula_2" and "formula_3" appear on '
                                'lines of a proof, a "formula_4" can be placed on a subsequent line.')
    assert not any("formula_" in p for p in extracted_paragraphs(conjunction))


def test_gzip_compressed_output_reads_the_same(tmp_path):
    path = tmp_path / "wiki_00.gz"
    path.write_bytes(gzip.compress(PLAIN.read_bytes()))
    assert [d.sentences for d in extracted_documents(path)] == [CENTILLION, CONJUNCTION]


def test_format_is_sniffed_from_the_decompressed_content():
    assert sniff_wikipedia_format(PLAIN.read_bytes()[:64], "x") == "wikiextractor"
    assert sniff_wikipedia_format(bz2.decompress(BZ2.read_bytes())[:64], "x") == "wikiextractor"
    assert sniff_wikipedia_format(b'<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.10/">', "x") == "xml"
    assert sniff_wikipedia_format(b'\n<?xml version="1.0"?>', "x") == "xml"
    with pytest.raises(CorruptInputError, match=r"^x: neither a MediaWiki XML export nor WikiExtractor output "
                                                r"\(starts with '%PDF-1.4'\)"):
        sniff_wikipedia_format(b"%PDF-1.4", "x")
    with pytest.raises(CorruptInputError, match="^x: empty input"):
        sniff_wikipedia_format(b" \n", "x")


# ------------------------------------------------------------------------------------------------ broken files
def _broken(tmp_path, name, data: bytes):
    path = tmp_path / name
    path.write_bytes(data)
    return path


def _error(path):
    with pytest.raises(CorruptInputError) as info:
        list(iter_extracted(path))
    assert info.value.path == str(path) and "\n" not in str(info.value)
    return str(info.value)


TEXT = PLAIN.read_bytes()


@pytest.mark.parametrize("name,data,detail", [
    ("doc-without-end", TEXT[: TEXT.index(b"</doc>", TEXT.index(b'id="6563"'))],
     "<doc id=6563 title='Conjunction introduction'> opened at line 15 has no </doc> (the file ends at line 24: "
     "truncated?)"),
    ("nested-doc", TEXT.replace(b"Short scale.\n", b'<doc id="5" url="u" title="T">\n', 1),
     "<doc> at line 5 inside <doc id=7498> opened at line 1, which has no </doc>"),
    ("end-without-doc", b"</doc>\n" + TEXT, "</doc> at line 1 without an open <doc>"),
    ("doc-without-id", TEXT.replace(b'<doc id="7498" ', b"<doc ", 1),
     "<doc> at line 1 without a numeric id or a title: '<doc url=\"http://en.wikipedia.org/wiki?curid=7498\" "
     "title=\"Centillion\">'"),
    ("text-outside", TEXT + b"stray text\n", "text outside <doc> ... </doc> at line 32: 'stray text' (not WikiExtractor output?)"),
    ("bad-utf8", TEXT.replace(b"Centillion\n\nOne", b"Centillion\n\nOne \xff", 1),
     "not valid UTF-8 at line 4 (byte offset 97 of the text)"),
    ("no-doc", b"\n\n", "empty input: no <doc> in this WikiExtractor file"),
])
def test_each_broken_file_class_names_the_file_and_line(tmp_path, name, data, detail):
    path = _broken(tmp_path, name, data)
    assert _error(path).startswith(f"{path}: {detail}")


def test_truncated_and_empty_archives(tmp_path):
    data = bz2.compress(TEXT * 40)
    message = _error(_broken(tmp_path, "wiki_01.bz2", data[: len(data) // 2]))
    assert message.endswith(": truncated bz2 data: the file ends at compressed byte 964, inside stream 1 (no "
                            "end-of-stream marker) (after 0 documents, at line 0)")
    message = _error(_broken(tmp_path, "wiki_02.gz", gzip.compress(TEXT, mtime=0)[:-20]))
    assert message.endswith(": truncated gzip data: the file ends at compressed byte 913, inside member 1 (no "
                            "end-of-stream marker) (after 2 documents, at line 27, in <doc id=1194 title='Atomic'>)")
    bad_utf8 = _error(_broken(tmp_path, "wiki_03.bz2", bz2.compress(TEXT.replace(b"One centillion", b"\xffOne", 1))))
    assert bad_utf8.endswith("not valid UTF-8 at line 4 (byte offset 93 of the decompressed text)")
    assert _error(_broken(tmp_path, "wiki_04.bz2", bz2.compress(b""))).endswith("empty input: no <doc> in this "
                                                                               "WikiExtractor file")


def test_every_file_of_the_large_corpus_reads(shared_data):
    """The 120 files of ../shared/data/large/wikipedia: 7,731 <doc> blocks (PROVENANCE.md), none malformed."""
    root = Path(shared_path("large", "wikipedia"))
    blocks = sum(1 for path in sorted(root.glob("*/wiki_*")) for _ in iter_extracted(path, articles_only=False))
    assert blocks == 7731


def test_chinese_output_reads_as_english_does():
    """WikiExtractor output of zhwiki (a fixture written for the purpose): the same title line, "." headings and
    one paragraph per line, so the reader needs nothing of the language; the id is the XML route's for the same page."""
    docs = list(iter_extracted(FIXTURES.parent / "wikiextractor-zh" / "AA" / "wiki_00"))
    assert [(d.page_id, d.title) for d in docs] == [(4801, "巴黎"), (4806, "塞纳河")]
    assert [extracted_paragraphs(d) for d in docs] == [
        ["巴黎（Paris）是法国的首都和最大城市，位于塞纳河畔。巴黎是欧洲的文化中心之一，有许多博物馆和大学。",
         "公元前3世纪，高卢人的一支在此定居。参见法国的其他城市。"],  # the heading "历史." is dropped
        ["塞纳河（Seine）是法国北部的大河，全长776公里，流经巴黎市中心。"],
    ]
    first = extracted_to_document(docs[0], min_chars=1)
    assert (first.doc_id, first.title) == ("wiki:4801", "巴黎")
