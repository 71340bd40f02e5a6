"""Benchmark contamination as GPT-3 measured it (Brown et al. 2020, appendix C): a benchmark dev passage is
*contaminated* when any of its 13-grams occurs in the pretraining corpus; the measure is the share of dev passages
that are.

N-grams are of content tokens (``text_units``: ALBERT-normalised, lower case, no accents, punctuation dropped),
so for Chinese and Japanese, where every character is a token, they are character 13-grams: no separate rule.
A passage with fewer than 13 tokens has no 13-gram; it is counted as ``short`` and left out of the share
(GPT-3 used a smaller N for benchmarks of short examples; reading passages, what this gate checks, are long).

Per benchmark and in total. A passage id is ``<benchmark>:<rest>`` (``datagate_beam.dev_passages``), so one pass
over the corpus gives every benchmark's share (:attr:`ContaminationResult.benchmarks`). The *total* is over every
span the pipeline pretrained on so far, not only this one: the combiner is given the passage ids an earlier result
found (the baseline's, the last span that went through the gate, which carried its own baseline's forward), and the
total is their union with this span's, kept to the passages of the current dev sets (a changed dev set drops the
ids it no longer has).

Memory: the set of dev n-gram hashes (small: a dev set is thousands of passages) and the subset found so far; the
corpus streams past it (:class:`ContaminationCombiner`, the methods of a Beam ``CombineFn``). N-gram hashes are
64-bit (``text_units.ngram_hashes``): a false match needs a 64-bit collision.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional, Sequence, Set, Tuple

import numpy as np

from components.datagate.text_units import (NGRAM_HASH_BASE, TokenVocabulary, content_token_bytes,
                                            content_token_hashes, ngram_hashes)
from components.text.documents import Document

# GPT-3's n for most benchmarks.
NGRAM_SIZE = 13
# The dev n-grams' prefilter: a bit per value of a hash's top PREFILTER_BITS bits (8 MiB as bytes). With the 611 k
# n-grams of SQuAD v1.1 + RACE dev, 7 % of a document's n-grams pass it to the exact binary search.
PREFILTER_BITS = 23


def _unique(values: np.ndarray) -> np.ndarray:
    """``np.unique(values)`` for uint64 (sorted, distinct), by a sort: ``np.unique`` costs ~50 µs on a small array."""
    values = np.sort(values)
    return values[np.concatenate(([True], values[1:] != values[:-1]))] if len(values) else values


def passage_ngrams(sentences: Sequence[str], n: int = NGRAM_SIZE) -> np.ndarray:
    """Unique sorted uint64 hashes of the content-token n-grams of a text given as sentences (or one string)."""
    return _unique(ngram_hashes(content_token_hashes([sentences] if isinstance(sentences, str) else sentences), n))


class DevNgrams:
    """The n-grams of a benchmark's dev passages: ``passages`` is a sequence of (passage id, text)."""

    def __init__(self, passages: Iterable[Tuple[str, str]], n: int = NGRAM_SIZE) -> None:
        self.n = n
        tokens = {pid: content_token_bytes([text]) for pid, text in passages}
        # The tokens of the passages: a document n-gram with any other token is none of theirs (document_ngrams).
        self.vocabulary = TokenVocabulary(t for words in tokens.values() for t in words)
        hash_of = self.vocabulary.token_hash.__getitem__  # passage_ngrams' token hashes, each token hashed once
        self.by_passage: Dict[str, np.ndarray] = {
            pid: _unique(ngram_hashes(np.fromiter(map(hash_of, words), dtype=np.uint64, count=len(words)), n))
            for pid, words in tokens.items()}
        parts = [h for h in self.by_passage.values() if len(h)]
        self.all = _unique(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.uint64)
        self.prefilter = np.zeros(1 << PREFILTER_BITS, dtype=bool)
        self.prefilter[(self.all >> np.uint64(64 - PREFILTER_BITS)).astype(np.int64)] = True

    def document_ngrams(self, sentences: Sequence[str]) -> np.ndarray:
        """The hashes of a document's n-grams whose tokens are all tokens of the dev passages, in position order:
        ``ngram_hashes(content_token_hashes(sentences), n)`` less the n-grams that hold a token of no dev passage,
        which cannot be dev n-grams (but for a 64-bit collision of n-gram hashes, as any match)."""
        hashes, known = self.vocabulary.known_token_hashes(sentences)
        count = len(hashes) - self.n + 1
        if count <= 0:
            return np.zeros(0, dtype=np.uint64)
        unknown = np.concatenate(([0], np.cumsum(~known)))
        starts = np.flatnonzero(unknown[self.n:] == unknown[:count])  # n-grams of known tokens only
        if not len(starts):
            return np.zeros(0, dtype=np.uint64)
        if 4 * len(starts) >= count:
            return ngram_hashes(hashes, self.n)[starts]
        out = hashes[starts]
        with np.errstate(over="ignore"):
            for j in range(1, self.n):
                out *= NGRAM_HASH_BASE
                out += hashes[starts + j]
        return out

    def find(self, hashes: np.ndarray) -> np.ndarray:
        """The values of ``hashes`` (uint64) that are dev n-grams, unique and sorted: those whose top bits the
        prefilter has, then a binary search in the sorted dev set (exact)."""
        dev = self.all
        if not len(hashes) or not len(dev):
            return np.zeros(0, dtype=np.uint64)
        hashes = hashes[self.prefilter[(hashes >> np.uint64(64 - PREFILTER_BITS)).astype(np.int64)]]
        return _unique(hashes[dev[np.minimum(np.searchsorted(dev, hashes), len(dev) - 1)] == hashes])


