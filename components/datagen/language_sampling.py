"""Languages sampled in a run of several: each language's share of the pretraining instances (and of VocabGen's
sentence sample) from its size, by an exponent or by UniMax. Pure Python: the formulas, the per-language plan of
passes and the seeded keep decision, testable without Beam (the wiring is in ``datagen_beam_languages``).

**Sizes.** n_L is counted in the unit that is sampled: for the pretraining data, the instances one pass over the
language's training documents gives; for VocabGen, sentences. mBERT and XLM-R count
sentences or tokens and IndicBERT lines, all units that are the thing they then draw; counting what is drawn makes the
realised shares equal the formula's (a character or token count would not: a Chinese instance holds about three times
fewer characters than an English one, and a short document gives a short instance).

Counting every language's instances would cost a second generation pass; instead each language's characters are
counted (a read, no tokenizing) and its instances per pass measured on a seeded sample of its training documents
(:func:`size_sample`: all of a small language, averaged over several passes): n_L = instances per pass of the sample ×
characters of L / characters of the sample (:func:`estimated_size`).

**The exponent** (mBERT and IndicBERT α = 0.7, XLM-R and mT5 α = 0.3): p_L = n_L / Σ n, q_L = p_L^α / Σ_k p_k^α. The
total stays what the run writes without sampling (``dupe_factor`` passes of every language), so the largest
language is down-sampled and the small ones are up-sampled.

**UniMax** (Chung et al., ICLR 2023): the same total spent as uniformly over languages as possible, smallest language
first, none repeated more than ``max_epochs`` times its unsampled amount (one epoch = the ``dupe_factor`` passes a
language gets without sampling); what a capped language cannot take is shared among the larger ones.

**Passes.** Language L gets e_L = q_L · T / n_L passes (T = dupe_factor · Σ n): the first ⌊e_L⌋ passes whole, each
with a masking seed of its own (pass p ≥ dupe_factor is a fresh seed, as passes are), and in pass ⌊e_L⌋ each
instance kept when its own hash of (seed, document, pass, index) falls under the fraction e_L − ⌊e_L⌋: a decision that
depends on nothing but those, so any worker count writes the same bytes, and no state is held.
"""
from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from typing import Dict, Mapping, Optional, Tuple

METHODS = ("exponent", "unimax", "none")
DEFAULT_METHOD = "exponent"
DEFAULT_ALPHA = 0.7  # mBERT, IndicBERT (XLM-R and mT5: 0.3)
DEFAULT_MAX_EPOCHS = 5.0  # UniMax's cap, in epochs of a language's unsampled amount (the paper studies 1 to 5)


@dataclass(frozen=True)
class SamplingRule:
    """``datagen.language_sampling`` (``method``), ``datagen.language_alpha`` (``alpha``) and
    ``datagen.language_max_epochs`` (``max_epochs``); :meth:`problems` says what is wrong with them."""

    method: str = DEFAULT_METHOD
    alpha: float = DEFAULT_ALPHA
    max_epochs: float = DEFAULT_MAX_EPOCHS

    def problems(self) -> Optional[Tuple[str, object, str]]:
        """(setting, value, what is expected) of the first invalid value, or None."""
        if self.method not in METHODS:
            return "datagen.language_sampling", self.method, "|".join(METHODS)
        if isinstance(self.alpha, bool) or not isinstance(self.alpha, (int, float)) or not 0 < self.alpha <= 1:
            return "datagen.language_alpha", self.alpha, "in (0, 1] (0.7 as mBERT, 0.3 as XLM-R and mT5)"
        if (isinstance(self.max_epochs, bool) or not isinstance(self.max_epochs, (int, float))
                or not math.isfinite(self.max_epochs) or self.max_epochs < 1):
            return "datagen.language_max_epochs", self.max_epochs, ">= 1 (UniMax's cap, epochs of a language's data)"
        return None

    def describe(self) -> Dict[str, object]:
        """The rule as the statistics record it."""
        if self.method == "exponent":
            return {"method": "exponent", "alpha": float(self.alpha)}
        if self.method == "unimax":
            return {"method": "unimax", "max_epochs": float(self.max_epochs)}
        return {"method": "none"}

    @classmethod
    def from_description(cls, data: Mapping[str, object]) -> "SamplingRule":
        """The rule :meth:`describe` wrote."""
        return cls(str(data.get("method", DEFAULT_METHOD)), data.get("alpha", DEFAULT_ALPHA),
                   data.get("max_epochs", DEFAULT_MAX_EPOCHS))

    def target_shares(self, sizes: Mapping[str, float]) -> Dict[str, float]:
        """q_L for every language of ``sizes`` (a language of size 0 gets 0)."""
        sized = {k: float(v) for k, v in sizes.items() if v > 0}
        if not sized:
            return {k: 0.0 for k in sizes}
        if self.method == "unimax":
            alloc = unimax_budgets(sized, sum(sized.values()), self.max_epochs)
        elif self.method == "exponent":
            alloc = exponent_weights(sized, self.alpha)
        else:
            alloc = sized
        total = sum(alloc.values())
        return {k: (alloc[k] / total if k in alloc else 0.0) for k in sizes}

    def passes(self, sizes: Mapping[str, float], dupe_factor: int) -> Dict[str, float]:
        """e_L: the passes over language L's documents that give it its target share of dupe_factor · Σ n instances
        (``dupe_factor`` for every language with ``none``; a language of size 0 keeps ``dupe_factor``)."""
        shares = self.target_shares(sizes)
        total = float(dupe_factor) * sum(float(v) for v in sizes.values() if v > 0)
        return {k: (shares[k] * total / float(n) if n > 0 and self.method != "none" else float(dupe_factor))
                for k, n in sizes.items()}


