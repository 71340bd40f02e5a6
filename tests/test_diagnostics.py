"""trainer/diagnostics.py: the counting floor, the attention profile and position similarity, on cases whose
answers are known exactly."""
import math

import numpy as np
import pytest

import trainer  # noqa: F401  (sets TF_USE_LEGACY_KERAS before TensorFlow is imported)
import tensorflow as tf

from trainer import diagnostics
from trainer.modeling_albert import AlbertConfig, AlbertForPreTraining, sinusoidal_table

V, MASK, T, P = 50, 4, 12, 3


def _instances(rows, masked):
    """``rows``: lists of token ids (padded to T with 0); ``masked``: per row, (position, shown id) pairs."""
    n = len(rows)
    out = {k: np.zeros([n, T], np.int64) for k in ("input_ids", "input_mask", "segment_ids")}
    out.update({k: np.zeros([n, P], np.int64) for k in ("masked_lm_positions", "masked_lm_ids")})
    out["masked_lm_weights"] = np.zeros([n, P], np.float32)
    for i, (row, marks) in enumerate(zip(rows, masked)):
        out["input_ids"][i, :len(row)] = row
        out["input_mask"][i, :len(row)] = 1
        for j, (pos, shown) in enumerate(marks):
            out["masked_lm_positions"][i, j], out["masked_lm_ids"][i, j] = pos, row[pos]
            out["masked_lm_weights"][i, j] = 1.0
            out["input_ids"][i, pos] = shown
    return out


def test_original_tokens_puts_masked_tokens_back():
    inst = _instances([[10, 11, 12, 13]], [[(1, MASK), (2, 30)]])
    assert inst["input_ids"][0, :4].tolist() == [10, MASK, 30, 13]
    assert diagnostics.original_tokens(inst)[0, :4].tolist() == [10, 11, 12, 13]


def test_neighbour_table_reads_each_context_and_falls_back():
    # Training text: after 20 comes 21 three times and 22 once; 21 sits between 20 and 23; 9 is the most
    # frequent token. Held out: one position per context kind.
    train = _instances([[20, 21, 23, 9, 9], [20, 21, 23, 9, 9], [20, 22, 9, 9, 9], [30, 31, 32, 9]],
                       [[(1, MASK)], [], [], []])
    heldout = _instances([[20, 21, 23, 5],          # both neighbours visible: (20, 23) -> 21, right
                          [20, 22, 40, 5],          # left only known (right 40 unseen as a pair): 20 -> 21, wrong
                          [7, 31, 32, 5],           # both visible but the pair is unseen, left 7 unseen: 32 <- 31
                          [8, MASK, MASK, MASK, 8]],  # both neighbours masked: the most frequent token, 9, right
                         [[(1, MASK)], [(1, MASK)], [(1, MASK)], [(2, MASK)]])
    heldout["masked_lm_ids"][3, 0] = 9
    out = diagnostics.neighbour_table_accuracy(train, heldout, mask_id=MASK, vocab_size=V)
    assert out["positions"] == 4
    assert out["contexts"] == {"both": {"positions": 1, "accuracy": 1.0}, "left": {"positions": 1, "accuracy": 0.0},
                               "right": {"positions": 1, "accuracy": 1.0}, "none": {"positions": 1, "accuracy": 1.0}}
    assert out["accuracy"] == pytest.approx(0.75)
    assert out["most_frequent_token_accuracy"] == pytest.approx(0.25)


def _tiny_model(**overrides):
    config = AlbertConfig.named("albert-tiny", vocab_size=V, max_position_embeddings=T, num_hidden_layers=2,
                                **overrides)
    model = AlbertForPreTraining(config)
    model(model.dummy_inputs(1, T, P))
    return model


