"""Exact and near duplicates between a span and the previous one, from a bounded sample of each span's documents.

A document's **shingles** are the hashes of its content-token n-grams (``MinHashSettings.shingle_size`` = 5 words;
a document with fewer tokens is one shingle of all of them; one with none has no shingles and is not sampled).
Its **MinHash signature** holds, for each of ``num_perm`` seeded hash functions, the least hash of its shingles;
the share of equal positions of two signatures estimates the Jaccard similarity of the shingle sets (Broder 1997).
The hash functions are multiply-shift: ``h_i(x) = ((a_i * x + b_i) mod 2**64) >> 32`` with odd ``a_i`` and
``b_i`` drawn from ``numpy.random.default_rng(seed)``, so signatures are equal across processes and spans.

**The sample** (:class:`MinHashSample`) keeps the ``sample_size`` documents with the smallest *sort key*: a 64-bit
mix of the shingle that reaches the minimum of the first hash function, then the document's fingerprint
(``components.text.documents.doc_fingerprint``: equal for texts differing only in case, accents or whitespace).
Why that key:

* it is uniform whatever the document's length (the minimum hash itself is smaller for longer documents), so the
  sample is a uniform sample of the span's distinct documents, and a seeded one: the same documents every run;
* exact duplicates have the same key: they form one entry whose ``count`` says how many documents it stands for,
  so the share of documents that duplicate another document of the same span is measured without storing the span;
* two documents of Jaccard similarity J share the minimising shingle with probability J, so a near duplicate of a
  sampled document is in the other span's sample with probability about J: near duplicates of the previous span
  (:func:`previous_span_duplicates`) are found with recall of about the Jaccard threshold or better (a lower bound),
  exact ones always.

The bottom-k of a union is the bottom-k of the parts' bottom-ks, so merging is exact and order-independent, and an
entry kept at the end was never evicted from any part: its count is exact too.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Tuple

import numpy as np

from components.datagate.text_units import ngram_hashes

_MASK64 = (1 << 64) - 1
# Rows of shingles hashed at once when computing a signature: bounds the temporary array to
# SIGNATURE_BLOCK * num_perm * 8 bytes (4 MiB at 128 permutations) whatever the document's length.
SIGNATURE_BLOCK = 4096


@dataclass(frozen=True)
class MinHashSettings:
    """How documents are sampled and signed for duplicate detection."""

    # Signature length: the Jaccard estimate's standard error is sqrt(J(1-J)/num_perm), 0.035 at J = 0.8.
    num_perm: int = 128
    # Shingles of this many content tokens (the word 5-shingles issue 55 asks for).
    shingle_size: int = 5
    # Documents kept per span: a share of duplicates is estimated within about +-1 point (binomial standard error
    # at 2048 documents, share 0.3); the sample holds 2048 * 128 * 4 bytes = 1 MiB of signatures.
    sample_size: int = 2048
    seed: int = 0

    def validate(self) -> "MinHashSettings":
        if self.num_perm < 1 or self.shingle_size < 1 or self.sample_size < 1:
            raise ValueError(f"num_perm, shingle_size and sample_size must be >= 1: {self}")
        return self


def mix64(x: int) -> int:
    """SplitMix64's finaliser: a bijective 64-bit mix (Steele et al. 2014)."""
    x &= _MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK64
    return x ^ (x >> 31)


def shingle_hashes(token_hashes: np.ndarray, shingle_size: int) -> np.ndarray:
    """uint64 hashes of a document's shingles (module docstring), from its token hashes."""
    if len(token_hashes) == 0:
        return np.zeros(0, dtype=np.uint64)
    return ngram_hashes(token_hashes, min(shingle_size, len(token_hashes)))


class MinHasher:
    """The seeded hash functions of one :class:`MinHashSettings`."""

    def __init__(self, settings: MinHashSettings) -> None:
        self.settings = settings.validate()
        rng = np.random.default_rng(settings.seed)
        self.a = rng.integers(0, 2**64, size=settings.num_perm, dtype=np.uint64, endpoint=False) | np.uint64(1)
        self.b = rng.integers(0, 2**64, size=settings.num_perm, dtype=np.uint64, endpoint=False)

    def _hash(self, shingles: np.ndarray, perm: slice) -> np.ndarray:
        with np.errstate(over="ignore"):
            return (shingles[:, None] * self.a[None, perm] + self.b[None, perm]) >> np.uint64(32)

    def sample_key(self, shingles: np.ndarray) -> int:
        """The uniform 64-bit key of a document (module docstring): the mix of its shingle minimising hash 0."""
        first = self._hash(shingles, slice(0, 1))[:, 0]
        return mix64(int(shingles[int(np.argmin(first))]) ^ mix64(self.settings.seed))

    def signature(self, shingles: np.ndarray) -> np.ndarray:
        """uint32 MinHash signature (``num_perm`` values) of a non-empty shingle array."""
        out = np.full(self.settings.num_perm, np.iinfo(np.uint32).max, dtype=np.uint64)
        for start in range(0, len(shingles), SIGNATURE_BLOCK):
            out = np.minimum(out, self._hash(shingles[start:start + SIGNATURE_BLOCK], slice(None)).min(axis=0))
        return out.astype(np.uint32)


def sort_key(sample_key: int, fingerprint: str) -> int:
    """The order of the sample: the uniform key, then the first 64 bits of the (hex) fingerprint."""
    return (sample_key << 64) | int(fingerprint[:16], 16)


