"""Per-document measures and the mergeable statistics of a span (the accumulator of a Beam ``CombineFn``).

Per document (:func:`measure_document`), on its sentences (one sentence = one line of the corpus format, joined by
newlines into the document's text) and its words (``text_units``):

* size: characters (``Document.num_chars``, sentences without separators), words, whitespace words, characters in
  words (non-whitespace characters), lines;
* Gopher's quality measures (Rae et al. 2021, A1.1): mean word length, ``#`` per word, ellipses (``...``, ``…``) per
  word, share of words without a letter, English stop words (for the language label only: ``text_units``);
  and one of ours: letters per character of words (random bytes decoded as Latin-1, or UTF-8 read as Latin-1,
  are half symbols and marks);
* Gopher's repetition measures: duplicate lines (a line equal to an earlier line of the document) and their
  characters; for n = 2, 3, 4 the characters of the most frequent word n-gram times its count (n-grams occurring
  at least twice; ties go to the one that occurs first); for n = 5..10 the characters of the words covered by an
  n-gram that repeats an earlier one (overlaps counted once). Unlike datatrove, which divides by ``len(text)`` and
  walks n-grams greedily, every character share here has the characters *in words* as denominator and counts
  whole covered words, so each lies in [0, 1] exactly. Words are whitespace words with their punctuation attached
  (not NLTK tokens), so a mean word length counts the punctuation too.

A document breaking a :class:`DocumentRules` rule is *flagged* by it. The span statistics (:class:`SpanStats`)
keep, per (source, language) group, the sums of those counts and the documents and characters each rule flags,
plus a words-per-document histogram with fixed power-of-two buckets: all **exact**. Two sketches are span-wide:
the unigram counts of content tokens (``sketches.TopCounter``: exact up to ``2 * unigram_capacity`` distinct
tokens, then Misra–Gries-bounded) and the **sampled** bottom-k of documents with MinHash signatures
(``near_duplicates.MinHashSample``: within-span and cross-span duplicate shares), and one such sample per source
location when the documents name theirs (``SpanStats.source_samples``). Memory is flat in the span's
size: groups x counts + ``2 * unigram_capacity`` tokens + ``sample_size`` signatures.

**The measured sample.** Measuring a document costs about 1.4 µs of CPU per character (tokens, n-grams, scripts),
more than PretrainingDataGen spends on it (about 0.9 µs), so a span larger than
``SketchSettings.measured_characters`` is measured on a sample: each document is read and counted (``SpanStats.read``: documents and characters, exact),
and measured when its :func:`document_key` is below ``sample_rate * 2**64``, where the rate is that budget over the
span's size (``datagate_beam`` sets it from the shards' bytes before reading them). The key is a MinHash over the
document's lines: the mix of the CRC-32 of its line with the least CRC-32. So it is uniform whatever the document's
length (every document is measured with the same probability, and the sums of the measured documents estimate the
span's shares without weights), the same documents are measured every run, exact duplicates are measured together,
and two documents sharing a share J of their lines are measured together with probability J (as the MinHash sample
below keeps near duplicates together). The groups, the unigram counts and the MinHash sample are of the measured
documents; the checks' counts (``min_documents``, the volume ratio) are the exact ones.
"""
from __future__ import annotations

import dataclasses
import functools
import zlib
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np

from components.datagate.near_duplicates import (MinHasher, MinHashSample, MinHashSettings, mix64, shingle_hashes,
                                                 sort_key)
from components.datagate.sketches import TopCounter
from components.datagate.text_units import (ENGLISH_STOP_WORDS, UNSPACED_LANGUAGES, content_tokens, count_letters,
                                            count_no_letter_words, count_non_space, language, ngram_hashes,
                                            normalized_text, script_counts, token_hashes, words)
from components.text.documents import Document, doc_fingerprint

