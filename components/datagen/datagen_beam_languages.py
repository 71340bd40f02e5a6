"""Language sampling in the Beam graph of ``components/datagen/datagen_beam.py`` (runs of several languages only: each
documents file holds one language's documents, :func:`components.text.documents.file_language`).

Small stages before generation measure each language's instances pass by pass
(:mod:`components.datagen.language_sampling`): a read that counts each language's training characters and documents;
a count of the instances of its first ``dupe_factor`` passes (all of a small language or one of few documents, else a
seeded sample of its documents: ``size_sample``), which gives n_L, the target shares and a first plan; and, for a
language that plan up-samples past the counted passes, up to ``SIZE_ROUNDS`` counts of its further passes, each
followed by a plan. Only per-language sums (characters and a short list of per-pass counts) travel through Beam; the
plan ({language: passes, target share, …}) is a side input of the generating stage. After generation, the
per-language counts of the train split become the ``per_language`` block of ``stats.json``.
"""
from __future__ import annotations

from typing import Dict, Optional, Tuple

import apache_beam as beam
import numpy as np

from components.datagen.datagen_beam_input import _Tokenizing, read_documents
from components.datagen.datagen_beam_pools import load_pools
from components.datagen.generate import tokenize_document
from components.datagen.instances import InstanceParams, create_instances_from_document, document_seed
from components.datagen.language_sampling import (SIZE_ROUNDS, SamplingRule, in_size_sample, passes_to_count,
                                                  plan_languages, realised_shares, scaled_counts, size_sample)
from components.text.documents import file_language

# Per language and split, what the generating stage counts (summed by a CombinePerKey).
COUNT_FIELDS = ("documents", "instances", "tokens", "masked_tokens", "padding_tokens")


def _language_characters(path: str, split_rule):
    """(language, (characters, documents)) of one documents file's training documents (nothing for an untagged
    file)."""
    language = file_language(path)
    if language is None:
        return
    chars = docs = 0
    for doc_id, sentences in read_documents(path):
        if split_rule(path, doc_id) != "train":
            continue
        chars += sum(map(len, sentences))
        docs += 1
    yield language, (chars, docs)


def _sum_tuples(rows):
    rows = list(rows)
    return tuple(sum(r[i] for r in rows) for i in range(len(rows[0]))) if rows else ()


def _sum_pass_counts(rows):
    """(characters, per-pass counts) summed: the characters, and the counts pass by pass."""
    rows = list(rows)
    return sum(r[0] for r in rows), tuple(sum(c) for c in zip(*(r[1] for r in rows)))


class _CountPasses(_Tokenizing):
    """One file → (language, (characters, instances of each counted pass)) of its documents in the language's size
    sample: passes 0 … dupe_factor-1 without ``plan``; with an intermediate ``plan``, its language's passes
    ``counted_passes`` … ``count_to``-1 (nothing for a language that needs no more)."""

    def __init__(self, vocab_path, tokenizer_spec, word_starts, segmenters, params: InstanceParams, seed: int,
                 dupe_factor: int):
        super().__init__(vocab_path, tokenizer_spec, word_starts, segmenters)
        self._params = params
        self._seed = seed
        self._dupe_factor = dupe_factor

    def setup(self):
        super().setup()
        self._pools_file = None
        self._pools = {}

    def process(self, path: str, characters: Dict[str, Tuple[int, int]], split_rule, pools_file: Optional[str] = None,
                plan: Optional[Dict[str, Dict[str, object]]] = None):
        language = file_language(path)
        if language is None or language not in characters:
            return
        first, stop = 0, self._dupe_factor
        if plan is not None:
            first, stop = int(plan[language]["counted_passes"]), int(plan[language]["count_to"])
            if stop <= first:
                return
        if pools_file is not None and pools_file != self._pools_file:
            self._pools, self._pools_file = load_pools(pools_file), pools_file
        rate = size_sample({k: v[0] for k, v in characters.items()}, {k: v[1] for k, v in characters.items()})[language]
        self.vocab = self.vocab_of(path)  # its language's word starts
        segmenter = self.segmenter_for(path)
        chars, counts = 0, [0] * (stop - first)
        for doc_id, sentences in read_documents(path):
            if split_rule(path, doc_id) != "train" or not in_size_sample(self._seed, doc_id, rate):
                continue
            chars += sum(map(len, sentences))
            ids = tokenize_document(self.tokenizer, sentences, self.vocab, segmenter)
            if not ids:
                continue
            pool = self._pools.get("train") if pools_file is not None else None  # a counted document trains
            random_document = pool.sampler(doc_id, alone=ids) if pool is not None else None
            for p in range(first, stop):  # the very generators of generation's passes
                rng = np.random.default_rng(document_seed(self._seed, doc_id, p))
                counts[p - first] += len(create_instances_from_document(ids, 0, rng, self._params, self.vocab,
                                                                        random_document))
        yield language, (chars, tuple(counts))