class MinHashSample:
    """The ``size`` distinct documents of a span with the smallest :func:`sort_key`, each with its count of
    documents and its signature (module docstring). Memory: ``size`` signatures."""

    def __init__(self, size: int) -> None:
        self.size = int(size)
        self.counts: Dict[int, int] = {}
        self.signatures: Dict[int, np.ndarray] = {}
        self._heap: List[int] = []  # negated sort keys of the held entries: the largest is evicted first

    @property
    def full(self) -> bool:
        return len(self.counts) >= self.size

    def max_key(self) -> Optional[int]:
        """The largest key held when the sample is full (it holds every key up to it), else None (it holds all)."""
        return -self._heap[0] if self.full else None

    def accepts(self, key: int) -> bool:
        """Whether a document with this key belongs in the sample (so its signature is worth computing)."""
        return key in self.counts or not self.full or key < -self._heap[0]

    def add(self, key: int, signature: Callable[[], np.ndarray], count: int = 1) -> None:
        """Count a document with this key; ``signature()`` is called only for a key not yet held."""
        if key in self.counts:
            self.counts[key] += count
            return
        if not self.accepts(key):
            return
        self.counts[key] = count
        self.signatures[key] = signature()
        heapq.heappush(self._heap, -key)
        if len(self.counts) > self.size:
            evicted = -heapq.heappop(self._heap)
            del self.counts[evicted], self.signatures[evicted]

    def merge(self, other: "MinHashSample") -> "MinHashSample":
        """Add ``other`` into self (in place, exact: module docstring); returns self."""
        for key, count in other.counts.items():
            if key in self.counts:
                self.counts[key] += count
            else:
                self.counts[key] = count
                self.signatures[key] = other.signatures[key]
        kept = sorted(self.counts)[: self.size]
        self.counts = {k: self.counts[k] for k in kept}
        self.signatures = {k: self.signatures[k] for k in kept}
        self._heap = [-k for k in kept]
        heapq.heapify(self._heap)
        return self

    def documents(self) -> int:
        """Documents the sample stands for (its entries' counts)."""
        return sum(self.counts.values())

    def duplicate_share(self) -> float:
        """Share of the sampled documents that repeat an earlier one (same fingerprint) of the same span."""
        docs = self.documents()
        return (docs - len(self.counts)) / docs if docs else 0.0

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, MinHashSample) and self.size == other.size and self.counts == other.counts
                and all(np.array_equal(v, other.signatures[k]) for k, v in self.signatures.items()))


@dataclass(frozen=True)
class DuplicateShares:
    """Of ``documents`` documents of the current span (those of its sample in the range both samples cover), the
    share that exactly duplicate a document of the previous span, and the share that duplicate one exactly or
    nearly (estimated Jaccard similarity at least the threshold; a lower bound, module docstring)."""

    documents: int
    exact: float
    near: float


def jaccard_estimates(signatures: np.ndarray, others: np.ndarray) -> np.ndarray:
    """(len(signatures), len(others)) matrix of estimated Jaccard similarities (share of equal signature values)."""
    out = np.zeros((len(signatures), len(others)))
    block = max(1, 2**24 // max(1, others.size))  # rows compared at once: ~16 MB of booleans
    for start in range(0, len(signatures), block):
        rows = signatures[start:start + block]
        out[start:start + block] = (rows[:, None, :] == others[None, :, :]).mean(axis=2)
    return out


def previous_span_duplicates(current: MinHashSample, previous: MinHashSample, jaccard: float) -> DuplicateShares:
    """Duplicates of the previous span's documents among the current span's (see :class:`DuplicateShares`).

    Only current entries whose key both samples cover are compared (keys up to the smaller of the two samples'
    largest keys, or every key of a sample that is not full), so an exact duplicate of a previous document is
    always in the previous sample when the current entry is compared.
    """
    limits = [m for m in (current.max_key(), previous.max_key()) if m is not None]
    covered = [k for k in sorted(current.counts) if not limits or k <= min(limits)]
    documents = sum(current.counts[k] for k in covered)
    if not documents:
        return DuplicateShares(0, 0.0, 0.0)
    exact = sum(current.counts[k] for k in covered if k in previous.counts)
    near = 0
    if previous.counts:
        previous_keys = sorted(previous.counts)
        best = jaccard_estimates(np.stack([current.signatures[k] for k in covered]),
                                 np.stack([previous.signatures[k] for k in previous_keys])).max(axis=1)
        near = sum(current.counts[k] for k, b in zip(covered, best) if b >= jaccard or k in previous.counts)
    return DuplicateShares(documents, exact / documents, near / documents)


def sample_entries(sample: MinHashSample) -> List[Tuple[int, int, np.ndarray]]:
    """(key, count, signature) of every entry, by key: what a serialised sample holds."""
    return [(k, sample.counts[k], sample.signatures[k]) for k in sorted(sample.counts)]


def sample_from_entries(size: int, entries: List[Tuple[int, int, np.ndarray]]) -> MinHashSample:
    """The sample holding exactly these entries (inverse of :func:`sample_entries`)."""
    out = MinHashSample(size)
    for key, count, signature in entries:
        out.counts[key] = count
        out.signatures[key] = np.asarray(signature, dtype=np.uint32)
    out._heap = [-k for k in out.counts]
    heapq.heapify(out._heap)
    return out
