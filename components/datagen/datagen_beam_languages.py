"""Language sampling in the Beam graph of ``components/datagen/datagen_beam.py`` (runs of several languages only: each
documents file holds one language's documents, :func:`components.text.documents.file_language`).

Two small stages before generation measure each language's size n_L in instances
(:mod:`components.datagen.language_sampling`): a read that counts each language's characters, then the instances per
pass of a seeded sample of each language's training documents (``size_sample``: all of a small language, over several
passes). Only per-language sums travel
through Beam; the plan ({language: passes, target share, …}) is a side input of the generating stage. After
generation, the per-language counts of the train split become the ``per_language`` block of ``stats.json``.
"""
from __future__ import annotations

from typing import Dict, Optional, Tuple

import apache_beam as beam
import numpy as np

from components.datagen.datagen_beam_input import _Tokenizing, read_documents
from components.datagen.datagen_beam_pools import load_pools
from components.datagen.generate import tokenize_document
from components.datagen.instances import InstanceParams, create_instances_from_document, document_seed
from components.datagen.language_sampling import (SamplingRule, estimated_size, in_size_sample, realised_shares,
                                                  size_sample)
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


class _CountSample(_Tokenizing):
    """One file → (language, (characters, pass-0 instances)) of its documents in the language's size sample."""

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

    def process(self, path: str, characters: Dict[str, Tuple[int, int]], split_rule, pools_file: Optional[str] = None):
        language = file_language(path)
        if language is None or language not in characters:
            return
        if pools_file is not None and pools_file != self._pools_file:
            self._pools, self._pools_file = load_pools(pools_file), pools_file
        rate, passes = size_sample({k: v[0] for k, v in characters.items()}, self._dupe_factor)[language]
        self.vocab = self.vocab_of(path)  # its language's word starts
        segmenter = self.segmenter_for(path)
        chars = instances = 0
        for doc_id, sentences in read_documents(path):
            if split_rule(path, doc_id) != "train" or not in_size_sample(self._seed, doc_id, rate):
                continue
            chars += sum(map(len, sentences))
            ids = tokenize_document(self.tokenizer, sentences, self.vocab, segmenter)
            if not ids:
                continue
            pool = self._pools.get(split_rule(path, doc_id)) if pools_file is not None else None
            random_document = pool.sampler(doc_id, alone=ids) if pool is not None else None
            for p in range(passes):  # the mean over the first passes: a short target draw moves one pass a lot
                rng = np.random.default_rng(document_seed(self._seed, doc_id, p))
                instances += len(create_instances_from_document(ids, 0, rng, self._params, self.vocab,
                                                                random_document))
        yield language, (chars, instances / passes)


def language_plan(files: beam.PCollection, vocab_path: str, tokenizer_spec, word_starts: str,
                  segmenters: Optional[Dict[str, str]], params: InstanceParams, seed: int, dupe_factor: int,
                  rule: SamplingRule, split_rule, pools_side) -> beam.PCollection:
    """File names → one plan: {language: {characters, documents, size_instances, size_exact, target_share,
    passes}}."""
    characters = (
        files
        | "LanguageCharacters" >> beam.FlatMap(_language_characters, split_rule)
        | "SumLanguageCharacters" >> beam.CombinePerKey(_sum_tuples)
        | "LanguageCharactersDict" >> beam.combiners.ToDict()
    )
    kwargs = {"pools_file": pools_side} if pools_side is not None else {}
    samples = (
        files
        | "LanguageSizeSample" >> beam.ParDo(_CountSample(vocab_path, tokenizer_spec, word_starts, segmenters, params,
                                                          seed, dupe_factor),
                                             beam.pvalue.AsSingleton(characters), split_rule,
                                             **kwargs)
        | "SumLanguageSamples" >> beam.CombinePerKey(_sum_tuples)
        | "LanguageSamplesDict" >> beam.combiners.ToDict()
    )
    return samples | "LanguagePlan" >> beam.Map(build_plan, beam.pvalue.AsSingleton(characters), rule, dupe_factor)


def build_plan(samples: Dict[str, Tuple[int, int]], characters: Dict[str, Tuple[int, int]], rule: SamplingRule,
               dupe_factor: int) -> Dict[str, Dict[str, object]]:
    """The plan from the per-language sums (plain data: it is a side input and goes into the statistics)."""
    sizes = {}
    for language in sorted(characters):
        chars = characters[language][0]
        sample_chars, sample_instances = samples.get(language, (0, 0))
        sizes[language] = estimated_size(chars, sample_chars, sample_instances)
    shares = rule.target_shares(sizes)
    passes = rule.passes(sizes, dupe_factor)
    return {language: {"characters": characters[language][0], "documents": characters[language][1],
                       "size_instances": sizes[language],
                       "size_exact": samples.get(language, (0, 0))[0] == characters[language][0],
                       "target_share": shares[language], "passes": passes[language]}
            for language in sorted(characters)}


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
