"""``albert-pipeline make-pretraining-data``: the DAG's data-generation Beam code, outside TFX.

Output layout equals the ``Examples`` artifact the pipeline writes (``Split-train/``,
``Split-eval/``, with ``datagen.long_max_seq_length`` also ``Split-train_long/`` and ``Split-eval_long/``,
``stats.json``, ``vocab/spm.model``, ``dataset_info.json``). It is built in a sibling temporary folder
and renamed into place only when complete, so an interrupted run leaves no output behind.
"""
from __future__ import annotations

import json
import logging
import os
import shutil
from typing import Dict, List, Optional, Sequence

import apache_beam as beam
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.options.pipeline_options import PipelineOptions

from components import beam_options
from components.datagen import datagen_beam
from components.text.corrupt_input import CorruptInputError
from components.text.tokenizers import SPEC_FILE, TokenizerSpec, load_tokenizer, vocab_file_name
from components.text.vocab_files import vocabulary_kind
from config.errors import MissingInputError, OutputExistsError
from trainer import examples_info
from trainer.files import STATS_FILE

LOG = logging.getLogger(__name__)


def expand_inputs(inputs: Sequence[str]) -> List[str]:
    """Folders → their ``documents-*.txt`` shards (or every ``*.txt``); files stay as given."""
    files: List[str] = []
    for item in inputs:
        if os.path.isdir(item):
            names = sorted(os.listdir(item))
            shards = [n for n in names if n.startswith("documents-") and n.endswith(".txt")]
            chosen = shards or [n for n in names if n.endswith(".txt")]
            if not chosen:
                raise MissingInputError(f"{item}: no documents-*.txt or *.txt files")
            files.extend(os.path.join(item, n) for n in chosen)
        elif os.path.isfile(item):
            files.append(item)
        else:
            raise MissingInputError(f"input {item!r} does not exist")
    return files


def _is_blank(path: str, chunk: int = 1 << 20) -> bool:
    with open(path, "rb") as f:
        while True:
            data = f.read(chunk)
            if not data:
                return True
            if data.strip():
                return False


def make_pretraining_data(inputs: Sequence[str], vocab: str, output: str, config, workers: int = 1,
                          counters: Optional[Dict[str, int]] = None) -> Dict:
    """Write the Examples layout to ``output``; returns stats.json. ``vocab``: a SentencePiece model or a WordPiece
    ``vocab.txt`` (the kind read from its content), tokenizing with ``config.vocab``'s text settings and masking
    with ``config.datagen.word_starts``. ``counters`` (a dict) receives the run's Beam counters (namespace
    ``albert.datagen``), which are also logged."""
    if os.path.exists(output) and os.listdir(output):
        raise OutputExistsError(f"output folder {output} exists and is not empty")
    if not os.path.isfile(vocab):
        raise MissingInputError(f"vocabulary {vocab} (--vocab) does not exist")
    with open(vocab, "rb") as f:
        data = f.read()
    spec = TokenizerSpec.for_vocab(vocabulary_kind(data, vocab), config.vocab)
    vocab_size = load_tokenizer(data, spec, vocab).vocab_size  # checks the special pieces before anything runs
    files = expand_inputs(inputs)
    if all(_is_blank(path) for path in files):
        raise CorruptInputError(", ".join(files), "empty input: every input file is empty or blank, so there would be no training instances")
    tmp = output.rstrip("/") + f".tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    d = config.datagen
    long_params = datagen_beam.long_instance_params(d)
    splits = datagen_beam.output_splits(long_params is not None)
    dirs = {s: os.path.join(tmp, f"Split-{s}") for s in splits}
    for path in dirs.values():
        os.makedirs(path)
    os.makedirs(os.path.join(tmp, "vocab"))
    shutil.copyfile(vocab, os.path.join(tmp, "vocab", vocab_file_name(spec)))
    if spec.needs_file:
        with open(os.path.join(tmp, "vocab", SPEC_FILE), "w", encoding="utf-8") as f:
            f.write(spec.to_json())
    options = PipelineOptions(beam_options.local_args(workers))
    try:
        p = beam.Pipeline(options=options)
        datagen_beam.build_pretraining_data(
            p, files, vocab, dirs, os.path.join(tmp, STATS_FILE),
            params=datagen_beam.instance_params(d), seed=config.seed, dupe_factor=d.dupe_factor,
            num_shards=d.num_shards, eval_fraction=d.eval_fraction, compression=d.compression,
            compression_level=d.compression_level, tokenizer_spec=spec, word_starts=d.word_starts,
            random_pool_size=d.random_pool_documents, random_pool_max_chars=d.random_pool_max_chars,
            long_params=long_params)
        result = p.run()
        result.wait_until_finish()
        names = ["vocab"] + [f"Split-{s}" for s in splits]
        examples_info.write_info(tmp, examples_info.make_info(
            d, config.vocab.do_lower_case, vocab_size, examples_info.fingerprint(tmp, names)))
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if os.path.exists(output):
        os.rmdir(output)  # empty (checked above)
    os.replace(tmp, output)
    found = beam_counters(result, "albert.datagen")
    LOG.info("datagen: %s", ", ".join(f"{k} {v:,}" for k, v in sorted(found.items())))
    if counters is not None:
        counters.update(found)
    with open(os.path.join(output, STATS_FILE)) as f:
        return json.load(f)


def beam_counters(result, namespace: str) -> Dict[str, int]:
    """The committed counters of ``namespace`` from a finished Beam run (what Dataflow shows live)."""
    found = result.metrics().query(MetricsFilter().with_namespace(namespace))["counters"]
    out: Dict[str, int] = {}
    for c in found:
        out[c.key.metric.name] = out.get(c.key.metric.name, 0) + int(c.committed or 0)
    return out
