"""Which language each document is, in a run that tags documents (``corpus.languages``: a run of several
languages, or a single-language run given ``corpus.wikipedia_language`` / ``corpus.books_language``).

A document's tag comes from its source:

- a MediaWiki XML dump: the dump's own language (``<mediawiki xml:lang>``, else its ``<siteinfo><dbname>``, e.g.
  ``zhwiki``), unless ``corpus.wikipedia_language`` names one;
- WikiExtractor output (which keeps no header) and books: ``corpus.wikipedia_language`` / ``corpus.books_language``
  (a code), or ``auto``, the default in a run of several languages;
- ``auto``: the language identifier (:mod:`components.text.langid`) on the document's first sentences.

Each document is split into sentences by its own language's profile (``corpus.sentence_splitter`` when it is set);
under ``auto`` the document is read once with the multilingual splitter to identify it, and again with its language's
splitter when that differs. A document in no listed language is dropped and counted (``unlisted_language_documents``
of its source, and by the identified code under ``unlisted_languages``); its share of all tagged documents above
``corpus.max_unlisted_language_share`` stops the run. In a run of several languages a document's id is prefixed by
its language (``zh:wiki:12``), since two Wikipedias share page ids; a single-language run's ids do not change.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable, Optional, Tuple

from components.text.corrupt_input import CorruptInputError
from components.text.documents import Document
from components.text.langid import identify_document
from config.languages import profile

AUTO = "auto"
# The tag of a document the identifier gives no two-letter code (no letters, or a language like ``ceb``).
UNKNOWN = "und"
# The splitter that reads a document before its language is known (it holds the English rules and every script's).
PROVISIONAL_SPLITTER = "multilingual"
UNLISTED_KEY = "unlisted_language_documents"


@dataclass(frozen=True)
class LanguageTagging:
    """How a run tags documents (see the module docstring). ``languages`` empty: nothing is tagged (a
    single-language run's default: its documents, ids and files are what they were)."""

    languages: Tuple[str, ...] = ()
    wikipedia_language: Optional[str] = None
    books_language: Optional[str] = None
    sentence_splitter: Optional[str] = None  # corpus.sentence_splitter as set (None: each language's own)
    max_unlisted_share: float = 0.05

    @property
    def active(self) -> bool:
        return bool(self.languages)

    @property
    def several(self) -> bool:
        """A run of several languages: ids prefixed, one documents file per language and shard."""
        return len(self.languages) > 1

    @classmethod
    def from_config(cls, corpus) -> "LanguageTagging":
        """From a :class:`components.corpus.corpus_config.CorpusConfig`."""
        return cls(languages=tuple(corpus.languages or ()), wikipedia_language=corpus.wikipedia_language,
                   books_language=corpus.books_language, sentence_splitter=corpus.sentence_splitter,
                   max_unlisted_share=corpus.max_unlisted_language_share)

    def setting(self, source: str) -> Optional[str]:
        """The source's language setting: a code, ``auto``, or None (the dump's own; ``auto`` elsewhere)."""
        return self.wikipedia_language if source == "wikipedia" else self.books_language

    def splitter(self, language: Optional[str], default: str = "english") -> str:
        """The sentence splitter of a document in ``language``."""
        if self.sentence_splitter:
            return self.sentence_splitter
        if not self.active:
            return default
        return profile(language).sentence_splitter if language in self.languages else PROVISIONAL_SPLITTER

    def document(self, source: str, own_language: Optional[str],
                 make: Callable[[str], Optional[Document]]) -> Optional[Document]:
        """The tagged document that ``make(splitter)`` builds (None when too short), read by its language's
        splitter. ``own_language``: what the file says of itself (an XML dump's language), else None."""
        setting = self.setting(source)
        language = setting if setting not in (None, AUTO) else (own_language if setting is None else None)
        doc = make(self.splitter(language) if language else self.sentence_splitter or PROVISIONAL_SPLITTER)
        if doc is None:
            return None
        if language is None:
            language = identify_document(doc.sentences) or UNKNOWN
            if language in self.languages and self.splitter(language) != (self.sentence_splitter or PROVISIONAL_SPLITTER):
                doc = make(self.splitter(language))
                if doc is None:
                    return None
        doc_id = f"{language}:{doc.doc_id}" if self.several else doc.doc_id
        return dataclasses.replace(doc, doc_id=doc_id, language=language)

    def listed(self, doc: Document) -> bool:
        return doc.language in self.languages

    def check_unlisted(self, unlisted: int, kept: int, where: str) -> None:
        """Stop the run (:class:`CorruptInputError` naming the setting) when the unlisted share is above the limit."""
        total = unlisted + kept
        share = unlisted / total if total else 0.0
        if share > self.max_unlisted_share:
            raise CorruptInputError(where, f"{unlisted} of {total} documents ({share:.1%}) are in no language of "
                                    f"language={list(self.languages)}, above corpus.max_unlisted_language_share="
                                    f"{self.max_unlisted_share} (list their languages, or mark the source with "
                                    "corpus.wikipedia_language / corpus.books_language)")