TOP_NGRAM_SIZES = (2, 3, 4)
DUPLICATE_NGRAM_SIZES = (5, 6, 7, 8, 9, 10)
# Words-per-document histogram: bucket i holds documents with WORD_BUCKET_EDGES[i] <= words < WORD_BUCKET_EDGES[i+1]
# (the last bucket is open): 0, 1, then powers of two up to 2**24 words (a long book is ~2**18).
WORD_BUCKET_EDGES = (0,) + tuple(2**i for i in range(25))
# SpanStats.summary() keeps the content tokens' rank-frequency curve at this many ranks per decade (and the last).
RANKS_PER_DECADE = 10
# The source of a document whose location is not known (CorpusGen records sources only for a corpus with a span
# pattern: components/corpus/corpus_beam.py SOURCES_DIR); its statistics are the span's as a whole.
UNKNOWN_SOURCE = "corpus"


@dataclass(frozen=True)
class DocumentRules:
    """Per-document rules; a document breaking one is flagged by it. Defaults are Gopher's (Rae et al. 2021,
    A1.1, as datatrove's GopherQualityFilter / GopherRepetitionFilter apply them) unless said otherwise."""

    # Gopher's lower bound. Its upper one (100,000 words) is not applied: whole books run to 250,000 in data/large.
    min_words: int = 50
    # Gopher; not applied to unspaced languages (text_units.UNSPACED_LANGUAGES), where a word is one character.
    min_mean_word_length: float = 3.0
    max_mean_word_length: float = 10.0  # Gopher: longer "words" are URLs, code, base64 or binary
    max_symbol_word_ratio: float = 0.1  # Gopher: '#' per word, and ellipses per word, each at most this
    # Gopher asks that 80% of words contain a letter (datatrove's parameter name, max_non_alpha_words_ratio=0.8,
    # reads as the opposite), so at most 20% may have none.
    max_no_letter_word_share: float = 0.2
    # Ours: letters per character of words. Measured, least per document: data/large Wikipedia 0.80, books 0.90;
    # Tang poems 0.75 (a comma every five characters), Debian FAQ zh 0.85; random bytes decoded as Latin-1 0.52-0.55,
    # Chinese UTF-8 decoded as Latin-1 0.37 (English so decoded keeps 0.96: too few non-ASCII characters to matter).
    min_letter_share: float = 0.65
    max_duplicate_line_share: float = 0.3  # Gopher: share of lines repeating an earlier line (by count)
    max_duplicate_line_character_share: float = 0.2  # Gopher: characters in those lines per character
    # Gopher: most frequent 2/3/4-gram's characters times its count per character of words.
    max_top_ngram_share: Tuple[float, ...] = (0.20, 0.18, 0.16)
    # Gopher: characters covered by repeated 5..10-grams per character of words.
    # The two n-gram rules are not applied to unspaced languages either: there an n-gram is of characters, which
    # repeat far more than words (measured: 0.21 and 0.43 of the Debian FAQ's zh and ja text is in repeated
    # character 5-grams, 0.08 of the Tang poems).
    max_duplicate_ngram_share: Tuple[float, ...] = (0.15, 0.14, 0.13, 0.12, 0.11, 0.10)

    def validate(self) -> "DocumentRules":
        if len(self.max_top_ngram_share) != len(TOP_NGRAM_SIZES) or \
                len(self.max_duplicate_ngram_share) != len(DUPLICATE_NGRAM_SIZES):
            raise ValueError(f"one threshold per n-gram size: {TOP_NGRAM_SIZES} and {DUPLICATE_NGRAM_SIZES}")
        return self


# The rules, in report order. "any" (flagged by at least one rule) is counted too.
RULES = ("short", "word_length", "symbols", "no_letter_words", "few_letters", "duplicate_lines", "top_ngrams",
         "duplicate_ngrams")


