"""Languages sampled in a run of several: each language's share of the pretraining instances (and of VocabGen's
sentence sample) from its size, by an exponent or by UniMax. Pure Python: the formulas, the per-language plan of
passes and the seeded keep decision, testable without Beam (the wiring is in ``datagen_beam_languages``).

**Sizes.** n_L is counted in the unit that is sampled: for the pretraining data, the instances one pass over the
language's training documents gives; for VocabGen, sentences. mBERT and XLM-R count
sentences or tokens and IndicBERT lines, all units that are the thing they then draw; counting what is drawn makes the
realised shares equal the formula's (a character or token count would not: a Chinese instance holds about three times
fewer characters than an English one, and a short document gives a short instance).

**Counted pass by pass.** ALBERT draws one target length per document and pass (``short_seq_prob``), and a short draw
gives several times the instances of that document in that pass: with few large documents one pass differs from the
next by tens of percent, so a mean per pass does not say what the passes actually generated will give. The size stage
therefore counts each pass p = 0, 1, … of a language separately (c_L[p], summed over its documents, with the very
seeds generation uses): a language within the size stage's budget, or of few documents (:func:`size_sample`), is
counted whole, exactly; a larger one on a seeded sample of its documents, scaled by its characters over the
sample's. n_L = (c_L[0] + … + c_L[D-1]) / D, D = ``dupe_factor``.

**The exponent** (mBERT and IndicBERT α = 0.7, XLM-R and mT5 α = 0.3): p_L = n_L / Σ n, q_L = p_L^α / Σ_k p_k^α. The
total T = D · Σ n stays what the run writes without sampling (``dupe_factor`` passes of every language), so the
largest language is down-sampled and the small ones are up-sampled.

**UniMax** (Chung et al., ICLR 2023): the same total spent as uniformly over languages as possible, smallest language
first, none repeated more than ``max_epochs`` times its unsampled amount (one epoch = the ``dupe_factor`` passes a
language gets without sampling); what a capped language cannot take is shared among the larger ones.

**Passes** (:func:`place`). Language L's target is C_L = q_L · T instances: W whole passes, W such that
cum[W] ≤ C_L < cum[W+1] (cum[k] = c_L[0] + … + c_L[k-1]; passes beyond the counted ones taken at their mean), each
with a masking seed of its own (pass p ≥ dupe_factor is a fresh seed, as passes are), and in pass W the share
f = (C_L − cum[W]) / c_L[W] of its instances, so a language counted whole realises C_L up to the rounding of the
partial pass. The plan's ``passes`` is W + f. In pass W each document keeps ⌊f · m + u⌋ of its m instances (u a
seeded hash of the document: unbiased, off by less than one instance per document), those whose own hash of (seed,
document, pass, index) is smallest (:func:`kept_indices`): a decision that depends on nothing but those, so any worker
count writes the same bytes, and no state is held.
"""
from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

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


def _hash53(*parts: object) -> int:
    """53 bits of a SHA-1 of ``parts`` (the same on every worker and platform)."""
    h = hashlib.sha1("\x1f".join(["lang-sample"] + [str(p) for p in parts]).encode("utf-8"))
    return int.from_bytes(h.digest()[:8], "big") >> 11


def _unit(*parts: object) -> float:
    """A uniform number in [0, 1) from :func:`_hash53` of ``parts``."""
    return _hash53(*parts) / float(1 << 53)


def keep_instance(seed: int, doc_id: str, pass_index: int, index: int, fraction: float) -> bool:
    """A seeded yes/no for a share ``fraction`` (the size sample's choice of documents, :func:`in_size_sample`),
    decided by a SHA-1 of (seed, document, pass, index) alone."""
    if fraction >= 1.0:
        return True
    if fraction <= 0.0:
        return False
    return _hash53(int(seed), doc_id, int(pass_index), int(index)) < int(fraction * (1 << 53))


def kept_indices(seed: int, doc_id: str, pass_index: int, count: int, fraction: float) -> List[int]:
    """The instances a document keeps of its ``count`` in a partial pass (in order): ⌊fraction · count + u⌋ of them,
    u a seeded uniform of (seed, document, pass) (so the expectation is fraction · count and the error under one),
    those whose hash of (seed, document, pass, index) is smallest."""
    if fraction >= 1.0:
        return list(range(count))
    if fraction <= 0.0 or count <= 0:
        return []
    keep = min(count, int(math.floor(fraction * count + _unit(int(seed), doc_id, int(pass_index), "round"))))
    ranked = sorted(range(count), key=lambda i: _unit(int(seed), doc_id, int(pass_index), i))
    return sorted(ranked[:keep])


def realised_shares(counts: Mapping[str, int]) -> Dict[str, float]:
    """Each language's share of ``counts`` (0 for all when there are none)."""
    total = sum(counts.values())
    return {k: (v / total if total else 0.0) for k, v in counts.items()}


