"""Book folder reading: Gutenberg boilerplate, paragraphs, strict decoding, empty files."""
import re
import shutil
from pathlib import Path

import pytest

from components.corpus.books import book_document_from_bytes, book_documents, iter_book_files, read_book, strip_gutenberg
from components.text.corrupt_input import CorruptInputError

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "data/sample/books"

MODERN = """The Project Gutenberg EBook of A Test Book, by Some One

This eBook is for the use of anyone anywhere at no cost and with
almost no restrictions whatsoever.

Title: A Test Book

Author: Some One

*** START OF THIS PROJECT GUTENBERG EBOOK A TEST BOOK ***




Produced by Volunteers at Distributed Proofreaders





CHAPTER I

It was a dark and stormy night; the rain fell in
torrents, except at occasional intervals. Mr. Smith
stayed well-
known indoors.

The second paragraph is short. It has two sentences.

End of the Project Gutenberg EBook of A Test Book, by Some One

*** END OF THIS PROJECT GUTENBERG EBOOK A TEST BOOK ***

***** This file should be named 12345.txt or 12345.zip *****
Project Gutenberg-tm is synonymous with the free distribution.
"""

OLD = """**The Project Gutenberg Etext of Old Book**
Please take a look at the important information in this header.

***START**THE SMALL PRINT!**FOR PUBLIC DOMAIN ETEXTS**START***
Why is this "Small Print!" statement here? You know: lawyers.
*END*THE SMALL PRINT! FOR PUBLIC DOMAIN ETEXTS*Ver.04.29.93*END*

The old book begins here with a proper sentence. And a second one follows it.

{filler}
End of Project Gutenberg's Old Book
"""


def test_sample_books_are_clean_documents():
    docs = list(book_documents(SAMPLE))
    assert [d.doc_id for d in docs] == ["book:austen-persuasion.txt", "book:chesterton-thursday.txt"]
    persuasion, thursday = docs
    assert (persuasion.title, thursday.title) == ("Persuasion", "The Man Who Was Thursday")
    assert all(d.source == "books" for d in docs)
    assert persuasion.sentences[0].startswith("Sir Walter Elliot, of Kellynch Hall, in Somersetshire, was a man who,")
    assert persuasion.sentences[0].endswith("with an interest which never failed.")  # hard-wrapped lines joined
    assert [len(d.sentences) for d in docs] == [976, 1601]
    for doc in docs:
        joined = "\n".join(doc.sentences)
        assert "[Persuasion by Jane Austen" not in joined and "Gutenberg" not in joined
        assert not re.search(r"^(Chapter|CHAPTER) ", joined, re.M)
        assert "\n\n" not in joined and all(s == s.strip() and s for s in doc.sentences)
    assert "Chapter 1" not in persuasion.sentences
    assert sum("Dr. Bull" in s for s in thursday.sentences) == 7
    assert not any(re.search(r"\b(Mr|Dr|St)\.$", s) for d in docs for s in d.sentences)  # no split after "Dr."


def test_modern_gutenberg_header_and_footer_are_removed(tmp_path):
    doc = book_document_from_bytes(MODERN.encode(), "modern.txt", min_chars=10)
    assert doc.title == "A Test Book"
    assert doc.sentences == [
        "It was a dark and stormy night; the rain fell in torrents, except at occasional intervals.",
        "Mr. Smith stayed well-known indoors.",
        "The second paragraph is short.",
        "It has two sentences.",
    ]


def test_old_small_print_header_and_end_line_are_removed():
    text = OLD.format(filler="More text of the book follows here.\n" * 20)
    doc = book_document_from_bytes(text.encode(), "old/old.txt", min_chars=10)
    assert doc.doc_id == "book:old/old.txt" and doc.title == "old"
    assert doc.sentences[:3] == [
        "The old book begins here with a proper sentence.",
        "And a second one follows it.",
        "More text of the book follows here.",
    ]
    assert len(doc.sentences) == 22


def test_small_print_at_end_does_not_count_as_header():
    text = "Body sentence one is here. Body sentence two is here.\n\n" * 20 + OLD.split("\n\n", 1)[1].format(filler="")
    body, _ = strip_gutenberg(text)
    assert body.startswith("Body sentence one") and "SMALL PRINT" not in body