@dataclass
class DocumentMeasures:
    """What :func:`measure_document` counts in one document (module docstring)."""

    characters: int
    words: int
    whitespace_words: int
    word_characters: int
    letters: int
    hash_symbols: int
    ellipses: int
    no_letter_words: int
    english_stop_words: int
    lines: int
    duplicate_lines: int
    duplicate_line_characters: int
    top_ngram_characters: Dict[int, int]  # n → characters of the most frequent repeated n-gram times its count
    duplicate_ngram_characters: Dict[int, int]  # n → characters of words covered by repeated n-grams
    language: str

    def counts(self) -> Dict[str, int]:
        """The counts, flat, under the names :data:`COUNT_NAMES` uses."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
               if f.name not in ("top_ngram_characters", "duplicate_ngram_characters", "language")}
        out.update({f"top_{n}gram_characters": c for n, c in self.top_ngram_characters.items()})
        out.update({f"duplicate_{n}gram_characters": c for n, c in self.duplicate_ngram_characters.items()})
        return out


# Every count a group sums: the documents, each DocumentMeasures count, and per rule (and "any") the documents and
# characters it flags.
MEASURE_COUNTS = ("characters", "words", "whitespace_words", "word_characters", "letters", "hash_symbols",
                  "ellipses", "no_letter_words", "english_stop_words", "lines", "duplicate_lines",
                  "duplicate_line_characters") + tuple(f"top_{n}gram_characters" for n in TOP_NGRAM_SIZES) + \
    tuple(f"duplicate_{n}gram_characters" for n in DUPLICATE_NGRAM_SIZES)
COUNT_NAMES = ("documents",) + MEASURE_COUNTS + tuple(
    f"flagged_{unit}_{rule}" for rule in RULES + ("any",) for unit in ("documents", "characters"))


def _share(numerator: float, denominator: float) -> float:
    return numerator / denominator if denominator else 0.0


def _repetition(doc_words: Sequence[str]) -> Tuple[Dict[int, int], Dict[int, int]]:
    """(top n-gram characters by n, duplicated n-gram characters by n) of a word sequence (module docstring)."""
    index: Dict[str, int] = {}
    ids = np.array([index.setdefault(w, len(index)) for w in doc_words], dtype=np.uint64)
    lengths = np.fromiter(map(len, doc_words), dtype=np.int64, count=len(doc_words))
    top: Dict[int, int] = {}
    for n in TOP_NGRAM_SIZES:
        hashes = ngram_hashes(ids, n)
        top[n] = 0
        if len(hashes):
            _, first, counts = np.unique(hashes, return_index=True, return_counts=True)
            most = int(counts.max())
            if most > 1:
                start = int(first[counts == most].min())
                top[n] = int(lengths[start:start + n].sum()) * most
    duplicated: Dict[int, int] = {}
    for n in DUPLICATE_NGRAM_SIZES:
        hashes = ngram_hashes(ids, n)
        duplicated[n] = 0
        if len(hashes):
            _, first = np.unique(hashes, return_index=True)
            repeated = np.ones(len(hashes), dtype=bool)
            repeated[first] = False
            starts = np.nonzero(repeated)[0]
            depth = np.cumsum(np.bincount(starts, minlength=len(ids) + 1)
                              - np.bincount(starts + n, minlength=len(ids) + 1))[:-1]
            duplicated[n] = int(lengths[depth > 0].sum())
    return top, duplicated


def measure_document(doc: Document, tokens: Optional[Sequence[str]] = None) -> DocumentMeasures:
    """Measures of one document (module docstring). ``tokens``: its content tokens, when the caller has them."""
    if tokens is None:
        tokens = content_tokens(normalized_text(doc.sentences))
    text = "\n".join(doc.sentences)
    doc_words = words(text)
    seen, duplicate_lines, duplicate_line_chars = set(), 0, 0
    for line in doc.sentences:
        if line in seen:
            duplicate_lines += 1
            duplicate_line_chars += len(line)
        seen.add(line)
    top, duplicated = _repetition(doc_words)
    stop_words = sum(1 for t in tokens if t in ENGLISH_STOP_WORDS)
    return DocumentMeasures(
        characters=doc.num_chars,
        words=len(doc_words),
        whitespace_words=len(text.split()),
        word_characters=count_non_space(text),
        letters=count_letters(text),
        hash_symbols=text.count("#"),
        ellipses=text.count("...") + text.count("…"),
        no_letter_words=count_no_letter_words(text),
        english_stop_words=stop_words,
        lines=len(doc.sentences),
        duplicate_lines=duplicate_lines,
        duplicate_line_characters=duplicate_line_chars,
        top_ngram_characters=top,
        duplicate_ngram_characters=duplicated,
        language=language(script_counts(text), stop_words),
    )


def flags(m: DocumentMeasures, rules: DocumentRules) -> List[str]:
    """The rules (of :data:`RULES`) that ``m`` breaks."""
    out = []
    mean_length = _share(m.word_characters, m.words)
    if m.words < rules.min_words:
        out.append("short")
    if m.language not in UNSPACED_LANGUAGES and m.words and \
            not rules.min_mean_word_length <= mean_length <= rules.max_mean_word_length:
        out.append("word_length")
    if max(_share(m.hash_symbols, m.words), _share(m.ellipses, m.words)) > rules.max_symbol_word_ratio:
        out.append("symbols")
    if _share(m.no_letter_words, m.words) > rules.max_no_letter_word_share:
        out.append("no_letter_words")
    if m.word_characters and _share(m.letters, m.word_characters) < rules.min_letter_share:
        out.append("few_letters")
    if _share(m.duplicate_lines, m.lines) > rules.max_duplicate_line_share or \
            _share(m.duplicate_line_characters, m.characters) > rules.max_duplicate_line_character_share:
        out.append("duplicate_lines")
    if m.language in UNSPACED_LANGUAGES:
        return out  # their n-grams are of characters: Gopher's thresholds are for words (DocumentRules)
    if any(_share(m.top_ngram_characters[n], m.word_characters) > limit
           for n, limit in zip(TOP_NGRAM_SIZES, rules.max_top_ngram_share)):
        out.append("top_ngrams")
    if any(_share(m.duplicate_ngram_characters[n], m.word_characters) > limit
           for n, limit in zip(DUPLICATE_NGRAM_SIZES, rules.max_duplicate_ngram_share)):
        out.append("duplicate_ngrams")
    return out


def word_bucket(num_words: int) -> int:
    """Index of the words-per-document histogram bucket holding ``num_words``."""
    return int(np.searchsorted(WORD_BUCKET_EDGES, num_words, side="right")) - 1


@dataclass
class GroupStats:
    """Exact sums over the documents of one (source, language) group: :data:`COUNT_NAMES` and the words-per-document
    histogram (:data:`WORD_BUCKET_EDGES`)."""

    counts: Dict[str, int] = field(default_factory=lambda: dict.fromkeys(COUNT_NAMES, 0))
    words_histogram: List[int] = field(default_factory=lambda: [0] * len(WORD_BUCKET_EDGES))

    def add(self, m: DocumentMeasures, broken: Iterable[str]) -> "GroupStats":
        counts = self.counts
        counts["documents"] += 1
        for name, value in m.counts().items():
            counts[name] += value
        broken = list(broken)
        for rule in broken + (["any"] if broken else []):
            counts[f"flagged_documents_{rule}"] += 1
            counts[f"flagged_characters_{rule}"] += m.characters
        self.words_histogram[word_bucket(m.words)] += 1
        return self

    def merge(self, other: "GroupStats") -> "GroupStats":
        for name, value in other.counts.items():
            self.counts[name] += value
        self.words_histogram = [a + b for a, b in zip(self.words_histogram, other.words_histogram)]
        return self

    def share(self, numerator: str, denominator: str) -> float:
        """counts[numerator] / counts[denominator], 0 when the denominator is 0."""
        return _share(self.counts[numerator], self.counts[denominator])

    def ratios(self) -> Dict[str, float]:
        """The group's measures as span-level ratios (sums over its documents divided by sums)."""
        c = self.counts
        out = {
            "words_per_document": self.share("words", "documents"),
            "characters_per_document": self.share("characters", "documents"),
            "mean_word_length": self.share("word_characters", "words"),
            "hash_symbols_per_word": self.share("hash_symbols", "words"),
            "ellipses_per_word": self.share("ellipses", "words"),
            "no_letter_word_share": self.share("no_letter_words", "words"),
            "letter_share": self.share("letters", "word_characters"),
            "duplicate_line_share": self.share("duplicate_lines", "lines"),
            "duplicate_line_character_share": self.share("duplicate_line_characters", "characters"),
        }
        for n in TOP_NGRAM_SIZES:
            out[f"top_{n}gram_character_share"] = _share(c[f"top_{n}gram_characters"], c["word_characters"])
        for n in DUPLICATE_NGRAM_SIZES:
            out[f"duplicate_{n}gram_character_share"] = _share(c[f"duplicate_{n}gram_characters"],
                                                              c["word_characters"])
        for rule in RULES + ("any",):
            out[f"flagged_character_share_{rule}"] = self.share(f"flagged_characters_{rule}", "characters")
        return out


