"""Real-looking broken inputs, cut from the bundled samples in ``data/sample`` (built in tmp_path)."""
from __future__ import annotations

import bz2
import os
import signal
import time
from typing import Optional

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SAMPLE = os.path.join(REPO, "data", "sample")
WIKI_DUMP = os.path.join(SAMPLE, "wikipedia", "enwiki-sample-pages-articles.xml.bz2")
BOOK = os.path.join(SAMPLE, "books", "austen-persuasion.txt")
SPM_MODEL = os.path.join(SAMPLE, "vocab", "30k-clean.model")
TEN_MB = 10_000_000


def wiki_xml() -> str:
    with bz2.open(WIKI_DUMP) as f:
        return f.read().decode("utf-8")


def fail_renames_after_the_first(monkeypatch, filesystem, message: str) -> list:
    """Make ``filesystem.rename`` (a Beam filesystem class) move one file, then raise ``OSError(message)``: a storage
    fault in the middle of publishing. Returns the list of what was moved (filled as it happens)."""
    real, moved = filesystem.rename, []

    def rename(self, sources, destinations):
        if moved:
            raise OSError(message)
        moved.extend(destinations)
        return real(self, sources, destinations)

    monkeypatch.setattr(filesystem, "rename", rename)
    return moved


def write(path, data) -> str:
    path = str(path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode("utf-8"))
    return path


def truncated_bz2(folder) -> str:
    data = open(WIKI_DUMP, "rb").read()
    return write(os.path.join(folder, "enwiki-truncated-pages-articles.xml.bz2"), data[: len(data) * 2 // 3])


def corrupt_bz2(folder) -> str:
    """Full length, but a run of bytes in the middle overwritten (a bad disk block / bit rot)."""
    data = bytearray(open(WIKI_DUMP, "rb").read())
    mid = len(data) // 2
    data[mid:mid + 64] = bytes((b ^ 0x5A) for b in data[mid:mid + 64])
    return write(os.path.join(folder, "enwiki-bitrot-pages-articles.xml.bz2"), bytes(data))


def malformed_xml(folder) -> str:
    """The dump with a page whose closing tags are mangled (a bad XML edit), bz2-compressed."""
    xml = wiki_xml()
    i = xml.index("<title>Anarchism</title>")
    broken = xml[:i] + "<title>Anarchism</titel>" + xml[i + len("<title>Anarchism</title>"):]
    return write(os.path.join(folder, "enwiki-malformed-pages-articles.xml.bz2"), bz2.compress(broken.encode()))


def page_xml(page_id: int, title: str, text: str) -> str:
    from xml.sax.saxutils import escape

    title, text = escape(title), escape(text)
    return (f"  <page>\n    <title>{title}</title>\n    <ns>0</ns>\n    <id>{page_id}</id>\n    <revision>\n"
            f"      <id>{page_id}0</id>\n      <model>wikitext</model>\n      <format>text/x-wiki</format>\n"
            f"      <text xml:space=\"preserve\">{text}</text>\n    </revision>\n  </page>\n")


def dump_with_pages(folder, name: str, *pages: str, keep_sample: bool = True) -> str:
    """The sample dump (or only its header) with extra ``<page>`` elements before ``</mediawiki>``."""
    xml = wiki_xml()
    if not keep_sample:
        xml = xml[: xml.index("<page>")] + "</mediawiki>\n"
    xml = xml.replace("</mediawiki>", "".join(pages) + "</mediawiki>")
    return write(os.path.join(folder, name), bz2.compress(xml.encode("utf-8")))


def book_text() -> str:
    return open(BOOK, encoding="utf-8").read()


def ten_mb_line(prefix: Optional[str] = None) -> str:
    """The book's prose on one single 10 MB line (a file whose line breaks were lost)."""
    line = " ".join(book_text().split())
    if prefix:
        line = prefix + " " + line
    return ((line + " ") * (TEN_MB // len(line) + 1))[:TEN_MB]


def non_utf8_book(folder) -> str:
    """The book as Latin-1/cp1252 bytes (curly quotes, accents): what a scraped book folder often has."""
    text = book_text().replace("Elliot", "Elliôt", 3)
    data = text.encode("cp1252", errors="replace")
    assert data != text.encode("utf-8")
    return write(os.path.join(folder, "elliot-cp1252.txt"), data)


def written_documents(documents_dir) -> list:
    """The documents (each a list of sentences) of a documents folder's shards, in shard order."""
    from components.corpus import corpus_beam
    from components.text.documents import parse_text_blocks

    docs = []
    for path in corpus_beam.document_shards(str(documents_dir)):
        with open(path, encoding="utf-8") as f:
            docs.extend(parse_text_blocks(f))
    return docs


def kill_when(proc, ready, what: str, *, timeout: float, group: bool = False, poll: float = 0.05) -> None:
    """SIGKILL ``proc`` (its whole process group with ``group``: Beam's workers too) as soon as ``ready()``; fail
    if it ends first or ``timeout`` seconds pass."""
    deadline = time.time() + timeout
    while not ready():
        assert proc.poll() is None, f"the run ended (rc {proc.returncode}) before {what}"
        assert time.time() < deadline, f"timed out waiting for {what}"
        time.sleep(poll)
    if group:
        os.killpg(proc.pid, signal.SIGKILL)
    else:
        proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL
