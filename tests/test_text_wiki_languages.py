"""Wikipedia dumps in other languages: namespace names from the dump's <siteinfo>, localized redirect words and
disambiguation templates (components/corpus/wiki.py), on fixtures written for the purpose
(tests/fixtures/corpus/README.md)."""
from pathlib import Path

import pytest

from components.text.corrupt_input import CorruptInputError
from components.corpus.wiki import (CANONICAL_DROPPED_LINK_NAMES, is_disambiguation, iter_pages, page_paragraphs,
                                  wiki_documents)

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "corpus" / "xml"
ZH = FIXTURES / "zhwiki-sample-pages-articles.xml"
DE = FIXTURES / "dewiki-sample-pages-articles.xml"


def _dump(language: str, namespaces: dict, pages: str, export: str = "0.11") -> str:
    declared = "".join(f'<namespace key="{key}" case="first-letter">{name}</namespace>'
                       for key, name in namespaces.items())
    return (f'<mediawiki xmlns="http://www.mediawiki.org/xml/export-{export}/" version="{export}" '
            f'xml:lang="{language}"><siteinfo><sitename>Wikipedia</sitename><namespaces>{declared}</namespaces>'
            f"</siteinfo>{pages}</mediawiki>")


def _page(title: str, page_id: int, text: str, ns="0", redirect: str = "") -> str:
    ns_element = "" if ns is None else f"<ns>{ns}</ns>"
    return (f"<page><title>{title}</title>{ns_element}<id>{page_id}</id>{redirect}"
            f'<revision><id>{page_id * 10}</id><text xml:space="preserve">{text}</text></revision></page>')


def test_zh_dump():
    pages = list(iter_pages(ZH, articles_only=False))
    assert [(p.page_id, p.title, p.ns, p.redirect) for p in pages] == [
        (4801, "巴黎", 0, False),
        (4802, "巴黎市", 0, True),  # <redirect title="巴黎" />
        (4803, "花都", 0, True),  # no <redirect> element: "#重定向" in the text
        (4804, "水星 (消歧义)", 0, False),
        (4805, "Category:法国城市", 14, False),
    ]
    assert pages[0].site.language == "zh"
    # zhwiki's <siteinfo> names File and Category in English; 文件, 檔案, 分类, 分類 are its aliases (the table).
    assert pages[0].site.dropped_link_names == CANONICAL_DROPPED_LINK_NAMES | {
        "文件", "檔案", "档案", "图像", "圖像", "分类", "分類", "媒体", "媒體"}
    assert is_disambiguation(pages[3].title, pages[3].text, "zh")  # {{消歧义}}
    assert not is_disambiguation(pages[3].title, pages[3].text)  # ... which an English dump does not know
    articles = list(iter_pages(ZH))
    assert [p.title for p in articles] == ["巴黎"]
    assert page_paragraphs(articles[0]) == [
        "巴黎（Paris）是法国的首都和最大城市，位于塞纳河畔。 巴黎是欧洲的文化中心之一，有许多博物馆和大学。",
        "公元前3世纪，高卢人的一支在此定居。参见法国的其他城市。",
    ]
    assert [d.doc_id for d in wiki_documents(ZH, min_chars=1)] == ["wiki:4801"]


def test_de_dump_takes_namespace_names_from_siteinfo():
    pages = list(iter_pages(DE, articles_only=False))
    assert [(p.page_id, p.title, p.ns, p.redirect) for p in pages] == [
        (2801, "Berlin", 0, False),
        (2802, "Hauptstadt Deutschlands", 0, True),  # "#WEITERLEITUNG" in the text
        (2803, "Spree (Begriffsklärung)", 0, False),
        (2804, "Kategorie:Berlin", 14, False),
    ]
    assert pages[0].site.dropped_link_names == CANONICAL_DROPPED_LINK_NAMES | {"medium", "datei", "kategorie", "bild"}
    articles = list(iter_pages(DE))
    assert [p.title for p in articles] == ["Berlin"]  # the {{Begriffsklärung}} page is skipped
    assert page_paragraphs(articles[0]) == [
        "Berlin ist die Hauptstadt der Bundesrepublik Deutschland. Die Stadt liegt an der Spree.",
        "Mit rund 3,7 Millionen Einwohnern ist sie die größte Stadt Deutschlands.",
        "Berlin wurde im 13. Jahrhundert erstmals erwähnt. Mehr unter Berlin-Themen.",
    ]