@dataclass(frozen=True)
class SketchSettings:
    """Sizes of the span-wide sketches."""

    # Distinct content tokens counted exactly up to twice this, then Misra–Gries (sketches.TopCounter). A half of
    # data/large (20.8 M tokens) kept 95 k tokens; a kept count is low by at most total / (capacity + 1) (416
    # there, against 2,035 for the 1,000th token, the last the unigram drift reads: checks.GateLimits), and the
    # statistics proto carries up to 2 * capacity tokens (4.2 MB for that half).
    unigram_capacity: int = 50_000
    minhash: MinHashSettings = MinHashSettings()
    # Characters measured per span (module docstring, "The measured sample"): about 6 s of one core. A larger span
    # is measured on a sample of its documents of about this size. Measured on ../shared/data/large (238 M
    # characters, 7,228 documents): benchmarks/results/data_gate/README.md.
    measured_characters: int = 4_000_000


_ENCODE = functools.partial(str.encode, encoding="utf-8", errors="surrogatepass")
_KEY_SALT = 0x5A3C_D1E5_0F6B_2947  # keeps the documents' keys independent of the MinHash sample's


def document_key(sentences: Sequence[str], seed: int = 0) -> int:
    """A document's 64-bit sample key (module docstring, "The measured sample"): uniform whatever its length, equal
    for documents sharing the line with the least CRC-32. One C-speed pass over its lines."""
    least = min(map(zlib.crc32, map(_ENCODE, sentences)), default=0)
    return mix64(least ^ mix64(seed ^ _KEY_SALT))


