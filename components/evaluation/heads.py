"""Task heads on the pretrained encoder, and their losses (the official release's models).

* :class:`ClassifierModel` – GLUE (``run_classifier.py``): pooled output → dropout → dense.
* :class:`SpanModel` – SQuAD v1.1 (``squad_utils.create_v1_model``): dense H→2 on the *undropped* sequence
  output, no position masking (the official v1 head has neither; invalid spans are filtered when decoding).
* :class:`SquadV2Model` – SQuAD v2.0 (``squad_utils.create_v2_model``): start logits; end logits conditioned on
  the start (dense → tanh → LayerNorm → dense over ``[h ; h_start]``), with the gold start in training and a
  top-k start × top-k end beam at inference; ``p_mask`` (question, ``[SEP]``, padding) blocks both; an
  answerability logit from ``[Σ softmax(start)·h ; h_[CLS]]`` (dense → tanh → dropout → dense without bias).
* :class:`MultipleChoiceModel` – RACE (``race_utils``): pooled output per option → dropout → dense(1).

Every head's weights are drawn from truncated normals (std ``initializer_range``) seeded by the run's seed, so
a fine-tuning run is reproducible.
"""
from __future__ import annotations

import dataclasses
import json
import os
from typing import Any, Dict, Tuple


import tensorflow as tf
import tf_keras

from trainer.modeling_albert import AlbertConfig, AlbertModel
from trainer.files import CONFIG_FILE, ENCODER_CKPT

__all__ = [
    "FEATURE_KEYS",
    "load_encoder_config",
    "build_encoder",
    "ClassifierModel",
    "SpanModel",
    "SquadV2Model",
    "MultipleChoiceModel",
    "classification_loss",
    "regression_loss",
    "span_loss",
    "squad_v2_loss",
]

FEATURE_KEYS = ("input_ids", "input_mask", "segment_ids")
_MASKED = 1e30  # official: logits * (1 - p_mask) - 1e30 * p_mask


def load_encoder_config(albert_dir: str) -> AlbertConfig:
    return AlbertConfig.from_json_file(os.path.join(albert_dir, CONFIG_FILE))


def build_encoder(albert_dir: str, dropout: float, max_seq_length: int, restore: bool = True) -> AlbertModel:
    """The pretrained encoder with its dropout set to ``dropout`` (hidden and attention): the "ALBERT DR" column
    of the paper's Table 14 replaces the pretraining config's dropout, as ``--albert_dropout`` would.

    ``restore=False``: the same architecture left at its random initialisation (drawn from the global seed the
    caller set), the "no pretraining" baseline arm."""
    config = dataclasses.replace(load_encoder_config(albert_dir), hidden_dropout_prob=float(dropout),
                                 attention_probs_dropout_prob=float(dropout))
    if max_seq_length > config.max_position_embeddings:
        raise ValueError(f"max_seq_length {max_seq_length} exceeds the model's max_position_embeddings "
                         f"{config.max_position_embeddings}")
    encoder = AlbertModel(config)
    encoder(encoder.dummy_inputs(batch_size=1, seq_len=min(8, max_seq_length)), training=False)
    if restore:
        ckpt = os.path.join(albert_dir, ENCODER_CKPT)
        tf.train.Checkpoint(encoder=encoder).read(ckpt).assert_existing_objects_matched()
    return encoder


def _init(encoder: AlbertModel, seed: int):
    return tf_keras.initializers.TruncatedNormal(stddev=encoder.config.initializer_range, seed=seed)


def _features(inputs: Dict[str, tf.Tensor]) -> Dict[str, tf.Tensor]:
    return {k: inputs[k] for k in FEATURE_KEYS}


def _inference_config(config: AlbertConfig) -> AlbertConfig:
    """``config`` without its dropout: what inference computes does not depend on it."""
    return dataclasses.replace(config, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)