# The size stage's cost. A language is counted on a seeded sample of its documents of about the budget's characters,
# max(SIZE_MIN_SAMPLE_CHARS, SIZE_BUDGET_SHARE × Σ characters / languages) (a quarter of the run's own generation,
# spread over the languages); whole (its shares then exact) when it is no larger than that, or when it has at most
# SIZE_WHOLE_DOCUMENTS training documents and SIZE_WHOLE_CHARS characters: a pass of a few documents moves by tens of
# percent with each document's short-target draw, which a sample of them cannot predict, while a pass of many
# documents varies by a few percent and a sample of a few hundred of them estimates it. Its first dupe_factor passes
# are counted; a language the plan up-samples past them has its further passes counted too, SIZE_PASS_MARGIN × its
# estimated passes (at most SIZE_MAX_PASSES; beyond, the mean of the counted passes), in up to SIZE_ROUNDS rounds
# (each plans on what the rounds before counted).
SIZE_MIN_SAMPLE_CHARS = 1_000_000
SIZE_WHOLE_DOCUMENTS = 256
SIZE_WHOLE_CHARS = 30_000_000
SIZE_BUDGET_SHARE = 0.25
SIZE_PASS_MARGIN = 1.25
SIZE_MAX_PASSES = 64
SIZE_ROUNDS = 2  # rounds of further passes: a plan placed on two passes of one document can be short by a third


def size_sample(characters: Mapping[str, int], documents: Mapping[str, int]) -> Dict[str, float]:
    """Per language, the share of its training documents drawn into its size sample (``characters`` and
    ``documents``: its training characters and documents): 1 (counted whole) up to the budget's characters, or with at
    most ``SIZE_WHOLE_DOCUMENTS`` documents and ``SIZE_WHOLE_CHARS`` characters; else the budget over its
    characters (the comment above)."""
    if not characters:
        return {}
    budget = max(float(SIZE_MIN_SAMPLE_CHARS), SIZE_BUDGET_SHARE * sum(characters.values()) / len(characters))
    return {language: (1.0 if chars <= budget or (documents.get(language, 0) <= SIZE_WHOLE_DOCUMENTS
                                                  and chars <= SIZE_WHOLE_CHARS) else budget / float(chars))
            for language, chars in characters.items()}


def in_size_sample(seed: int, doc_id: str, rate: float) -> bool:
    """Whether document ``doc_id`` is in its language's size sample (a seeded hash under ``rate``)."""
    return keep_instance(seed, "size-sample\x1f" + doc_id, 0, 0, rate)


def scaled_counts(characters: int, sample_characters: int, counts: Sequence[float]) -> List[float]:
    """A language's instances per pass: its sample's ``counts`` scaled by its characters over the sample's (as they
    are when the sample is the whole language)."""
    if sample_characters <= 0:
        return [0.0] * len(counts)
    if sample_characters == characters:
        return [float(c) for c in counts]
    return [c * float(characters) / float(sample_characters) for c in counts]


def place(target: float, counts: Sequence[float]) -> float:
    """W + f passes that give ``target`` instances from the per-pass ``counts`` (module docstring): W whole passes with
    cum[W] ≤ target < cum[W+1], f = (target − cum[W]) / counts[W]; a pass beyond ``counts`` gives their mean.
    ``[100, 300, 100]`` and 250 → 1.5."""
    done = 0.0
    mean = sum(counts) / len(counts) if counts else 0.0
    p = 0
    while True:
        c = float(counts[p]) if p < len(counts) else mean
        if c <= 0 and p >= len(counts):  # nothing more to take
            return float(p)
        if done + c > target:
            return p + (target - done) / c
        done += c
        p += 1
        if done == target:
            return float(p)


def plan_languages(rule: "SamplingRule", counts: Mapping[str, Sequence[float]], dupe_factor: int
                   ) -> Dict[str, Dict[str, float]]:
    """Per language, from its per-pass instance ``counts`` (at least ``dupe_factor`` of them): ``size_instances``
    (n_L), ``target_share`` (q_L), ``target_instances`` (C_L = q_L · D · Σ n) and ``passes`` (W + f,
    :func:`place`; ``dupe_factor`` with ``none`` and for a language without instances)."""
    d = int(dupe_factor)
    sizes = {k: float(sum(c[:d])) / d for k, c in counts.items()}
    shares = rule.target_shares(sizes)
    total = float(sum(sum(c[:d]) for c in counts.values()))
    out = {}
    for k in counts:
        target = shares[k] * total
        passes = float(d) if rule.method == "none" or sizes[k] <= 0 else place(target, counts[k])
        out[k] = {"size_instances": sizes[k], "target_share": shares[k], "target_instances": target,
                  "passes": passes}
    return out


def passes_to_count(passes: float, counted: int) -> int:
    """How many passes to count in all for a plan of ``passes`` placed on ``counted`` counted ones: none more when its
    partial pass is among them, else ``SIZE_PASS_MARGIN`` × passes + 1 (at most ``SIZE_MAX_PASSES``)."""
    if int(math.floor(passes)) < counted:
        return counted
    return max(counted, min(SIZE_MAX_PASSES, int(math.ceil(SIZE_PASS_MARGIN * passes)) + 1))
