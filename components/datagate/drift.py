"""Distances between a span and the last span that passed: Jensen–Shannon divergence of two count tables, total
variation distance of two mixes, and the volume ratio."""
from __future__ import annotations

import math
from typing import Dict, Mapping, Tuple

import numpy as np

from components.datagate.sketches import TopCounter

def _aligned(p: Mapping[str, float], q: Mapping[str, float]):
    keys = sorted(set(p) | set(q))
    a = np.array([float(p.get(k, 0)) for k in keys])
    b = np.array([float(q.get(k, 0)) for k in keys])
    if (a < 0).any() or (b < 0).any():
        raise ValueError("counts must be >= 0")
    return a, b


def jensen_shannon_divergence(p: Mapping[str, float], q: Mapping[str, float]) -> float:
    """JS divergence (base 2, in [0, 1]) between the distributions of two count tables (key → count; a missing key
    counts 0): ``(KL(P || M) + KL(Q || M)) / 2`` with ``M = (P + Q) / 2``. 0 for two empty tables, 1 when exactly one
    is empty (nothing in common)."""
    a, b = _aligned(p, q)
    if not a.sum() or not b.sum():
        return 0.0 if not a.sum() and not b.sum() else 1.0
    a, b = a / a.sum(), b / b.sum()
    m = (a + b) / 2

    def kl(x: np.ndarray) -> float:
        nonzero = x > 0
        return float(np.sum(x[nonzero] * np.log2(x[nonzero] / m[nonzero])))

    return min(1.0, max(0.0, (kl(a) + kl(b)) / 2))


def total_variation(p: Mapping[str, float], q: Mapping[str, float]) -> float:
    """Total variation distance (half the L1 distance, in [0, 1]) between the distributions of two count tables:
    the share of the mass that would have to move. 0 for two empty tables, 1 when exactly one is empty."""
    a, b = _aligned(p, q)
    if not a.sum() or not b.sum():
        return 0.0 if not a.sum() and not b.sum() else 1.0
    return float(np.abs(a / a.sum() - b / b.sum()).sum() / 2)


def volume_ratio(current: float, baseline: float) -> float:
    """current / baseline; 1 when both are 0, infinity when only the baseline is."""
    if baseline:
        return current / baseline
    return 1.0 if not current else math.inf


def unigram_tables(current: TopCounter, baseline: TopCounter, top: int) -> Tuple[Dict[str, int], Dict[str, int]]:
    """The two spans' unigram counts of the tokens that are among the ``top`` most frequent of either span.

    Why not every kept token: the rare tokens of a span (names, numbers) are mostly absent from the other span by
    chance, so over all tokens two halves of one corpus diverge by an amount that depends on their size. Why no
    "other" count for the rest: both spans have a tail, so a shared "other" bucket would make any two languages
    look alike by that much mass."""
    keep = {t for t, _ in current.most_common()[:top]} | {t for t, _ in baseline.most_common()[:top]}
    return ({t: c for t, c in current.counts.items() if t in keep},
            {t: c for t, c in baseline.counts.items() if t in keep})