class _DescribedHead:
    """Heads are rebuilt from code, never from a Keras config. ``get_config`` describes the head and its encoder,
    which also keeps tf_keras from warning, at every save, that the encoder argument is not serialisable.

    ``twin()`` builds a model of the same architecture (its own untrained weights, no dropout): the one model of
    each ``twin_key()`` that :func:`components.evaluation.finetune.predict` runs, after copying in the weights of
    the model asked about, so every model of that shape shares one traced inference function."""

    def get_config(self):
        return {"name": self.name, "head": type(self).__name__, "encoder": self.albert.get_config()}

    def _twin_args(self) -> Dict[str, Any]:
        """The head's constructor arguments besides the encoder, as its twin takes them (no dropout, seed 0)."""
        raise NotImplementedError

    def twin(self) -> tf_keras.Model:
        return type(self)(AlbertModel(_inference_config(self.albert.config)), **self._twin_args())

    def twin_key(self) -> Tuple[str, ...]:
        """Equal for two models that compute the same function of their weights at inference."""
        return (type(self).__name__, self.dtype_policy.name,
                json.dumps(_inference_config(self.albert.config).to_dict(), sort_keys=True),
                json.dumps(self._twin_args(), sort_keys=True))


class ClassifierModel(_DescribedHead, tf_keras.Model):
    """pooled output → dropout → dense(num_labels) (num_labels = 1: regression). Output ``logits``."""

    input_keys = FEATURE_KEYS
    # Outputs ignore trailing padding (masked keys, [CLS] read): batches may be cut to their longest example.
    padding_invariant = True

    def __init__(self, encoder: AlbertModel, num_labels: int, dropout: float, seed: int, **kwargs):
        super().__init__(**kwargs)
        self.albert = encoder
        self.dropout = tf_keras.layers.Dropout(dropout, seed=seed)
        self.classifier = tf_keras.layers.Dense(num_labels, kernel_initializer=_init(encoder, seed),
                                                name="classifier")

    def _twin_args(self):
        return {"num_labels": int(self.classifier.units), "dropout": 0.0, "seed": 0}

    def call(self, inputs, training=False):
        pooled = self.albert(_features(inputs), training=training)["pooled_output"]
        return {"logits": tf.cast(self.classifier(self.dropout(pooled, training=training)), tf.float32)}


class SpanModel(_DescribedHead, tf_keras.Model):
    """SQuAD v1.1: dense H→2 on the sequence output → ``start_logits``, ``end_logits`` over every position.

    As the official v1 head: no dropout on the sequence output and no masking (padding and question positions
    take part in the softmax; :func:`components.evaluation.squad.decoding.postprocess_squad` filters invalid spans), so
    its batches keep ``max_seq_length``: the padding changes the loss and the [B, L] logits.
    """

    input_keys = FEATURE_KEYS

    def __init__(self, encoder: AlbertModel, seed: int, **kwargs):
        super().__init__(**kwargs)
        self.albert = encoder
        self.span = tf_keras.layers.Dense(2, kernel_initializer=_init(encoder, seed), name="span")

    def _twin_args(self):
        return {"seed": 0}

    def call(self, inputs, training=False):
        seq = self.albert(_features(inputs), training=training)["sequence_output"]
        logits = tf.cast(self.span(seq), tf.float32)
        return {"start_logits": logits[..., 0], "end_logits": logits[..., 1]}


class _ConditionedEnd(tf_keras.layers.Layer):
    """End logits given a start: ``dense_1(LayerNorm(tanh(dense_0([h_t ; h_start]))))`` for every position t.

    ``dense_0``'s kernel is one ``[2H, H]`` matrix as officially; it is applied as ``h_t·W_h + h_start·W_s`` so
    the ``[B, L, k, 2H]`` concatenation of the inference beam is never built (same function, less memory).
    """

    def __init__(self, config: AlbertConfig, seed: int, **kwargs):
        super().__init__(**kwargs)
        self.hidden_size = config.hidden_size
        self.dense_0 = tf_keras.layers.Dense(config.hidden_size, kernel_initializer=tf_keras.initializers.TruncatedNormal(
            stddev=config.initializer_range, seed=seed), name="dense_0")
        self.layer_norm = tf_keras.layers.LayerNormalization(axis=-1, epsilon=config.layer_norm_eps, name="LayerNorm")
        self.dense_1 = tf_keras.layers.Dense(1, kernel_initializer=tf_keras.initializers.TruncatedNormal(
            stddev=config.initializer_range, seed=seed + 1), name="dense_1")

    def build(self, input_shape=None):
        self.dense_0.build((None, 2 * self.hidden_size))
        self.layer_norm.build((None, None, None, self.hidden_size))  # always [B, k, L, H]
        self.dense_1.build((None, self.hidden_size))
        super().build(input_shape)

    def call(self, seq: tf.Tensor, start_features: tf.Tensor) -> tf.Tensor:
        """seq [B, L, H], start_features [B, k, H] → end logits [B, k, L]."""
        if not self.built:
            self.build()
        kernel = tf.cast(self.dense_0.kernel, seq.dtype)
        w_h, w_s = kernel[:self.hidden_size], kernel[self.hidden_size:]
        x = (tf.einsum("blh,hd->bld", seq, w_h)[:, None]                     # [B, 1, L, H]
             + tf.einsum("bkh,hd->bkd", start_features, w_s)[:, :, None]     # [B, k, 1, H]
             + tf.cast(self.dense_0.bias, seq.dtype))
        x = self.layer_norm(tf.tanh(x))
        return tf.cast(self.dense_1(x)[..., 0], tf.float32)