def sample_rate(span_characters: int, measured_characters: int) -> float:
    """The share of a span's documents measured: 1 up to ``measured_characters``, then that budget over the size."""
    return 1.0 if span_characters <= measured_characters else measured_characters / span_characters


@dataclass
class SpanStats:
    """Statistics of one span: exact per-group counts, the unigram sketch and the document sample (module
    docstring). ``rules`` and ``sketch`` are the settings they were computed with."""

    span: int
    rules: DocumentRules
    sketch: SketchSettings
    groups: Dict[Tuple[str, str], GroupStats]
    unigrams: TopCounter
    sample: MinHashSample
    # Every document read, measured or not: {"documents": n, "characters": n}; None: the measured ones (rate 1).
    read: Optional[Dict[str, int]] = None
    sample_rate: float = 1.0  # the share of documents measured (module docstring, "The measured sample")
    # The MinHash sample of each source location's documents, when the documents name their source (not
    # UNKNOWN_SOURCE): the previous-span duplicate checks compare each location with its own last span (checks).
    source_samples: Dict[str, MinHashSample] = field(default_factory=dict)
    # The languages whose groups are of documents tagged with them (a run of several: each file's), not of labels
    # the scripts give; the current span's (the absolute checks per language), not kept in the statistics proto.
    tagged: set = field(default_factory=set)

    def merge(self, other: "SpanStats") -> "SpanStats":
        """Add ``other`` (same span and settings) into self, in place; returns self."""
        if (other.span, other.rules, other.sketch, other.sample_rate) != \
                (self.span, self.rules, self.sketch, self.sample_rate):
            raise ValueError("merging statistics of different spans or settings")
        read, other_read = self.read_counts(), other.read_counts()
        self.read = {name: read[name] + other_read[name] for name in read}
        for key, group in other.groups.items():
            self.groups.setdefault(key, GroupStats()).merge(group)
        self.unigrams.merge(other.unigrams)
        self.sample.merge(other.sample)
        self.tagged |= other.tagged
        for source, sample in other.source_samples.items():
            if source in self.source_samples:
                self.source_samples[source].merge(sample)
            else:
                self.source_samples[source] = sample
        return self

    def total(self) -> GroupStats:
        """All groups summed."""
        out = GroupStats()
        for key in sorted(self.groups):
            out.merge(self.groups[key])
        return out

    def read_counts(self) -> Dict[str, int]:
        """The documents and characters of the whole span (every document read, measured or not)."""
        if self.read is not None:
            return dict(self.read)
        counts = self.total().counts
        return {"documents": counts["documents"], "characters": counts["characters"]}

    def characters_by_language(self) -> Dict[str, int]:
        """Characters per language label: exact when every document was measured, else the measured documents'
        scaled to the span's characters (an estimate)."""
        out: Dict[str, int] = {}
        for (_, lang), group in sorted(self.groups.items()):
            out[lang] = out.get(lang, 0) + group.counts["characters"]
        measured, read = sum(out.values()), self.read_counts()["characters"]
        if measured and read != measured:
            out = {lang: int(round(chars * read / measured)) for lang, chars in out.items()}
        return out

    def characters_by_source(self) -> Dict[str, int]:
        """Characters per source location of the measured documents (one entry, UNKNOWN_SOURCE, when the documents
        do not name theirs)."""
        out: Dict[str, int] = {}
        for (source, _), group in sorted(self.groups.items()):
            out[source] = out.get(source, 0) + group.counts["characters"]
        return out

    def by_source(self) -> Dict[str, GroupStats]:
        """Each source location's groups summed (its languages together)."""
        out: Dict[str, GroupStats] = {}
        for (source, _), group in sorted(self.groups.items()):
            out.setdefault(source, GroupStats()).merge(group)
        return out

    def by_tagged_language(self) -> Dict[str, GroupStats]:
        """Each tagged language's groups summed (its locations together): :attr:`tagged`'s."""
        out: Dict[str, GroupStats] = {}
        for (_, language), group in sorted(self.groups.items()):
            if language in self.tagged:
                out.setdefault(language, GroupStats()).merge(group)
        return out

    def summary(self) -> Dict[str, Any]:
        """The span's statistics in brief, as JSON (the data gate's ``gate.json``, which the report and the model card
        read): the whole span's sizes, every ratio of :meth:`GroupStats.ratios` under its name, the sample's
        ``duplicate_document_share``, the characters per language, the words-per-document histogram
        (:data:`WORD_BUCKET_EDGES`) and the content tokens' rank-frequency curve (``[rank, count]`` at
        :data:`RANKS_PER_DECADE` ranks per decade and the last kept rank; counts as ``sketches.TopCounter`` keeps
        them). ``documents`` and ``characters`` are the whole span's; with a ``sample_rate`` below 1 the rest is of
        the ``measured_documents`` (module docstring, "The measured sample")."""
        total = self.total()
        c = total.counts
        read = self.read_counts()
        counts = [count for _, count in self.unigrams.most_common()]
        ranks = sorted({int(round(10 ** (k / RANKS_PER_DECADE)))
                        for k in range(int(RANKS_PER_DECADE * np.log10(len(counts))) + 1)} | {len(counts)}
                       ) if counts else []
        return {
            "span": self.span, "documents": read["documents"], "characters": read["characters"],
            "sample_rate": self.sample_rate, "measured_documents": c["documents"],
            "measured_characters": c["characters"], "words": c["words"],
            "tokens": self.unigrams.total, "distinct_tokens": len(counts),
            "tokens_per_document": _share(self.unigrams.total, c["documents"]),
            "ratios": total.ratios(),
            "duplicate_document_share": self.sample.duplicate_share(),
            "characters_by_language": self.characters_by_language(),
            **({"by_source": {source: {"measured_documents": g.counts["documents"],
                                       "measured_characters": g.counts["characters"],
                                       "flagged_character_share_any": g.share("flagged_characters_any", "characters")}
                              for source, g in self.by_source().items()}}
               if set(self.characters_by_source()) - {UNKNOWN_SOURCE} else {}),
            "words_histogram": {"edges": list(WORD_BUCKET_EDGES), "documents": list(total.words_histogram)},
            "token_ranks": [[rank, counts[rank - 1]] for rank in ranks if rank <= len(counts)],
        }


