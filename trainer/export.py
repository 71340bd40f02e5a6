"""What a finished pretraining run hands on: the serving SavedModel and the ``albert`` folder of raw artifacts.

The SavedModel is for serving and interop (token ids in, encoder outputs and both heads' logits out). The
benchmark nodes fine-tune from the raw artifacts instead (official-key config, encoder-only checkpoint), and
``trainer.convert`` and ``trainer.checkpoint_interop`` read and write the same layout. File names:
:mod:`trainer.files`.
"""
from __future__ import annotations

import json
import os
import posixpath
from typing import Dict, Sequence

import tensorflow as tf

from trainer.files import CONFIG_FILE, ENCODER_CKPT, EXPORT_INFO_FILE, PRETRAINING_CKPT
from trainer.modeling_albert import AlbertForPreTraining


class Untracked:
    """Holds a Keras model where ``tf.Module`` does not follow it (a plain object is not trackable): a SavedModel's
    signature calls the model, and the SavedModel saves the variables it reads, not the Keras objects."""

    def __init__(self, model):
        self.model = model


class ServingModule(tf.Module):
    """SavedModel with one signature: token ids in, sequence/pooled outputs and MLM/sentence logits out."""

    def __init__(self, model: AlbertForPreTraining):
        super().__init__()
        # The SavedModel tracks the variables the signature reads, not the Keras model: a tracked Keras model makes
        # tf.saved_model.save serialize every layer for Keras reloading (tracing each layer's call functions),
        # which took 7-16 s of each export of albert-tiny on 2 cores and which nothing here loads.
        self.model_variables = list(model.variables)
        self._model = Untracked(model)

    # autograph=False: the model is plain Python control flow, and converting every layer's ``call`` cost about
    # 1 s of each export (AST rewriting at trace time; as in trainer/train_step.py and the fine-tuning steps).
    @tf.function(autograph=False, input_signature=[
        tf.TensorSpec([None, None], tf.int32, name="input_ids"),
        tf.TensorSpec([None, None], tf.int32, name="input_mask"),
        tf.TensorSpec([None, None], tf.int32, name="segment_ids"),
    ])
    def serve(self, input_ids, input_mask, segment_ids):
        batch, length = tf.shape(input_ids)[0], tf.shape(input_ids)[1]
        positions = tf.tile(tf.range(length)[tf.newaxis, :], [batch, 1])
        outputs = self._model.model({"input_ids": input_ids, "input_mask": input_mask, "segment_ids": segment_ids,
                                     "masked_lm_positions": positions}, training=False)
        result = {"sequence_output": tf.cast(outputs["sequence_output"], tf.float32),
                  "pooled_output": tf.cast(outputs["pooled_output"], tf.float32),
                  "mlm_logits": tf.cast(outputs["mlm_logits"], tf.float32)}
        if "sentence_logits" in outputs:
            result["sentence_logits"] = tf.cast(outputs["sentence_logits"], tf.float32)
        return result


def export(model: AlbertForPreTraining, serving_dir: str, albert_dir: str, vocab_files: Sequence[str],
           extra: Dict[str, object]) -> None:
    """Write the serving SavedModel and the raw artifacts fine-tuning and interop need.

    ``albert_dir`` holds ``albert_config.json`` (official key names), the encoder-only checkpoint that
    the benchmark components restore, the full pretraining checkpoint, the vocabulary (``vocab_files``: the
    ``spm.model`` or ``vocab.txt`` and, where there is one, its ``tokenizer.json``; trainer/vocabulary.py) and
    ``export_info.json``.
    """
    module = ServingModule(model)
    tf.saved_model.save(module, serving_dir, signatures={"serving_default": module.serve})
    tf.io.gfile.makedirs(albert_dir)
    model.config.to_json_file(os.path.join(albert_dir, CONFIG_FILE), official=True)
    tf.train.Checkpoint(encoder=model.albert).write(os.path.join(albert_dir, ENCODER_CKPT))
    tf.train.Checkpoint(model=model).write(os.path.join(albert_dir, PRETRAINING_CKPT))
    for path in vocab_files:
        tf.io.gfile.copy(path, os.path.join(albert_dir, posixpath.basename(path)), overwrite=True)
    with tf.io.gfile.GFile(os.path.join(albert_dir, EXPORT_INFO_FILE), "w") as f:
        f.write(json.dumps(extra, indent=2, sort_keys=True, default=str))