def language_plan(files: beam.PCollection, vocab_path: str, tokenizer_spec, word_starts: str,
                  segmenters: Optional[Dict[str, str]], params: InstanceParams, seed: int, dupe_factor: int,
                  rule: SamplingRule, split_rule, pools_side) -> beam.PCollection:
    """File names → one plan: {language: {characters, documents, size_instances, size_exact, target_share,
    target_instances, counted_passes, passes}}."""
    characters = (
        files
        | "LanguageCharacters" >> beam.FlatMap(_language_characters, split_rule)
        | "SumLanguageCharacters" >> beam.CombinePerKey(_sum_tuples)
        | "LanguageCharactersDict" >> beam.combiners.ToDict()
    )
    kwargs = {"pools_file": pools_side} if pools_side is not None else {}

    def count(stage: str, **side):
        return (files
                | f"{stage}Count" >> beam.ParDo(_CountPasses(vocab_path, tokenizer_spec, word_starts, segmenters,
                                                             params, seed, dupe_factor),
                                                beam.pvalue.AsSingleton(characters), split_rule, **kwargs, **side)
                | f"{stage}Sum" >> beam.CombinePerKey(_sum_pass_counts)
                | f"{stage}Dict" >> beam.combiners.ToDict())

    # The first dupe_factor passes; then up to SIZE_ROUNDS rounds, each counting the further passes the plan so far
    # places its partial pass in (a first plan from few passes of few documents can be short of the passes needed).
    first = count("LanguageSizeSample")
    more = []
    plan = first | "LanguagePlan0" >> beam.Map(build_plan, beam.pvalue.AsSingleton(characters), rule, dupe_factor)
    for r in range(1, SIZE_ROUNDS + 1):
        more.append(count(f"LanguageMorePasses{r}", plan=beam.pvalue.AsSingleton(plan)))
        plan = first | f"LanguagePlan{r}" >> beam.Map(build_plan, beam.pvalue.AsSingleton(characters), rule,
                                                       dupe_factor, *[beam.pvalue.AsSingleton(m) for m in more])
    return plan


def build_plan(samples: Dict[str, Tuple[int, Tuple[int, ...]]], characters: Dict[str, Tuple[int, int]],
               rule: SamplingRule, dupe_factor: int,
               *more) -> Dict[str, Dict[str, object]]:
    """The plan from the per-language sums (plain data: it is a side input and goes into the statistics):
    ``samples`` the counts of the first ``dupe_factor`` passes, ``more`` those of each round of further passes so far.
    Before the last round a row's ``count_to`` says up to which pass to count next (:func:`passes_to_count`)."""
    counts, exact = {}, {}
    for language in sorted(characters):
        chars = characters[language][0]
        sample_chars, passes = samples.get(language, (0, (0,) * dupe_factor))
        for extra in more:
            passes = tuple(passes) + tuple(extra.get(language, (0, ()))[1])
        counts[language] = scaled_counts(chars, sample_chars, passes)
        exact[language] = sample_chars == chars
    plans = plan_languages(rule, counts, dupe_factor)
    out = {}
    for language in sorted(characters):
        row = {"characters": characters[language][0], "documents": characters[language][1],
               "size_exact": exact[language], **plans[language], "counted_passes": len(counts[language])}
        if len(more) < SIZE_ROUNDS:  # a plan between rounds: the passes its language needs counted next
            row["count_to"] = passes_to_count(row["passes"], len(counts[language]))
        out[language] = row
    return out


def per_language_block(counts: Dict[Tuple[str, str], Tuple[int, ...]], plan: Dict[str, Dict[str, object]],
                       rule: SamplingRule, split: str = "train") -> Dict[str, object]:
    """``stats.json``'s ``per_language``: the sampling rule and, per language, the plan and the ``split``'s counts
    with the realised share of its instances beside the target."""
    languages = sorted(set(plan) | {lang for lang, s in counts if s == split})
    rows = {lang: dict(zip(COUNT_FIELDS, counts.get((lang, split), (0,) * len(COUNT_FIELDS)))) for lang in languages}
    realised = realised_shares({lang: rows[lang]["instances"] for lang in languages})
    out = {}
    for lang in languages:
        row = dict(plan.get(lang, {}))
        row.update(rows[lang])
        row["realised_share"] = realised[lang]
        out[lang] = row
    return {"sampling": rule.describe(), "split": split, "languages": out}