class SquadV2Model(_DescribedHead, tf_keras.Model):
    """The official SQuAD v2.0 model (``create_v2_model`` of google-research/albert ``squad_utils.py``).

    Inputs: the features plus ``p_mask`` (1 = not a possible answer position: question, ``[SEP]``, padding;
    ``[CLS]`` and context are 0) and, with ``training=True``, ``start_positions`` (the gold start conditions
    the end logits, teacher forcing as officially).

    Outputs with ``training=True``: ``start_log_probs`` / ``end_log_probs`` [B, L] and ``cls_logits`` [B].
    Otherwise the beam: ``start_top_log_probs`` / ``start_top_index`` [B, k_s] and ``end_top_log_probs`` /
    ``end_top_index`` [B, k_s·k_e] (row ``i·k_e + j`` is the j-th end for the i-th start), and ``cls_logits``.
    ``cls_logits`` (higher = unanswerable) reads the raw ``[CLS]`` hidden state and the start-probability-
    weighted sequence; it does not depend on the end, so one value per window.
    """

    input_keys = FEATURE_KEYS + ("p_mask",)

    def __init__(self, encoder: AlbertModel, dropout: float, seed: int, start_n_top: int = 5, end_n_top: int = 5,
                 **kwargs):
        super().__init__(**kwargs)
        self.albert = encoder
        config = encoder.config
        self.start_n_top, self.end_n_top = int(start_n_top), int(end_n_top)
        self.start_dense = tf_keras.layers.Dense(1, kernel_initializer=_init(encoder, seed), name="start_logits")
        self.end_logits = _ConditionedEnd(config, seed + 1, name="end_logits")
        self.answer_dense_0 = tf_keras.layers.Dense(config.hidden_size, activation="tanh",
                                                    kernel_initializer=_init(encoder, seed + 3), name="answer_dense_0")
        self.answer_dropout = tf_keras.layers.Dropout(dropout, seed=seed)
        self.answer_dense_1 = tf_keras.layers.Dense(1, use_bias=False, kernel_initializer=_init(encoder, seed + 4),
                                                    name="answer_dense_1")

    def _twin_args(self):
        return {"dropout": 0.0, "seed": 0, "start_n_top": self.start_n_top, "end_n_top": self.end_n_top}

    def call(self, inputs, training=False):
        seq = self.albert(_features(inputs), training=training)["sequence_output"]
        p_mask = tf.cast(inputs["p_mask"], tf.float32)
        start_logits = tf.cast(self.start_dense(seq)[..., 0], tf.float32)
        start_masked = start_logits * (1.0 - p_mask) - _MASKED * p_mask
        start_log_probs = tf.nn.log_softmax(start_masked, axis=-1)
        out: Dict[str, tf.Tensor] = {}
        if training:
            gold = tf.reshape(tf.cast(inputs["start_positions"], tf.int32), [-1])
            start_features = tf.gather(seq, gold[:, None], batch_dims=1)              # [B, 1, H]
            end_masked = self._mask(self.end_logits(seq, start_features)[:, 0], p_mask)
            out["start_log_probs"] = start_log_probs
            out["end_log_probs"] = tf.nn.log_softmax(end_masked, axis=-1)
        else:
            length = tf.shape(seq)[1]
            k_s = tf.minimum(self.start_n_top, length)
            start_top_log_probs, start_top_index = tf.nn.top_k(start_log_probs, k=k_s)
            start_features = tf.gather(seq, start_top_index, batch_dims=1)            # [B, k_s, H]
            end_masked = self._mask(self.end_logits(seq, start_features), p_mask[:, None])   # [B, k_s, L]
            end_log_probs = tf.nn.log_softmax(end_masked, axis=-1)
            end_top_log_probs, end_top_index = tf.nn.top_k(end_log_probs, k=tf.minimum(self.end_n_top, length))
            batch = tf.shape(seq)[0]
            out["start_top_log_probs"] = start_top_log_probs
            out["start_top_index"] = start_top_index
            out["end_top_log_probs"] = tf.reshape(end_top_log_probs, [batch, -1])
            out["end_top_index"] = tf.reshape(end_top_index, [batch, -1])
        # Answerability: [Σ softmax(start)·h ; h_[CLS]] → dense tanh → dropout → dense (no bias).
        start_p = tf.nn.softmax(start_masked, axis=-1)
        start_feature = tf.einsum("bl,blh->bh", start_p, tf.cast(seq, tf.float32))
        cls_feature = tf.cast(seq[:, 0], tf.float32)
        h = self.answer_dense_0(tf.concat([start_feature, cls_feature], axis=-1))
        h = self.answer_dropout(h, training=training)
        out["cls_logits"] = tf.cast(self.answer_dense_1(h)[:, 0], tf.float32)
        return out

    @staticmethod
    def _mask(logits, p_mask):
        return logits * (1.0 - p_mask) - _MASKED * p_mask


