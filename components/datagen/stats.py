"""Mergeable statistics of generated instances (the data card of a pretraining-data run).

Plain Python counters only, so the accumulator pickles cheaply as a Beam ``CombineFn`` accumulator and
``merge`` is associative and commutative (it only adds counts).

Which statistic checks which rule of the procedure (issue 4, "Done when"), and why some realized shares
legitimately differ from the nominal ones:

* n-gram lengths 6/11, 3/11, 2/11: ``ngram_drawn_shares`` is the sampler, the n drawn at every start word
  visited, and meets it (within sampling error). ``ngram_span_shares`` counts the words the *masked* spans
  cover, which is skewed towards 1: the official procedure shrinks n when a span would exceed the
  prediction budget (P=20 is ~4% of 512 tokens, so the last span of nearly every instance is shrunk),
  clips spans at the end of the sequence and skips spans touching masked tokens.
* replacement 80/10/10: ``replacement_shares`` (one independent draw per masked token).
* SOP balance 50/50: ``sop_swap_label_1_share``, the swap decisions (p = 0.5 each), meets it in every mode;
  in ``sop_mode=pure`` every instance is a swap decision, so ``sop_label_1_share`` meets it too. In
  ``official`` mode a one-sentence chunk always gets a random-document B with label 1
  (``sop_random_next_share`` of the instances), so the overall label-1 share is above 1/2; by how much
  depends on the text (short targets and long sentences make one-sentence chunks).
* short sequences 10%: ``short_target_share_doc_passes``, the share of (document, pass) runs that drew a
  short target (``short_seq_prob`` is drawn once per document and pass, as in the official code).
  ``short_target_share_instances`` is the share of instances built under a short target; it is larger
  (a short target cuts a document into more, shorter instances) and, on a corpus of few long documents
  (whole books), dominated by which books drew a short target.
"""
from __future__ import annotations

from typing import Dict, List, Sequence

import numpy as np

from components.datagen.instances import KIND_KEEP, KIND_MASK, KIND_RANDOM, Instance


def _add_counts(into: List[int], counts: Sequence[int]) -> None:
    if len(into) < len(counts):
        into.extend([0] * (len(counts) - len(into)))
    for i, c in enumerate(counts):
        into[i] += int(c)


def _count_into(hist: List[int], values: np.ndarray) -> None:
    """hist[v] += 1 for each value (a dozen small ints per instance: a Python loop beats bincount)."""
    for v in values.tolist():
        if v >= len(hist):
            hist.extend([0] * (v + 1 - len(hist)))
        hist[v] += 1


def _shares(counts: Sequence[int]) -> Dict[str, float]:
    total = sum(counts)
    return {str(i): (c / total if total else 0.0) for i, c in enumerate(counts) if c}