class _Once:
    """A signature computed on the first call and kept (the span's sample and its location's may both want it)."""

    def __init__(self, make):
        self._make, self._value = make, None

    def __call__(self):
        if self._value is None:
            self._value = self._make()
        return self._value


class SpanStatsCombiner:
    """The statistics of one span as a Beam ``CombineFn`` would compute them (same method names), in plain Python:
    ``create_accumulator`` → ``add_input`` per :class:`Document` → ``merge_accumulators`` → ``extract_output``."""

    def __init__(self, span: int, rules: DocumentRules = DocumentRules(),
                 sketch: SketchSettings = SketchSettings(), sample_rate: float = 1.0) -> None:
        """``sample_rate``: the share of documents measured (module docstring, "The measured sample"; the shell
        sets it with :func:`sample_rate` from the span's size)."""
        if not 0.0 < sample_rate <= 1.0:
            raise ValueError(f"sample_rate must be in (0, 1], got {sample_rate}")
        self.span = span
        self.rules = rules.validate()
        self.sketch = sketch
        self.hasher = MinHasher(sketch.minhash)
        self.sample_rate = sample_rate
        self._threshold = int(sample_rate * 2**64)

    def create_accumulator(self) -> SpanStats:
        return SpanStats(span=self.span, rules=self.rules, sketch=self.sketch, groups={},
                         unigrams=TopCounter(self.sketch.unigram_capacity),
                         sample=MinHashSample(self.sketch.minhash.sample_size),
                         read={"documents": 0, "characters": 0}, sample_rate=self.sample_rate)

    def measures(self, doc: Document) -> bool:
        """Whether ``doc`` is in the measured sample."""
        return self.sample_rate >= 1.0 or document_key(doc.sentences, self.sketch.minhash.seed) < self._threshold

    def add_input(self, acc: SpanStats, doc: Document) -> SpanStats:
        acc.read["documents"] += 1
        acc.read["characters"] += doc.num_chars
        if not self.measures(doc):
            return acc
        tokens = content_tokens(normalized_text(doc.sentences))
        m = measure_document(doc, tokens)
        # A document tagged with its language (a run of several: its file's) is grouped by its tag; otherwise by the
        # label its scripts give (text_units.language).
        acc.groups.setdefault((doc.source, doc.language or m.language), GroupStats()).add(m, flags(m, self.rules))
        if doc.language:
            acc.tagged.add(doc.language)
        acc.unigrams.add_counts(Counter(tokens))
        if tokens:
            shingles = shingle_hashes(token_hashes(tokens), self.sketch.minhash.shingle_size)
            key = sort_key(self.hasher.sample_key(shingles), doc_fingerprint(doc))
            signature = _Once(lambda: self.hasher.signature(shingles))
            acc.sample.add(key, signature)
            if doc.source != UNKNOWN_SOURCE:
                if doc.source not in acc.source_samples:
                    acc.source_samples[doc.source] = MinHashSample(self.sketch.minhash.sample_size)
                acc.source_samples[doc.source].add(key, signature)
        return acc

    def merge_accumulators(self, accumulators: Iterable[SpanStats]) -> SpanStats:
        accumulators = iter(accumulators)
        out = next(accumulators, None) or self.create_accumulator()
        for acc in accumulators:
            out.merge(acc)
        return out

    def extract_output(self, acc: SpanStats) -> SpanStats:
        return acc

    def compute(self, docs: Iterable[Document]) -> SpanStats:
        """All of ``docs`` in one accumulator (what a single worker would do)."""
        acc = self.create_accumulator()
        for doc in docs:
            self.add_input(acc, doc)
        return self.extract_output(acc)
