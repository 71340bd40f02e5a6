"""The bounded counter of token frequencies (a Misra–Gries summary), mergeable as a Beam accumulator."""
from __future__ import annotations

from typing import Dict, List, Mapping, Tuple

import numpy as np


class TopCounter:
    """Counts of the most frequent keys in memory bounded by ``capacity``.

    ``total`` (every count added) is exact. ``counts`` is exact as long as at most ``2 * capacity`` distinct keys
    were held at once. Beyond, whenever more than ``2 * capacity`` keys are held, every count is lowered by the
    ``(capacity + 1)``-th largest count and the keys left at zero or below are dropped (the Misra–Gries merge rule of
    Agarwal et al. 2012, "Mergeable summaries"), leaving at most ``capacity`` keys. Each such step removes at least
    ``capacity + 1`` times what it takes from any one key, so every kept count is low by at most
    ``total / (capacity + 1)`` and every key more frequent than that is kept. Results depend on the order of adds and
    merges only within that bound.
    """

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError("capacity must be >= 1")
        self.capacity = int(capacity)
        self.counts: Dict[str, int] = {}
        self.total = 0

    def add_counts(self, counts: Mapping[str, int]) -> "TopCounter":
        """Add ``counts`` (key → count) in place; returns self."""
        held = self.counts
        for key, count in counts.items():
            held[key] = held.get(key, 0) + count
            self.total += count
        if len(held) > 2 * self.capacity:
            self._reduce()
        return self

    def merge(self, other: "TopCounter") -> "TopCounter":
        """Add ``other`` into self (in place); returns self. Totals add exactly."""
        total = self.total + other.total
        self.add_counts(other.counts)
        self.total = total
        return self

    def _reduce(self) -> None:
        values = np.fromiter(self.counts.values(), dtype=np.int64, count=len(self.counts))
        cut = int(np.partition(values, len(values) - self.capacity - 1)[len(values) - self.capacity - 1])
        self.counts = {key: count - cut for key, count in self.counts.items() if count > cut}

    def most_common(self) -> List[Tuple[str, int]]:
        """(key, count) pairs, largest count first, ties by key."""
        return sorted(self.counts.items(), key=lambda kv: (-kv[1], kv[0]))

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, TopCounter) and self.capacity == other.capacity and self.total == other.total
                and self.counts == other.counts)
