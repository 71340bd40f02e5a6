"""The corpus node's settings (``corpus.*``, node ``CorpusGen`` and ``albert-pipeline ingest``)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from config.languages import ISO_639_1, SENTENCE_SPLITTERS, without_english
from config.schema import Section, check, without_defaults

# What CorpusGen and ``albert-pipeline ingest`` read under the folders unless told otherwise: both Wikipedia formats
# (``pages-articles`` XML dumps and WikiExtractor's ``AA/wiki_NN`` files, each plain or compressed) and plain or
# compressed books. One definition, so the DAG and ``ingest`` accept the same folders.
WIKIPEDIA_GLOBS = ("*pages-articles*.xml*", "**/wiki_*")
BOOKS_GLOBS = ("**/*.txt", "**/*.txt.gz", "**/*.txt.bz2")
# How a Wikipedia file is read: ``auto`` tells each file's format from its first bytes (and logs it).
WIKIPEDIA_FORMATS = ("auto", "xml", "wikiextractor")


@dataclass
class CorpusConfig(Section):
    """Raw corpora → clean documents (node ``CorpusGen``)."""

    wikipedia_dir: Optional[str] = None  # pages-articles*.xml[.bz2|.gz] dumps and/or WikiExtractor AA/wiki_NN files
    wikipedia_glob: List[str] = field(default_factory=lambda: list(WIKIPEDIA_GLOBS))  # patterns under wikipedia_dir
    wikipedia_format: str = "auto"  # one of WIKIPEDIA_FORMATS
    books_dir: Optional[str] = None  # folder tree of books: .txt, .txt.gz, .txt.bz2 (BookCorpus-style)
    books_glob: List[str] = field(default_factory=lambda: list(BOOKS_GLOBS))  # patterns under books_dir
    min_doc_chars: int = 200
    dedupe: bool = True
    book_encoding_fallback: Optional[str] = None  # e.g. "latin-1"; None = non-UTF-8 is an error
    num_shards: int = 4
    # How paragraphs are cut into sentences (config/languages.py): english | multilingual; None: the language's.
    sentence_splitter: Optional[str] = None
    # Documents tagged by language (components/corpus/language_tags.py). ``languages``: the run's languages, filled
    # from ``language`` for a run of several (or when a source is marked below), never set by hand. A source's
    # language: an ISO 639-1 code or ``auto`` (the language identifier per document); None: an XML dump's own, and
    # ``auto`` for WikiExtractor output and books. A document in no listed language is dropped and counted; above
    # this share of the tagged documents the run stops.
    languages: Optional[List[str]] = None
    wikipedia_language: Optional[str] = None
    books_language: Optional[str] = None
    max_unlisted_language_share: float = 0.05

    # The folders are the Importers' source URIs (their artifacts are CorpusGen's inputs), not parameters.
    INPUT_FIELDS = ("wikipedia_dir", "books_dir")
    # Left out of the JSON at their defaults, so a run that tags nothing keeps its cache keys.
    TAGGING_FIELDS = ("languages", "wikipedia_language", "books_language", "max_unlisted_language_share")

    def to_dict(self) -> Dict[str, Any]:
        """Every field, less the language settings at English's values and the tagging settings at their defaults
        (a single-language run keeps its cache keys)."""
        return without_defaults(self, without_english(self, "corpus", super().to_dict()), self.TAGGING_FIELDS)

    def params(self) -> Dict[str, Any]:
        return {k: v for k, v in self.to_dict().items() if k not in self.INPUT_FIELDS}

    def validate(self) -> "CorpusConfig":
        check(self.wikipedia_dir or self.books_dir, "corpus", None, "at least one of corpus.wikipedia_dir / corpus.books_dir")
        check(self.min_doc_chars >= 0, "corpus.min_doc_chars", self.min_doc_chars, ">= 0")
        check(self.num_shards >= 1, "corpus.num_shards", self.num_shards, ">= 1")
        check(self.wikipedia_format in WIKIPEDIA_FORMATS, "corpus.wikipedia_format", self.wikipedia_format,
              f"one of {', '.join(WIKIPEDIA_FORMATS)}")
        for name, patterns in (("corpus.wikipedia_glob", self.wikipedia_glob), ("corpus.books_glob", self.books_glob)):
            check(bool(patterns), name, patterns, "at least one pattern")
            for pattern in patterns:
                check(bool(pattern) and not pattern.startswith("/") and "://" not in pattern
                      and ".." not in pattern.split("/"), name, pattern,
                      "a pattern relative to its folder, without '..' (lineage records only the folder)")
        check(self.sentence_splitter in (None,) + SENTENCE_SPLITTERS, "corpus.sentence_splitter",
              self.sentence_splitter, "|".join(SENTENCE_SPLITTERS))
        for name in ("wikipedia_language", "books_language"):
            value = getattr(self, name)
            check(value in (None, "auto") or value in (self.languages or ISO_639_1), f"corpus.{name}", value,
                  f"auto or one of the run's languages (language={list(self.languages or [])})"
                  if self.languages else "auto or an ISO 639-1 code")
        check(0 <= self.max_unlisted_language_share <= 1, "corpus.max_unlisted_language_share",
              self.max_unlisted_language_share, "in [0, 1]")
        if self.book_encoding_fallback:
            import codecs  # lazy: on one branch (adds nothing)

            try:
                codecs.lookup(self.book_encoding_fallback)
            except LookupError:
                check(False, "corpus.book_encoding_fallback", self.book_encoding_fallback, "a Python codec name")
        return self