class InstanceStats:
    """Counts over instances: lengths, short targets, SOP labels, masking shares, n-grams, replacements.

    ``doc_passes`` counts (document, pass) runs that produced at least one instance (their first instance
    has ``chunk_index == 0``), so the short-target share can be read per document pass (what
    ``short_seq_prob`` controls) as well as per instance (short targets yield more, shorter instances).
    """

    def __init__(self) -> None:
        self.instances = 0
        self.tokens = 0
        self.length_hist: Dict[int, int] = {}
        self.short_target_instances = 0
        self.doc_passes = 0
        self.short_target_doc_passes = 0
        self.sop_labels = [0, 0]
        self.sop_random_next = 0               # label-1 instances whose B came from a random document
        self.masked_tokens = 0
        self.ngram_hist: List[int] = []        # index n: spans covering n words
        self.ngram_drawn_hist: List[int] = []  # index n: draws of n at visited start words
        self.kinds = [0, 0, 0]                 # [MASK], random id, kept

    def add(self, instance: Instance) -> "InstanceStats":
        n = instance.num_tokens
        self.instances += 1
        self.tokens += n
        self.length_hist[n] = self.length_hist.get(n, 0) + 1
        self.short_target_instances += int(instance.is_short_target)
        if instance.chunk_index == 0:
            self.doc_passes += 1
            self.short_target_doc_passes += int(instance.is_short_target)
        self.sop_labels[int(instance.sop_label)] += 1
        self.sop_random_next += int(instance.random_next)
        self.masked_tokens += int(instance.masked_lm_positions.shape[0])
        _count_into(self.ngram_hist, instance.ngram_lengths)
        _count_into(self.ngram_drawn_hist, instance.ngram_drawn)
        _count_into(self.kinds, instance.mask_kinds)
        return self

    def merge(self, other: "InstanceStats") -> "InstanceStats":
        """Add ``other`` into ``self`` (in place) and return ``self``."""
        self.instances += other.instances
        self.tokens += other.tokens
        for k, c in other.length_hist.items():
            self.length_hist[k] = self.length_hist.get(k, 0) + c
        self.short_target_instances += other.short_target_instances
        self.doc_passes += other.doc_passes
        self.short_target_doc_passes += other.short_target_doc_passes
        _add_counts(self.sop_labels, other.sop_labels)
        self.sop_random_next += other.sop_random_next
        self.masked_tokens += other.masked_tokens
        _add_counts(self.ngram_hist, other.ngram_hist)
        _add_counts(self.ngram_drawn_hist, other.ngram_drawn_hist)
        _add_counts(self.kinds, other.kinds)
        return self

    @classmethod
    def merged(cls, parts: Sequence["InstanceStats"]) -> "InstanceStats":
        out = cls()
        for p in parts:
            out.merge(p)
        return out

    def length_percentile(self, q: float) -> int:
        """Nearest-rank percentile (q in [0, 100]) of instance lengths in tokens."""
        if not self.instances:
            return 0
        rank = max(1, int(np.ceil(q / 100.0 * self.instances)))
        seen = 0
        for length in sorted(self.length_hist):
            seen += self.length_hist[length]
            if seen >= rank:
                return length
        return max(self.length_hist)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, InstanceStats) and self.to_dict() == other.to_dict()

    def to_dict(self) -> Dict[str, object]:
        """JSON-able summary (plain ints, floats, strings)."""
        inst = self.instances
        kinds_total = sum(self.kinds)
        swaps = inst - self.sop_random_next
        swapped = self.sop_labels[1] - self.sop_random_next
        return {
            "instances": inst,
            "tokens": self.tokens,
            "length_mean": self.tokens / inst if inst else 0.0,
            "length_p50": self.length_percentile(50),
            "length_p90": self.length_percentile(90),
            "length_p99": self.length_percentile(99),
            "length_max": max(self.length_hist) if self.length_hist else 0,
            "length_histogram": {str(k): v for k, v in sorted(self.length_hist.items())},
            "short_target_share_instances": self.short_target_instances / inst if inst else 0.0,
            "doc_passes": self.doc_passes,
            "short_target_share_doc_passes": self.short_target_doc_passes / self.doc_passes if self.doc_passes else 0.0,
            "sop_label_counts": {"0": self.sop_labels[0], "1": self.sop_labels[1]},
            "sop_label_1_share": self.sop_labels[1] / inst if inst else 0.0,
            "sop_swap_decisions": {"kept": swaps - swapped, "swapped": swapped},
            "sop_swap_label_1_share": swapped / swaps if swaps else 0.0,
            "sop_random_next_instances": self.sop_random_next,
            "sop_random_next_share": self.sop_random_next / inst if inst else 0.0,
            "masked_tokens": self.masked_tokens,
            "masked_token_share": self.masked_tokens / self.tokens if self.tokens else 0.0,
            "masked_per_instance": self.masked_tokens / inst if inst else 0.0,
            "ngram_span_counts": {str(n): c for n, c in enumerate(self.ngram_hist) if c},
            "ngram_span_shares": _shares(self.ngram_hist),
            "ngram_drawn_shares": _shares(self.ngram_drawn_hist),
            "replacement_counts": {"mask": self.kinds[KIND_MASK], "random": self.kinds[KIND_RANDOM],
                                   "keep": self.kinds[KIND_KEEP]},
            "replacement_shares": {
                "mask": self.kinds[KIND_MASK] / kinds_total if kinds_total else 0.0,
                "random": self.kinds[KIND_RANDOM] / kinds_total if kinds_total else 0.0,
                "keep": self.kinds[KIND_KEEP] / kinds_total if kinds_total else 0.0,
            },
        }
