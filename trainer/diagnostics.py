"""What a pretrained encoder has learned beyond counting: the measures ``experiments/encoder_diagnostics.py`` prints.

Held-out MLM accuracy alone does not say whether an encoder reads its context. These do:

* :func:`neighbour_table_accuracy`: the held-out masked-token accuracy of a lookup table of the training split's
  counts: the most frequent token between the visible left and right neighbours, else after the left one, else
  before the right one, else the most frequent token. An encoder below this table has not learned local context.
* :func:`attention_profile`: per layer and head, the attention that masked positions pay to the tokens at offsets
  -2..+2, to ``[CLS]`` and to the two ``[SEP]`` tokens, and the attention's entropy, beside the uniform
  distribution's (``1 / n`` per position, entropy ``ln n``).
  Attention at uniform means every position sees the same average of its sequence: a bag of words.
* :func:`position_similarity`: mean cosine between the position embeddings of positions ``d`` apart.
* :func:`kernel_growth`: each encoder kernel's norm over its expected norm at initialisation. Near 1 after
  training means the kernels kept their initial scale, and with it small attention logits.

Instances are dicts of numpy arrays with the pretraining features' names (``input_ids``, ``input_mask``,
``masked_lm_positions``, ``masked_lm_ids``, ``masked_lm_weights``; ``[N, T]`` / ``[N, P]``).
"""
from __future__ import annotations

import math
from typing import Dict, List, Mapping, Sequence

import numpy as np

OFFSETS = (-2, -1, 0, 1, 2)
CONTEXTS = ("both", "left", "right", "none")  # which neighbours the table's prediction used


def original_tokens(instances: Mapping[str, np.ndarray]) -> np.ndarray:
    """[N, T] token ids with every masked position's original token put back (padding as it was)."""
    tokens = np.array(instances["input_ids"], dtype=np.int64, copy=True)
    rows, cols = np.nonzero(np.asarray(instances["masked_lm_weights"]) > 0)
    tokens[rows, np.asarray(instances["masked_lm_positions"])[rows, cols]] = \
        np.asarray(instances["masked_lm_ids"])[rows, cols]
    return tokens


class _ArgmaxTable:
    """context key -> the most frequent target (ties: the smaller id), built with sorts, not Python dicts."""

    def __init__(self, keys: np.ndarray, targets: np.ndarray, vocab_size: int):
        combined, counts = np.unique(keys * vocab_size + targets, return_counts=True)
        context, target = combined // vocab_size, combined % vocab_size
        order = np.lexsort((target, -counts, context))
        first = order[np.r_[True, context[order][1:] != context[order][:-1]]]
        self.keys, self.values = context[first], target[first]

    def lookup(self, keys: np.ndarray):
        """(found [K] bool, predicted [K])."""
        at = np.clip(np.searchsorted(self.keys, keys), 0, max(len(self.keys) - 1, 0))
        found = (self.keys[at] == keys) if len(self.keys) else np.zeros(len(keys), bool)
        return found, self.values[at] if len(self.keys) else np.zeros(len(keys), np.int64)


def neighbour_table_accuracy(train: Mapping[str, np.ndarray], heldout: Mapping[str, np.ndarray], mask_id: int,
                             vocab_size: int) -> Dict[str, object]:
    """Accuracy of the neighbour-count table (module docstring) on ``heldout``'s masked positions, beside the most
    frequent training token's; ``contexts`` splits the positions by the neighbours the prediction used."""
    tokens = original_tokens(train)
    lengths = np.asarray(train["input_mask"]).sum(1)
    col = np.arange(1, tokens.shape[1] - 1)
    inside = col[None, :] < (lengths[:, None] - 1)  # positions with a real token on both sides
    left, mid, right = tokens[:, :-2][inside], tokens[:, 1:-1][inside], tokens[:, 2:][inside]
    v = int(vocab_size)
    tables = {"both": _ArgmaxTable(left * v + right, mid, v), "left": _ArgmaxTable(left, mid, v),
              "right": _ArgmaxTable(right, mid, v)}
    most_frequent = int(np.bincount(mid, minlength=v).argmax())

    ids = np.asarray(heldout["input_ids"], np.int64)
    h_len = np.asarray(heldout["input_mask"]).sum(1)
    rows, cols = np.nonzero(np.asarray(heldout["masked_lm_weights"]) > 0)
    pos = np.asarray(heldout["masked_lm_positions"])[rows, cols].astype(np.int64)
    truth = np.asarray(heldout["masked_lm_ids"])[rows, cols].astype(np.int64)
    l_tok = np.where(pos > 0, ids[rows, np.maximum(pos - 1, 0)], mask_id)
    r_tok = np.where(pos + 1 < h_len[rows], ids[rows, np.minimum(pos + 1, ids.shape[1] - 1)], mask_id)
    l_ok, r_ok = l_tok != mask_id, r_tok != mask_id
    prediction = np.full(len(truth), most_frequent, np.int64)
    used = np.full(len(truth), "none", dtype=object)
    # Fill from the weakest context up, so the strongest available one has the last word.
    for name, usable, keys in (("right", r_ok, r_tok), ("left", l_ok, l_tok), ("both", l_ok & r_ok, l_tok * v + r_tok)):
        found, predicted = tables[name].lookup(keys)
        take = usable & found
        prediction[take], used[take] = predicted[take], name
    correct = prediction == truth
    contexts = {name: {"positions": int((used == name).sum()),
                       "accuracy": float(correct[used == name].mean()) if (used == name).any() else 0.0}
                for name in CONTEXTS}
    return {"positions": int(len(truth)), "accuracy": float(correct.mean()) if len(truth) else 0.0,
            "most_frequent_token_accuracy": float((truth == most_frequent).mean()) if len(truth) else 0.0,
            "contexts": contexts}