@pytest.mark.parametrize("layer_norm_position", ["post", "pre"])
def test_attention_profile_of_uniform_attention(layer_norm_position):
    """Zero query weights make every score 0: attention is exactly 1/n over the n real tokens."""
    model = _tiny_model(layer_norm_position=layer_norm_position)
    for block in model.albert.encoder.blocks:
        block.attention.query.kernel.assign(tf.zeros_like(block.attention.query.kernel))
        block.attention.query.bias.assign(tf.zeros_like(block.attention.query.bias))
    inst = _instances([[2, 11, 12, 13, 14, 3], [2, 15, 16, 3]], [[(0, MASK), (3, MASK)], [(2, MASK)]])
    inst["segment_ids"][0, 3:6] = 1  # [CLS] a [SEP] / b c [SEP]; the second instance is one segment, one [SEP]
    layers = diagnostics.attention_profile(model, inst)
    assert len(layers) == 2  # one shared block, used by both layers
    n = np.array([6, 6, 4])                                      # the lengths behind the three masked positions
    in_range = {-2: [0, 1, 1], -1: [0, 1, 1], 0: [1, 1, 1], 1: [1, 1, 1], 2: [1, 1, 0]}
    for layer in layers:
        for head in range(2):
            expected = [np.mean(np.array(in_range[d]) / n) for d in diagnostics.OFFSETS]
            np.testing.assert_allclose(np.array(layer["mass"])[head], expected, atol=1e-6)
            assert layer["entropy"][head] == pytest.approx(np.log(n).mean(), abs=1e-5)
        assert layer["uniform_entropy"] == pytest.approx(np.log(n).mean())
        assert layer["uniform_mass"] == pytest.approx(np.mean(1 / n))
        np.testing.assert_allclose(layer["cls_mass"], [np.mean(1 / n)] * 2, atol=1e-6)
        seps = np.array([2, 2, 1])  # [SEP] tokens seen from each masked position
        np.testing.assert_allclose(layer["sep_mass"], [np.mean(seps / n)] * 2, atol=1e-6)
        assert layer["uniform_sep_mass"] == pytest.approx(np.mean(seps / n))


def test_sinusoidal_position_init_and_similarity():
    """The named init starts the position table as the scaled sinusoids (same RMS as the official init), and
    position_similarity reads the structure that a random table lacks."""
    model = _tiny_model(position_embedding_init="sinusoidal")
    table = model.albert.embeddings.position_embeddings.numpy()
    np.testing.assert_allclose(table, sinusoidal_table(T, 64, 0.02), rtol=1e-6)
    assert math.sqrt(float(np.mean(table ** 2))) == pytest.approx(0.02, rel=1e-5)
    assert table[0, 1] == pytest.approx(table[0, 3])  # cos(0) in every odd column
    smooth = diagnostics.position_similarity(table, T, distances=(1, 5))
    rough = diagnostics.position_similarity(_tiny_model().albert.embeddings.position_embeddings.numpy(), T,
                                            distances=(1, 5))
    assert smooth[1] > smooth[5] > 0.3 and abs(rough[1]) < 0.3
    # Closed form: for sinusoids the cosine of two rows d apart is the mean of cos(d * frequency).
    freq = 1.0 / 10000.0 ** (np.arange(0, 64, 2) / 64)
    assert smooth[1] == pytest.approx(float(np.mean(np.cos(freq))), abs=1e-5)


def test_kernel_growth_is_one_at_initialisation_and_follows_the_weights():
    """A fresh model's kernels sit at the truncated normal's expected norm; doubling one doubles its ratio."""
    model = _tiny_model(embedding_size=32)
    growth = diagnostics.kernel_growth(model)
    assert sorted(growth) == ["block_0/attention/dense", "block_0/attention/key", "block_0/attention/query",
                              "block_0/attention/value", "block_0/ffn/intermediate", "block_0/ffn/output",
                              "embedding_hidden_mapping_in"]
    for name, g in growth.items():  # 128 x 128 and larger: the norm of ~16k draws is within a few % of expected
        assert g["ratio"] == pytest.approx(1.0, abs=0.03), name
    assert growth["block_0/attention/query"]["init_norm"] == pytest.approx(0.02 * 0.8796256610342398 * 128)
    query = model.albert.encoder.blocks[0].attention.query.kernel
    query.assign(query * 2.0)
    assert diagnostics.kernel_growth(model)["block_0/attention/query"]["ratio"] == pytest.approx(
        2 * growth["block_0/attention/query"]["ratio"], rel=1e-6)