class MultipleChoiceModel(_DescribedHead, tf_keras.Model):
    """[B, C, L] → pooled output per option → dropout → dense(1) → logits [B, C]."""

    input_keys = FEATURE_KEYS
    padding_invariant = True  # as ClassifierModel's

    def __init__(self, encoder: AlbertModel, dropout: float, seed: int, **kwargs):
        super().__init__(**kwargs)
        self.albert = encoder
        self.dropout = tf_keras.layers.Dropout(dropout, seed=seed)
        self.classifier = tf_keras.layers.Dense(1, kernel_initializer=_init(encoder, seed), name="classifier")

    def _twin_args(self):
        return {"dropout": 0.0, "seed": 0}

    def call(self, inputs, training=False):
        ids = inputs["input_ids"]
        num_choices, length = tf.shape(ids)[1], tf.shape(ids)[2]
        flat = {k: tf.reshape(inputs[k], [-1, length]) for k in FEATURE_KEYS}
        pooled = self.albert(flat, training=training)["pooled_output"]
        logits = tf.cast(self.classifier(self.dropout(pooled, training=training)), tf.float32)
        return {"logits": tf.reshape(logits, [-1, num_choices])}


# ---------------------------------------------------------------------------------------------
# Losses (official definitions)


def classification_loss(outputs, batch):
    return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=tf.cast(batch["label_ids"], tf.int32), logits=outputs["logits"]))


def regression_loss(outputs, batch):
    return tf.reduce_mean(tf.square(outputs["logits"][:, 0] - tf.cast(batch["label_ids"], tf.float32)))


def span_loss(outputs, batch):
    """v1: ½ (CE(start) + CE(end)) over all positions."""
    ce = tf.nn.sparse_softmax_cross_entropy_with_logits
    return 0.5 * (tf.reduce_mean(ce(labels=tf.cast(batch["start_positions"], tf.int32), logits=outputs["start_logits"]))
                  + tf.reduce_mean(ce(labels=tf.cast(batch["end_positions"], tf.int32), logits=outputs["end_logits"])))


def squad_v2_loss(outputs, batch):
    """v2: ½ (NLL(start) + NLL(end | gold start)) + ½ BCE(is_impossible, cls_logits), as officially."""
    def nll(log_probs, positions):
        picked = tf.gather(log_probs, tf.reshape(tf.cast(positions, tf.int32), [-1, 1]), batch_dims=1)
        return -tf.reduce_mean(picked)

    loss = 0.5 * (nll(outputs["start_log_probs"], batch["start_positions"])
                  + nll(outputs["end_log_probs"], batch["end_positions"]))
    return loss + 0.5 * tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(
        labels=tf.cast(tf.reshape(batch["is_impossible"], [-1]), tf.float32), logits=outputs["cls_logits"]))