def exponent_weights(sizes: Mapping[str, float], alpha: float) -> Dict[str, float]:
    """p_L^α for p_L = n_L / Σ n (unnormalised: :meth:`SamplingRule.target_shares` divides by their sum)."""
    total = float(sum(sizes.values()))
    return {k: (float(n) / total) ** float(alpha) for k, n in sizes.items()}


def unimax_budgets(sizes: Mapping[str, float], budget: float, max_epochs: float) -> Dict[str, float]:
    """UniMax's allocation (Chung et al. 2023, Algorithm 1): languages from the smallest up (ties by name), each the
    remaining budget over the languages remaining, at most ``max_epochs`` · n_L."""
    out: Dict[str, float] = {}
    left = float(budget)
    order = sorted(sizes, key=lambda k: (float(sizes[k]), k))
    for i, k in enumerate(order):
        share = left / (len(order) - i)
        out[k] = min(share, float(max_epochs) * float(sizes[k]))
        left -= out[k]
    return out


def pass_plan(passes: float) -> Tuple[int, float]:
    """(whole passes, fraction of the next pass's instances kept) of e passes: 2.25 → (2, 0.25)."""
    whole = int(math.floor(passes))
    return whole, float(passes - whole)


def keep_instance(seed: int, doc_id: str, pass_index: int, index: int, fraction: float) -> bool:
    """The seeded per-instance decision of a partial pass: True for a share ``fraction`` of instances, decided by a
    SHA-1 of (seed, document, pass, index) alone (the same on every worker and platform)."""
    if fraction >= 1.0:
        return True
    if fraction <= 0.0:
        return False
    h = hashlib.sha1(f"lang-sample\x1f{int(seed)}\x1f{doc_id}\x1f{int(pass_index)}\x1f{int(index)}".encode("utf-8"))
    return (int.from_bytes(h.digest()[:8], "big") >> 11) < int(fraction * (1 << 53))


def realised_shares(counts: Mapping[str, int]) -> Dict[str, float]:
    """Each language's share of ``counts`` (0 for all when there are none)."""
    total = sum(counts.values())
    return {k: (v / total if total else 0.0) for k, v in counts.items()}


# The size sample's cost: each language may count instances of about this share of the run's own generation (its
# characters × passes, spread evenly over the languages), at least SIZE_MIN_CHARS, at most SIZE_MAX_PASSES passes.
SIZE_BUDGET_SHARE = 0.25
SIZE_MIN_CHARS = 200_000
SIZE_MAX_PASSES = 32


def size_sample(characters: Mapping[str, int], dupe_factor: int) -> Dict[str, Tuple[float, int]]:
    """Per language, (share of its documents drawn into its size sample, passes counted over them): a budget of
    ``SIZE_BUDGET_SHARE`` × dupe_factor × Σ characters / languages characters-passes each (at least
    ``SIZE_MIN_CHARS``); a language larger than its budget is sampled at one pass, a smaller one counted whole over
    as many passes as fit (at most ``SIZE_MAX_PASSES``, which averages out how much one short-target draw moves a
    pass)."""
    if not characters:
        return {}
    budget = max(SIZE_MIN_CHARS, SIZE_BUDGET_SHARE * dupe_factor * sum(characters.values()) / len(characters))
    out = {}
    for language, chars in characters.items():
        sampled = min(float(chars), budget)
        rate = 1.0 if chars <= budget else budget / float(chars)
        out[language] = (rate, max(1, min(SIZE_MAX_PASSES, int(budget // max(sampled, 1.0)))))
    return out


def in_size_sample(seed: int, doc_id: str, rate: float) -> bool:
    """Whether document ``doc_id`` is in its language's size sample (a seeded hash under ``rate``)."""
    return keep_instance(seed, "size-sample\x1f" + doc_id, 0, 0, rate)


def estimated_size(characters: int, sample_characters: int, sample_instances: int) -> float:
    """n_L in instances: the sample's instances scaled by the language's characters over the sample's (exact when the
    sample is the whole language)."""
    if sample_characters <= 0:
        return 0.0
    if sample_characters == characters:
        return float(sample_instances)
    return sample_instances * float(characters) / float(sample_characters)
