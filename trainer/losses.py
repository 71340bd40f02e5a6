"""The pretraining loss and metrics, as sums: the project's one pretraining loss.

ALBERT's official losses are means (MLM: ``sum(w * nll) / (sum(w) + 1e-5)``, the sentence task: the mean cross
entropy). A mean of means over micro-batches or replicas is not the mean of the global batch, so the Trainer
computes per-batch *sums* (:func:`loss_sums`) that add up exactly across micro-batches, replicas and hosts, and
divides once (:func:`metrics_from_sums`, :func:`loss_from_sums`). :func:`pretraining_losses` is the same arithmetic
on one batch, as the official dict of means (what ``benchmarks/pretrain_step.py`` and ``model_step.py`` step
on), so there is no second implementation to drift from the Trainer's.
"""
from __future__ import annotations

from typing import Dict, Mapping, Optional

import tensorflow as tf

METRIC_NAMES = ("loss", "mlm_loss", "sentence_loss", "mlm_accuracy", "sentence_accuracy")

# Indices into the per-micro-batch sums computed by loss_sums.
_MLM_NLL, _MLM_CORRECT, _MLM_WEIGHT, _SENT_CE, _SENT_CORRECT, _SENT_COUNT = range(6)
NUM_SUMS = 6


def loss_sums(outputs: Mapping[str, tf.Tensor], labels: Mapping[str, tf.Tensor],
              row_weights: Optional[tf.Tensor] = None) -> tf.Tensor:
    """[6] float32 sums over a batch: weighted MLM nll, weighted MLM hits, MLM weight, sentence ce, hits, count.

    Sums, not means, so micro-batches and replicas add up to the global batch exactly
    (``metrics_from_sums`` of one batch's sums is :func:`pretraining_losses` of that batch). ``row_weights`` [B]
    (1 real, 0 padding) leaves padded rows out of every sum: evaluation pads the held-out set to whole global
    batches so that every replica of every host runs the same number of steps.
    """
    logits = tf.cast(outputs["mlm_logits"], tf.float32)
    ids = tf.cast(labels["masked_lm_ids"], tf.int32)
    weights = tf.cast(labels["masked_lm_weights"], tf.float32)
    if row_weights is not None:
        row_weights = tf.cast(row_weights, tf.float32)
        weights = weights * row_weights[:, tf.newaxis]
    nll = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=ids, logits=logits)
    hits = tf.cast(tf.equal(tf.argmax(logits, axis=-1, output_type=tf.int32), ids), tf.float32)
    sentence_logits = outputs.get("sentence_logits")
    if sentence_logits is not None:
        sentence_logits = tf.cast(sentence_logits, tf.float32)
        sl = tf.reshape(tf.cast(labels["next_sentence_labels"], tf.int32), [-1])
        rows = tf.ones_like(sl, tf.float32) if row_weights is None else row_weights
        ce = tf.reduce_sum(rows * tf.nn.sparse_softmax_cross_entropy_with_logits(labels=sl, logits=sentence_logits))
        s_hits = tf.reduce_sum(rows * tf.cast(tf.equal(tf.argmax(sentence_logits, -1, output_type=tf.int32), sl),
                                              tf.float32))
        count = tf.reduce_sum(rows)
    else:
        ce = s_hits = count = tf.constant(0.0)
    return tf.stack([tf.reduce_sum(weights * nll), tf.reduce_sum(weights * hits), tf.reduce_sum(weights),
                     ce, s_hits, count])


def normalisers(labels: Mapping[str, tf.Tensor]) -> tf.Tensor:
    """[2]: real masked tokens and sequences of a batch (summed over the global batch before any forward pass)."""
    return tf.stack([tf.reduce_sum(tf.cast(labels["masked_lm_weights"], tf.float32)),
                     tf.cast(tf.shape(labels["next_sentence_labels"])[0], tf.float32)])


def loss_from_sums(sums: tf.Tensor, norm: tf.Tensor) -> tf.Tensor:
    """This batch's share of the loss of a batch whose masked-token / sequence counts are ``norm``
    (the official ``sum(w * nll) / (sum(w) + 1e-5)`` MLM loss plus the mean sentence loss)."""
    return sums[_MLM_NLL] / (norm[0] + 1e-5) + sums[_SENT_CE] / tf.maximum(norm[1], 1.0)


def metrics_from_sums(sums: tf.Tensor) -> tf.Tensor:
    """[len(METRIC_NAMES)] metric values of the batch whose summed ``loss_sums`` are ``sums``."""
    denominator = sums[_MLM_WEIGHT] + 1e-5
    count = tf.maximum(sums[_SENT_COUNT], 1.0)
    mlm, sentence = sums[_MLM_NLL] / denominator, sums[_SENT_CE] / count
    return tf.stack([mlm + sentence, mlm, sentence, sums[_MLM_CORRECT] / denominator, sums[_SENT_CORRECT] / count])


def pretraining_losses(outputs: Mapping[str, tf.Tensor], masked_lm_ids, masked_lm_weights,
                       next_sentence_labels=None) -> Dict[str, tf.Tensor]:
    """The official ALBERT pretraining losses of one batch, by name (float32 scalars, :data:`METRIC_NAMES`).

    mlm_loss = sum(w * nll) / (sum(w) + 1e-5); sentence_loss = mean cross entropy of the 2-way head;
    loss = mlm_loss + sentence_loss. Accuracies are weighted by ``masked_lm_weights`` (MLM) / unweighted (sentence).
    Missing sentence logits or labels give a zero sentence loss (and accuracy 0). The Trainer's arithmetic
    (``metrics_from_sums(loss_sums(...))``), for code that steps one batch at a time.
    """
    labels = {"masked_lm_ids": masked_lm_ids, "masked_lm_weights": masked_lm_weights}
    if next_sentence_labels is None:
        outputs = {k: v for k, v in outputs.items() if k != "sentence_logits"}
    else:
        labels["next_sentence_labels"] = next_sentence_labels
    values = metrics_from_sums(loss_sums(outputs, labels))
    return {name: values[i] for i, name in enumerate(METRIC_NAMES)}


class TrainMetrics(tf.Module):
    """Sums of the per-step global-batch metrics since the last log point.

    Checkpointed with the model: a run resumed between two log points logs the same window mean as the
    uninterrupted run. Plain (mirrored) variables updated in cross-replica context, once per optimizer step.
    """

    def __init__(self):
        super().__init__(name="train_metrics")
        self.total = tf.Variable(tf.zeros([len(METRIC_NAMES)], tf.float32), trainable=False, name="total")
        self.count = tf.Variable(0.0, trainable=False, name="count")

    def update(self, values: tf.Tensor, count: int = 1) -> None:
        """Add ``count`` steps whose summed metric values are ``values``."""
        self.total.assign_add(values)
        self.count.assign_add(float(count))

    def result(self) -> Dict[str, float]:
        means = (self.total / tf.maximum(self.count, 1.0)).numpy()
        return {n: float(v) for n, v in zip(METRIC_NAMES, means)}

    def reset(self) -> None:
        self.total.assign(tf.zeros_like(self.total))
        self.count.assign(0.0)