@pytest.mark.parametrize("language, namespaces, article, prose, redirect, disambiguation", [
    ("ko", {6: "파일", 14: "분류", 10: "틀"},
     "'''서울'''은 대한민국의 수도이다.[[파일:Seoul.jpg|섬네일|[[한강]] 야경]]\n[[분류:대한민국의 도시]]\n[[Category:수도]]",
     "서울은 대한민국의 수도이다.", "#넘겨주기 [[서울]]", "'''서울'''은 다음을 가리킨다.\n{{동음이의}}"),
    ("ja", {6: "ファイル", 14: "カテゴリ", 10: "Template"},
     "'''東京'''は日本の首都である。[[画像:Tokyo.jpg|thumb|夜景]][[ファイル:Map.png]]\n[[カテゴリ:都市]]\n[[category:首都]]",
     "東京は日本の首都である。", "#転送 [[東京]]", "{{Aimai}}"),
    ("ar", {6: "ملف", 14: "تصنيف", 10: "قالب"},
     "'''القاهرة''' هي عاصمة مصر.[[ملف:Cairo.jpg|تصغير|القاهرة]]\n[[تصنيف:عواصم]]\n[[Image:Nile.jpg]]",
     "القاهرة هي عاصمة مصر.", "#تحويل [[القاهرة]]", "'''القاهرة''' قد تشير إلى:\n{{توضيح}}"),
])
def test_localized_names_words_and_templates(tmp_path, language, namespaces, article, prose, redirect,
                                             disambiguation):
    path = tmp_path / f"{language}wiki-pages-articles.xml"
    path.write_text(_dump(language, namespaces, _page("A", 1, article) + _page("B", 2, redirect)
                          + _page("C", 3, disambiguation) + _page("D", 4, "#REDIRECT [[A]]")), encoding="utf-8")
    assert [(p.page_id, p.redirect) for p in iter_pages(path, articles_only=False)] == [
        (1, False), (2, True), (3, False), (4, True)]  # the English #REDIRECT works on every wiki
    articles = list(iter_pages(path))
    assert [p.page_id for p in articles] == [1]
    assert page_paragraphs(articles[0]) == [prose]


def test_an_english_dump_keeps_english_rules_only(tmp_path):
    path = tmp_path / "enwiki.xml"
    path.write_text(_dump("en", {6: "File", 14: "Category"}, _page("A", 1, "#WEITERLEITUNG [[B]]")
                          + _page("B", 2, "Text [[Kategorie:X]] and {{Begriffsklärung}}.")), encoding="utf-8")
    pages = list(iter_pages(path))
    assert [(p.page_id, p.redirect) for p in pages] == [(1, False), (2, False)]
    assert page_paragraphs(pages[1]) == ["Text Kategorie:X and."]


def test_page_without_ns_takes_its_namespace_from_the_title(tmp_path):
    path = tmp_path / "old-export.xml"
    path.write_text(_dump("de", {1: "Diskussion", 14: "Kategorie"}, export="0.3", pages=(
        _page("Kategorie:Berlin", 1, "x", ns=None) + _page("Diskussion: Berlin", 2, "x", ns=None)
        + _page("Berlin: Sinfonie der Großstadt", 3, "x", ns=None) + _page("Bild:Karte.png", 4, "x", ns=None))),
        encoding="utf-8")
    assert [(p.title, p.ns) for p in iter_pages(path, articles_only=False)] == [
        ("Kategorie:Berlin", 14), ("Diskussion: Berlin", 1), ("Berlin: Sinfonie der Großstadt", 0),
        ("Bild:Karte.png", 6)]  # "Bild": dewiki's alias for Datei (the table)


def test_disambig_magic_word():
    assert is_disambiguation("X", "'''X''' may be:\n__DISAMBIG__")


def test_siteinfo_is_read_as_the_stream_passes(tmp_path):
    data = ZH.read_bytes()
    cut = data.index(b"</page>") + len(b"</page>")
    path = tmp_path / "zhwiki-truncated.xml"
    path.write_bytes(data[:cut] + b"\n  <page><title>")
    seen = []
    with pytest.raises(CorruptInputError, match="zhwiki-truncated.xml"):
        for page in iter_pages(path):
            seen.append((page.title, page.site.language, len(page_paragraphs(page))))
    assert seen == [("巴黎", "zh", 2)]


def test_bad_namespace_key_and_ns_name_the_file(tmp_path):
    bad_key = tmp_path / "bad-key.xml"
    bad_key.write_text(_dump("de", {"x": "Kategorie"}, _page("A", 1, "x")), encoding="utf-8")
    with pytest.raises(CorruptInputError, match=r"bad-key.xml: <namespace key='x'> in <siteinfo> without a "
                                                r"numeric key \(named 'Kategorie'\)"):
        list(iter_pages(bad_key))
    bad_ns = tmp_path / "bad-ns.xml"
    bad_ns.write_text(_dump("de", {14: "Kategorie"}, _page("A", 1, "x", ns="main")), encoding="utf-8")
    with pytest.raises(CorruptInputError, match="bad-ns.xml: <page> 'A' with a non-numeric <ns> 'main'"):
        list(iter_pages(bad_ns))
