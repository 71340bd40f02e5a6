"""The pretraining data node's TFX component, ``PretrainingDataGen``: a thin shell over the Beam graph of
:mod:`components.datagen.datagen_beam`.

What every node's shell shares (staged outputs, Beam counters, the local Beam runner): :mod:`components.node_shell`.
"""
import json
import logging
import os
import posixpath
import tempfile

import apache_beam as beam
import tensorflow as tf
from tfx.dsl.component.experimental.annotations import BeamComponentParameter, InputArtifact, OutputArtifact, Parameter
from tfx.dsl.component.experimental.decorators import component
from tfx.types import standard_artifacts

from components import artifacts
from components.corpus import corpus_beam
from components.datagen import datagen_beam, dev_documents
from components.datagen.datagen_config import DataGenConfig
from components.file_io import copy_tree, publish
from components.node_shell import record_counters, staged
from components.text.tokenizers import SPEC_FILE, vocab_file_name
from components.vocab.vocab_lib import vocab_folder_spec
from trainer import examples_info
from trainer.files import STATS_FILE

_LOG = logging.getLogger(__name__)


@component(use_beam=True)
def PretrainingDataGen(
    documents: InputArtifact[artifacts.Documents],
    vocab: InputArtifact[artifacts.SentencePieceModel],
    examples: OutputArtifact[standard_artifacts.Examples],
    statistics: OutputArtifact[artifacts.DataGenStatistics],
    config: Parameter[str],
    seed: Parameter[int],
    squad_dev: InputArtifact[artifacts.RawCorpus] = None,
    race_dev: InputArtifact[artifacts.RawCorpus] = None,
    data_snapshot: Parameter[str] = None,
    beam_pipeline: BeamComponentParameter[beam.Pipeline] = None,
) -> None:
    """Documents → ``[CLS] A [SEP] B [SEP]`` SOP instances with n-gram masking, as sharded TFRecords.

    With ``datagen.eval_source=benchmark_dev`` the eval split is built from the SQuAD (``dev*.json``) and
    RACE (``dev/``) articles of ``squad_dev`` / ``race_dev``, the paper's pretraining dev set.
    With ``datagen.long_max_seq_length`` (BERT's two-phase sequence length) the same documents' long instances
    are the ``train_long`` / ``eval_long`` splits of the same artifact.

    ``do_lower_case`` comes from the vocabulary artifact. The examples carry ``dataset_info.json``
    (and the same facts as properties) with a content fingerprint that keys the Trainer's checkpoints.
    """
    d = DataGenConfig.from_json(config, "datagen.")
    do_lower_case = bool(vocab.get_int_custom_property("do_lower_case")) if \
        vocab.has_custom_property("do_lower_case") else True
    spec = vocab_folder_spec(vocab.uri, do_lower_case)
    spm_src = posixpath.join(vocab.uri, vocab_file_name(spec))
    with staged(examples.uri) as ex_staging, staged(statistics.uri) as st_staging:
        # The vocabulary travels with the data so the Trainer (whose inputs TFX fixes) can find it.
        tf.io.gfile.makedirs(posixpath.join(ex_staging, "vocab"))
        for name in [vocab_file_name(spec)] + ([SPEC_FILE] if spec.needs_file else []):
            tf.io.gfile.copy(posixpath.join(vocab.uri, name), posixpath.join(ex_staging, "vocab", name),
                             overwrite=True)
        long_params = datagen_beam.long_instance_params(d)  # BERT's two-phase sequence length (None: off)
        splits = datagen_beam.output_splits(long_params is not None)
        output_dirs = {s: posixpath.join(ex_staging, f"Split-{s}") for s in splits}
        for path in output_dirs.values():
            tf.io.gfile.makedirs(path)
        eval_files = None
        if d.eval_source == "benchmark_dev":
            eval_files = [_dev_documents_file(squad_dev, race_dev, posixpath.join(ex_staging, ".dev-documents"))]
        with beam_pipeline as p:
            datagen_beam.build_pretraining_data(
                p, corpus_beam.document_shards(documents.uri), spm_src, output_dirs,
                posixpath.join(st_staging, STATS_FILE), params=datagen_beam.instance_params(d),
                seed=seed, dupe_factor=d.dupe_factor, num_shards=d.num_shards, eval_fraction=d.eval_fraction,
                compression=d.compression, compression_level=d.compression_level,
                tokenizer_spec=spec, word_starts=d.word_starts, random_pool_size=d.random_pool_documents,
                random_pool_max_chars=d.random_pool_max_chars, eval_document_files=eval_files,
                long_params=long_params)
        record_counters(p, "albert.datagen", [examples, statistics])
        names = ["vocab"] + [f"Split-{s}" for s in splits]
        vocab_size = vocab.get_int_custom_property("vocab_size") if vocab.has_custom_property("vocab_size") else 0
        info = examples_info.make_info(d, do_lower_case, vocab_size, examples_info.fingerprint(ex_staging, names))
        examples_info.write_info(ex_staging, info)
        # Only the outputs move; the spill folder (normally already removed) stays behind and is deleted.
        publish(ex_staging, examples.uri, names=names + [examples_info.INFO_FILE], last=[examples_info.INFO_FILE])
        publish(st_staging, statistics.uri, names=[STATS_FILE])
    examples.split_names = json.dumps(list(splits))
    examples.set_string_custom_property("payload_format", "FORMAT_TF_EXAMPLE")
    with tf.io.gfile.GFile(posixpath.join(statistics.uri, STATS_FILE)) as f:
        stats = json.load(f)
    for split, s in stats["splits"].items():
        examples.set_int_custom_property(f"{split}_instances", int(s["instances"]))
        statistics.set_int_custom_property(f"{split}_instances", int(s["instances"]))
    examples.set_string_custom_property("feature_spec", "official ALBERT (input_ids, input_mask, segment_ids, "
                                        "token_boundary, masked_lm_*, next_sentence_labels)")
    for key, value in info.items():
        if isinstance(value, bool) or isinstance(value, int):
            examples.set_int_custom_property(key, int(value))
        else:
            examples.set_string_custom_property(key, str(value))


def _dev_documents_file(squad, race, folder: str) -> str:
    """SQuAD ``dev*.json`` and RACE ``dev/`` articles → one documents file in ``folder`` (the eval split)."""
    with tempfile.TemporaryDirectory() as tmp:
        squad_files = []
        if squad is not None:
            for name in sorted(n.rstrip("/") for n in tf.io.gfile.listdir(squad.uri)):
                if name.startswith("dev") and name.endswith(".json"):
                    local = os.path.join(tmp, name)
                    tf.io.gfile.copy(posixpath.join(squad.uri, name), local)
                    squad_files.append(local)
        race_dir = None
        if race is not None and tf.io.gfile.isdir(posixpath.join(race.uri, "dev")):
            race_dir = os.path.join(tmp, "race")
            copy_tree(posixpath.join(race.uri, "dev"), os.path.join(race_dir, "dev"))
        docs = dev_documents.dev_documents(squad_files, race_dir)
        tf.io.gfile.makedirs(folder)
        local_out = os.path.join(tmp, "dev-documents.txt")
        dev_documents.write_documents(docs, local_out)
        out = posixpath.join(folder, "dev-documents.txt")
        tf.io.gfile.copy(local_out, out, overwrite=True)
    return out