def attention_profile(model, instances: Mapping[str, np.ndarray], offsets: Sequence[int] = OFFSETS) -> List[Dict]:
    """Per layer (in order, shared blocks included once per use): for each head, the mean attention from masked
    positions to ``offsets`` (0 where the offset leaves the sequence), to ``[CLS]`` (position 0) and to the
    ``[SEP]`` tokens (the last token of each segment of ``[CLS] A [SEP] B [SEP]``), and the mean entropy, with the
    uniform distribution's values over the same positions. ``model``: an ``AlbertModel`` or
    ``AlbertForPreTraining``."""
    import tensorflow as tf  # lazy: tensorflow (2.7 s)

    from trainer.modeling_albert import attention_bias_from_mask  # lazy: tensorflow (2.7 s)

    albert = getattr(model, "albert", model)
    config = albert.config
    mask = np.asarray(instances["input_mask"])
    lengths = mask.sum(1)
    rows, cols = np.nonzero(np.asarray(instances["masked_lm_weights"]) > 0)
    pos = np.asarray(instances["masked_lm_positions"])[rows, cols]
    hidden = albert.embeddings(tf.constant(instances["input_ids"]), tf.constant(instances["segment_ids"]))
    bias = attention_bias_from_mask(tf.constant(mask))
    uniform_entropy = float(np.log(lengths[rows]).mean())
    segments = np.asarray(instances["segment_ids"])
    has_b = segments.max(1) > 0
    sep_a = np.where(has_b, segments.argmax(1) - 1, lengths - 1)[rows]  # last token of segment A
    sep_b = (lengths - 1)[rows]
    second = (sep_a != sep_b).astype(np.float64)  # a one-segment instance has one [SEP]
    k = np.arange(len(pos))
    layers = []
    for i in range(config.num_hidden_layers):
        for block in albert.encoder.groups[config.group_index(i)].blocks:
            probs = block.attention.attention_probs(hidden, bias).numpy()[rows, :, pos, :]  # [K, N, T]
            mass = []
            for d in offsets:
                target = pos + d
                valid = (target >= 0) & (target < lengths[rows])
                at = probs[k, :, np.clip(target, 0, probs.shape[-1] - 1)]  # [K, N]
                mass.append((at * valid[:, None]).mean(0))
            entropy = -(probs * np.log(np.where(probs > 0, probs, 1.0))).sum(-1).mean(0)
            sep = probs[k, :, sep_a] * second[:, None] + probs[k, :, sep_b]
            layers.append({"offsets": list(offsets), "mass": np.stack(mass, 1).tolist(), "entropy": entropy.tolist(),
                           "cls_mass": probs[:, :, 0].mean(0).tolist(), "sep_mass": sep.mean(0).tolist(),
                           "uniform_mass": float((1.0 / lengths[rows]).mean()),
                           "uniform_sep_mass": float(((1.0 + second) / lengths[rows]).mean()),
                           "uniform_entropy": uniform_entropy})
            hidden = block(hidden, bias)
    return layers


# Standard deviation of a normal truncated at two standard deviations, per unit of its ``stddev`` parameter
# (tf_keras' TruncatedNormal): sqrt(1 - 2 * 2 * pdf(2) / (2 * cdf(2) - 1)).
TRUNCATED_NORMAL_STD = 0.8796256610342398


def kernel_growth(model) -> Dict[str, Dict[str, float]]:
    """For every kernel of the encoder's blocks and the embedding projection: its Frobenius norm, the expected norm
    of the official initialisation (``TRUNCATED_NORMAL_STD * initializer_range * sqrt(size)``) and their ratio."""
    albert = getattr(model, "albert", model)
    init_std = TRUNCATED_NORMAL_STD * albert.config.initializer_range
    layers = {}
    if albert.embeddings.embedding_hidden_mapping_in is not None:
        layers["embedding_hidden_mapping_in"] = albert.embeddings.embedding_hidden_mapping_in
    for b, block in enumerate(albert.encoder.blocks):
        for name in ("query", "key", "value", "dense"):
            layers[f"block_{b}/attention/{name}"] = getattr(block.attention, name)
        layers[f"block_{b}/ffn/intermediate"] = block.ffn.intermediate
        layers[f"block_{b}/ffn/output"] = block.ffn.output_dense
    out = {}
    for name, layer in layers.items():
        kernel = layer.kernel.numpy()
        norm, expected = float(np.linalg.norm(kernel)), init_std * math.sqrt(kernel.size)
        out[name] = {"norm": norm, "init_norm": expected, "ratio": norm / expected}
    return out


def position_similarity(position_embeddings: np.ndarray, length: int,
                        distances: Sequence[int] = (1, 2, 5, 10, 30)) -> Dict[int, float]:
    """Mean cosine similarity of the first ``length`` position embeddings ``d`` positions apart, per ``d``."""
    p = np.asarray(position_embeddings[:length], np.float64)
    unit = p / np.linalg.norm(p, axis=1, keepdims=True)
    return {int(d): float((unit[:-d] * unit[d:]).sum(1).mean()) for d in distances if d < length}