def test_crlf_and_bom_and_nested_folders(tmp_path):
    (tmp_path / "b" / "c").mkdir(parents=True)
    (tmp_path / "b" / "c" / "z.txt").write_bytes(b"\xef\xbb\xbfFirst line of a\r\nwrapped paragraph here.\r\n\r\nNext one.\r\n")
    (tmp_path / "a.TXT").write_bytes(b"Upper-case suffix book. It is read too.")
    (tmp_path / "notes.md").write_text("not a book")
    assert [p.relative_to(tmp_path).as_posix() for p in iter_book_files(tmp_path)] == ["a.TXT", "b/c/z.txt"]
    docs = list(book_documents(tmp_path, min_chars=1))
    assert [d.doc_id for d in docs] == ["book:a.TXT", "book:b/c/z.txt"]
    assert docs[1].sentences == ["First line of a wrapped paragraph here.", "Next one."]


def test_non_utf8_raises_with_offset_unless_fallback(tmp_path):
    path = tmp_path / "latin.txt"
    path.write_bytes("Caf\u00e9 society was a phrase. ".encode("latin-1") * 20)
    with pytest.raises(CorruptInputError) as info:
        read_book(path, tmp_path)
    assert str(path) in str(info.value) and "byte offset 3" in str(info.value) and "0xe9" in str(info.value)
    doc = read_book(path, tmp_path, encoding_fallback="latin-1")
    assert doc.sentences[0] == "Café society was a phrase."


def test_empty_and_boilerplate_only_files_give_no_document(tmp_path):
    (tmp_path / "empty.txt").write_bytes(b"")
    (tmp_path / "blank.txt").write_bytes(b"\n\n   \n")
    (tmp_path / "only-header.txt").write_text("*** START OF THE PROJECT GUTENBERG EBOOK X ***\n*** END OF THE PROJECT GUTENBERG EBOOK X ***\n")
    assert read_book(tmp_path / "empty.txt") is None
    assert list(book_documents(tmp_path)) == []


def test_shared_gutenberg_files(tmp_path, shared_data):
    SHARED = Path(shared_data("books", "gutenberg"))
    # chesterton-ball has a real PG footer and a non-UTF-8 byte; shakespeare-caesar is Latin-1.
    for name, offset in (("chesterton-ball.txt", 227337), ("shakespeare-caesar.txt", 3843)):
        with pytest.raises(CorruptInputError, match=f"{name}.*byte offset {offset}"):
            read_book(SHARED / name, SHARED)
    ball = read_book(SHARED / "chesterton-ball.txt", SHARED, encoding_fallback="latin-1")
    assert ball.title == "The Ball and The Cross"
    assert ball.sentences[-1].endswith("fallen haphazard in the pattern of a cross.")
    assert not any("Gutenberg" in s or "SMALL PRINT" in s for s in ball.sentences)
    shutil.copy(SHARED / "melville-moby_dick.txt", tmp_path / "moby.txt")  # CRLF file
    moby = read_book(tmp_path / "moby.txt")
    assert moby.title == "Moby Dick" and not any("\r" in s for s in moby.sentences)
    assert "Call me Ishmael." in moby.sentences


# ------------------------------------------------------------------------------ compressed books (gzip, bz2)
CUTS = ROOT / "tests" / "fixtures" / "corpus" / "books"  # real cuts; sources and licence in its README.md
DICKENS = "pg924_dickens-charles__to-be-read-at-dusk-cut.txt.gz"
THOREAU = "pg71_thoreau-henry-david__on-the-duty-of-civil-disobedience-cut.txt.bz2"