def benchmark_of(passage_id: str) -> str:
    """The benchmark a passage id names: its part before the first ``:`` (the whole id when it has none)."""
    return passage_id.split(":", 1)[0]


@dataclass(frozen=True)
class ContaminationResult:
    passages: int  # dev passages with at least one n-gram
    short: int  # dev passages with fewer tokens than n (left out)
    contaminated: Tuple[str, ...]  # ids of the passages with an n-gram found in the corpus, sorted
    # ids of the passages contaminated by this span or by an earlier span the pipeline pretrained on (module
    # docstring), sorted; None: this span's alone (no earlier result was given)
    total: Optional[Tuple[str, ...]] = None
    # (benchmark, its result) per benchmark of the passage ids (:func:`benchmark_of`), sorted by name
    benchmarks: Tuple[Tuple[str, "ContaminationResult"], ...] = ()

    @property
    def share(self) -> float:
        """Share of the (long enough) dev passages that are contaminated; 0 when there are none."""
        return len(self.contaminated) / self.passages if self.passages else 0.0

    @property
    def total_contaminated(self) -> Tuple[str, ...]:
        return self.contaminated if self.total is None else self.total

    @property
    def total_share(self) -> float:
        """Share of the (long enough) dev passages contaminated by any span pretrained on so far."""
        return len(self.total_contaminated) / self.passages if self.passages else 0.0


def _result(ids: Sequence[str], short: int, found: Set[str], earlier: Set[str]) -> ContaminationResult:
    contaminated = tuple(sorted(pid for pid in ids if pid in found))
    total = tuple(sorted(pid for pid in ids if pid in found or pid in earlier))
    return ContaminationResult(passages=len(ids), short=short, contaminated=contaminated, total=total)


class ContaminationCombiner:
    """Streams corpus documents against :class:`DevNgrams`; the accumulator is the set of dev n-gram hashes seen.
    ``earlier``: the passage ids an earlier span's result counted in its total (module docstring)."""

    def __init__(self, dev: DevNgrams, earlier: Iterable[str] = ()) -> None:
        self.dev = dev
        self.earlier = frozenset(earlier)

    def create_accumulator(self) -> Set[int]:
        return set()

    def add_input(self, acc: Set[int], doc: Document) -> Set[int]:
        # The document's n-grams of dev-passage tokens only (DevNgrams.document_ngrams: the tokens looked up in the
        # dev vocabulary's hash tables, the others never hashed) through the dev set's prefilter and binary search
        # (DevNgrams.find); np.isin would sort the dev set every time.
        acc.update(int(h) for h in self.dev.find(self.dev.document_ngrams(doc.sentences)))
        return acc

    def merge_accumulators(self, accumulators: Iterable[Set[int]]) -> Set[int]:
        out: Set[int] = set()
        for acc in accumulators:
            out |= acc
        return out

    def extract_output(self, acc: Set[int]) -> ContaminationResult:
        found_hashes = np.array(sorted(acc), dtype=np.uint64)
        long_enough = sorted(pid for pid, h in self.dev.by_passage.items() if len(h))
        # One np.isin over every passage's n-grams (each passage's own call cost ~1 ms, 3 s for SQuAD + RACE).
        grams = [self.dev.by_passage[pid] for pid in long_enough]
        owner = np.repeat(np.arange(len(grams)), [len(g) for g in grams])
        hit = np.isin(np.concatenate(grams), found_hashes) if grams else np.zeros(0, dtype=bool)
        found = {long_enough[i] for i in np.unique(owner[hit])}
        short = [pid for pid, h in self.dev.by_passage.items() if not len(h)]
        names = sorted({benchmark_of(pid) for pid in self.dev.by_passage})
        benchmarks = tuple(
            (name, _result([p for p in long_enough if benchmark_of(p) == name],
                           sum(benchmark_of(p) == name for p in short), found, self.earlier)) for name in names)
        whole = _result(long_enough, len(short), found, self.earlier)
        return ContaminationResult(whole.passages, whole.short, whole.contaminated, whole.total, benchmarks)

    def compute(self, docs: Iterable[Document]) -> ContaminationResult:
        acc = self.create_accumulator()
        for doc in docs:
            self.add_input(acc, doc)
        return self.extract_output(acc)
