"""Benchmark contamination as GPT-3 measured it (Brown et al. 2020, appendix C): a benchmark dev passage is
*contaminated* when any of its 13-grams occurs in the pretraining corpus; the measure is the share of dev passages
that are.

N-grams are of content tokens (``text_units``: ALBERT-normalised, lower case, no accents, punctuation dropped),
so for Chinese and Japanese, where every character is a token, they are character 13-grams: no separate rule.
A passage with fewer than 13 tokens has no 13-gram; it is counted as ``short`` and left out of the share
(GPT-3 used a smaller N for benchmarks of short examples; reading passages, what this gate checks, are long).

Memory: the set of dev n-gram hashes (small: a dev set is thousands of passages) and the subset found so far; the
corpus streams past it (:class:`ContaminationCombiner`, the methods of a Beam ``CombineFn``). N-gram hashes are
64-bit (``text_units.ngram_hashes``): a false match needs a 64-bit collision.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Iterable, List, Sequence, Set, Tuple

import numpy as np

from components.datagate.text_units import content_tokens, ngram_hashes, normalized_text, token_hashes
from components.text.documents import Document

# GPT-3's n for most benchmarks.
NGRAM_SIZE = 13


def passage_ngrams(sentences: Sequence[str], n: int = NGRAM_SIZE) -> np.ndarray:
    """Unique sorted uint64 hashes of the content-token n-grams of a text given as sentences (or one string)."""
    tokens = content_tokens(normalized_text([sentences] if isinstance(sentences, str) else sentences))
    return np.unique(ngram_hashes(token_hashes(tokens), n))


class DevNgrams:
    """The n-grams of a benchmark's dev passages: ``passages`` is a sequence of (passage id, text)."""

    def __init__(self, passages: Iterable[Tuple[str, str]], n: int = NGRAM_SIZE) -> None:
        self.n = n
        self.by_passage: Dict[str, np.ndarray] = {pid: passage_ngrams(text, n) for pid, text in passages}
        parts = [h for h in self.by_passage.values() if len(h)]
        self.all = np.unique(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.uint64)


@dataclass(frozen=True)
class ContaminationResult:
    passages: int  # dev passages with at least one n-gram
    short: int  # dev passages with fewer tokens than n (left out)
    contaminated: Tuple[str, ...]  # ids of the passages with an n-gram found in the corpus, sorted

    @property
    def share(self) -> float:
        """Share of the (long enough) dev passages that are contaminated; 0 when there are none."""
        return len(self.contaminated) / self.passages if self.passages else 0.0


class ContaminationCombiner:
    """Streams corpus documents against :class:`DevNgrams`; the accumulator is the set of dev n-gram hashes seen."""

    def __init__(self, dev: DevNgrams) -> None:
        self.dev = dev

    def create_accumulator(self) -> Set[int]:
        return set()

    def add_input(self, acc: Set[int], doc: Document) -> Set[int]:
        hashes = passage_ngrams(doc.sentences, self.dev.n)
        acc.update(int(h) for h in hashes[np.isin(hashes, self.dev.all, assume_unique=True)])
        return acc

    def merge_accumulators(self, accumulators: Iterable[Set[int]]) -> Set[int]:
        out: Set[int] = set()
        for acc in accumulators:
            out |= acc
        return out

    def extract_output(self, acc: Set[int]) -> ContaminationResult:
        found = np.array(sorted(acc), dtype=np.uint64)
        long_enough = {pid: h for pid, h in self.dev.by_passage.items() if len(h)}
        contaminated: List[str] = sorted(pid for pid, h in long_enough.items() if np.isin(h, found).any())
        return ContaminationResult(passages=len(long_enough), short=len(self.dev.by_passage) - len(long_enough),
                                   contaminated=tuple(contaminated))

    def compute(self, docs: Iterable[Document]) -> ContaminationResult:
        acc = self.create_accumulator()
        for doc in docs:
            self.add_input(acc, doc)
        return self.extract_output(acc)