def test_gzip_and_bz2_books_give_exactly_their_sentences():
    docs = {d.doc_id: d for d in book_documents(CUTS)}
    assert list(docs) == [f"book:{THOREAU}", f"book:{DICKENS}"]  # sorted by path
    dickens, thoreau = docs[f"book:{DICKENS}"], docs[f"book:{THOREAU}"]
    # "[Picture: Book cover]" is not a title; the title page lines and the transcriber's line are not sentences.
    assert dickens.title == "pg924_dickens-charles__to-be-read-at-dusk-cut"
    assert dickens.sentences == [
        "ONE, two, three, four, five.",
        "There were five of them.",
        "Five couriers, sitting on a bench outside the convent on the summit of the Great St. Bernard in Switzerland, "
        "looking at the remote heights, stained by the setting sun as if a mighty quantity of red wine had been "
        "broached upon the mountain top, and had not yet had time to sink into the snow.",
        "This is not my simile.",
        "It was made for the occasion by the stoutest courier, who was a German.",
        "None of the others took any more notice of it than they took of me, sitting on another bench on the other "
        "side of the convent door, smoking my cigar, like them, and—also like them—looking at the reddened snow, and at "
        "the lonely shed hard by, where the bodies of belated travellers, dug out of it, slowly wither away, knowing no "
        "corruption in that cold region.",
        "The wine upon the mountain top soaked in as we looked; the mountain became white; the sky, a very dark blue; "
        "the wind rose; and the air turned piercing cold.",
        "The five couriers buttoned their rough coats.",
        "There being no safer man to imitate in all such proceedings than a courier, I buttoned mine.",
    ]
    assert thoreau.title == "pg71_thoreau-henry-david__on-the-duty-of-civil-disobedience-cut"
    assert thoreau.sentences == [
        "I heartily accept the motto,—“That government is best which governs least;” and I should like to see it "
        "acted up to more rapidly and systematically.",
        "Carried out, it finally amounts to this, which also I believe—“That government is best which governs not at "
        "all;” and when men are prepared for it, that will be the kind of government which they will have.",
        "Government is at best but an expedient; but most governments are usually, and all governments are sometimes, "
        "inexpedient.",
        "The objections which have been brought against a standing army, and they are many and weighty, and deserve to "
        "prevail, may also at last be brought against a standing government.",
        "The standing army is only an arm of the standing government.",
        "The government itself, which is only the mode which the people have chosen to execute their will, is equally "
        "liable to be abused and perverted before the people can act through it.",
        "Witness the present Mexican war, the work of comparatively a few individuals using the standing government as "
        "their tool; for, in the outset, the people would not have consented to this measure.",
    ]


def test_compression_is_read_from_magic_bytes_not_the_name(tmp_path):
    import bz2
    import gzip

    text = gzip.decompress((CUTS / DICKENS).read_bytes())
    (tmp_path / "looks-plain.txt").write_bytes(bz2.compress(text))
    (tmp_path / "BZh-start.txt").write_bytes(b"BZh, said the bee. " + text)  # plain text that starts like bz2
    docs = {d.doc_id: d for d in book_documents(tmp_path)}
    assert docs["book:looks-plain.txt"].sentences == read_book(CUTS / DICKENS).sentences
    assert docs["book:BZh-start.txt"].sentences[0] == "BZh, said the bee."


def test_broken_compressed_books_name_the_file(tmp_path):
    import bz2
    import gzip

    text = gzip.decompress((CUTS / DICKENS).read_bytes())
    (tmp_path / "cut-short.txt.gz").write_bytes((CUTS / DICKENS).read_bytes()[:300])
    (tmp_path / "cut-short.txt.bz2").write_bytes((CUTS / THOREAU).read_bytes()[:300])
    for name, kind in (("cut-short.txt.gz", "gzip"), ("cut-short.txt.bz2", "bz2")):
        with pytest.raises(CorruptInputError) as info:
            read_book(tmp_path / name, tmp_path)
        assert str(info.value) == (f"{tmp_path / name}: truncated {kind} data: the file ends at compressed byte 300, "
                                   f"inside {'member' if kind == 'gzip' else 'stream'} 1 (no end-of-stream marker)")
    # Invalid UTF-8 inside the archive: the offset and line are those of the decompressed text.
    at = text.index(b"There were five")
    (tmp_path / "latin.txt.gz").write_bytes(gzip.compress(text[:at] + b"\xe9" + text[at:]))
    with pytest.raises(CorruptInputError) as info:
        read_book(tmp_path / "latin.txt.gz", tmp_path)
    assert str(info.value).startswith(f"{tmp_path / 'latin.txt.gz'}: not valid UTF-8 at byte offset {at} of the "
                                      f"gzip-decompressed text (line 17, byte 0xe9)")
    assert text[:at].count(b"\n") + 1 == 17  # grep -n agrees: "There were five" is on line 17
    # An archive of nothing is an empty book (skipped and counted by CorpusGen), like a 0-byte .txt.
    (tmp_path / "nothing.txt.bz2").write_bytes(bz2.compress(b""))
    assert read_book(tmp_path / "nothing.txt.bz2") is None
