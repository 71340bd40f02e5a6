"""Tests for trainer.modeling_albert (tiny configs; albert-base is built once for its parameter count)."""
import json
import math

import numpy as np
import pytest

import trainer  # noqa: F401  (sets TF_USE_LEGACY_KERAS before TensorFlow is imported)
import tensorflow as tf
import tf_keras

from trainer.modeling_albert import (
    AlbertConfig,
    AlbertForPreTraining,
    AlbertModel,
    count_parameters,
)
from trainer.losses import pretraining_losses

VOCAB = 97


def tiny(**overrides):
    overrides.setdefault("vocab_size", VOCAB)
    overrides.setdefault("max_position_embeddings", 32)
    return AlbertConfig.named("albert-tiny", **overrides)


def make_inputs(batch=2, seq=10, preds=3, seed=0, vocab=VOCAB):
    rng = np.random.RandomState(seed)
    ids = rng.randint(5, vocab, size=(batch, seq)).astype(np.int32)
    mask = np.ones((batch, seq), np.int32)
    mask[1, seq - 3:] = 0
    ids[1, seq - 3:] = 0
    seg = np.zeros((batch, seq), np.int32)
    seg[:, seq // 2:] = 1
    seg[1, seq - 3:] = 0
    pos = np.stack([np.sort(rng.choice(np.arange(1, seq - 3), preds, replace=False)) for _ in range(batch)])
    return {"input_ids": ids, "input_mask": mask, "segment_ids": seg, "masked_lm_positions": pos.astype(np.int32)}


@pytest.fixture(scope="module")
def tiny_model():
    tf_keras.utils.set_random_seed(1)
    model = AlbertForPreTraining(tiny())
    model(make_inputs())
    return model


# ---------------------------------------------------------------------------------------------------------------------
# Parameter counts
# ---------------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name,expected_millions", [
    ("albert-base", 11.7), ("albert-large", 17.7), ("albert-xlarge", 58.7), ("albert-xxlarge", 222.6),
    ("bert-base", 109.1), ("bert-large", 334.6),
])
def test_named_config_param_counts(name, expected_millions):
    counts = count_parameters(AlbertConfig.named(name))
    assert round(counts["total"] / 1e6, 1) == expected_millions
    assert counts["total"] == counts["embedding"] + counts["encoder"] + counts["pooler"]


@pytest.mark.parametrize("size", ["albert-base", "albert-large", "albert-xlarge", "albert-xxlarge"])
def test_named_releases_have_their_dropout(size):
    """-v1 is the paper's Table 2 model (dropout 0.1 in the released albert_config.json; xxlarge v1 already 0),
    -v2 the v2 release (0 everywhere); a bare name is the v2 setting. Shapes do not depend on the release."""
    v1, v2, bare = (AlbertConfig.named(n) for n in (size + "-v1", size + "-v2", size))
    want_v1 = 0.0 if size == "albert-xxlarge" else 0.1
    assert (v1.hidden_dropout_prob, v1.attention_probs_dropout_prob) == (want_v1, want_v1)
    assert (v2.hidden_dropout_prob, v2.attention_probs_dropout_prob) == (0.0, 0.0)
    assert bare == v2
    assert count_parameters(v1) == count_parameters(v2)
    assert AlbertConfig.named(size.upper().replace("-", "_") + "_V1") == v1
    assert AlbertConfig.named(size + "-v1", hidden_dropout_prob=0.2).hidden_dropout_prob == 0.2


@pytest.mark.parametrize("name", ["bert-base-v1", "albert-tiny-v2", "albert-huge-v1"])
def test_named_release_suffix_only_for_released_sizes(name):
    with pytest.raises(ValueError, match="v1 / -v2"):
        AlbertConfig.named(name)


def test_embedding_projection_follows_official_rule():
    assert AlbertConfig.named("albert-base").uses_embedding_projection
    assert not AlbertConfig.named("bert-base").uses_embedding_projection  # E == H: no projection (official)
    hf_style = AlbertConfig.named("bert-base", embedding_projection=True)  # Hugging Face always projects
    assert count_parameters(hf_style)["total"] - count_parameters(AlbertConfig.named("bert-base"))["total"] == (
        768 * 768 + 768)


def test_exact_albert_base_count_and_heads():
    counts = count_parameters(AlbertConfig.named("albert-base"), include_heads=True)
    assert counts["embedding"] == 30000 * 128 + 512 * 128 + 2 * 128 + 2 * 128 + 128 * 768 + 768
    assert counts["encoder"] == 4 * (768 * 768 + 768) + 2 * 768 + 2 * 768 * 3072 + 3072 + 768 + 2 * 768
    assert counts["heads"] == 768 * 128 + 128 + 2 * 128 + 30000 + 768 * 2 + 2
    assert counts["total"] == 11_683_584 + counts["heads"]


@pytest.mark.parametrize("embedding_size,sharing,expected_millions,paper_millions", [
    # Paper Table 3 / Table 4, ALBERT-base configuration. E=768 rows: no E->H projection (official: only if E != H).
    (128, "all", 11.68, 12), (128, "attention", 63.65, 64), (128, "ffn", 37.69, 38), (128, "none", 89.65, 89),
    (768, "all", 31.11, 31), (768, "attention", 83.08, 83), (768, "ffn", 57.12, 57), (768, "none", 109.08, 108),
    (64, "all", 9.68, 10), (64, "none", 87.65, 87), (256, "all", 15.69, 16), (256, "none", 93.65, 93),
])
def test_sharing_strategy_counts(embedding_size, sharing, expected_millions, paper_millions):
    config = AlbertConfig.named("albert-base", embedding_size=embedding_size, sharing=sharing)
    total = count_parameters(config)["total"] / 1e6
    assert round(total, 2) == expected_millions
    assert abs(total - paper_millions) < 1.1  # paper rounds; BERT base is "108M" there, 109.1M here


def test_group_sharing_count():
    base = AlbertConfig.named("albert-base")
    block = count_parameters(AlbertConfig.named("albert-base", sharing="none"))["encoder"] // 12
    for groups in (1, 2, 3, 4, 6, 12):
        config = AlbertConfig.named("albert-base", sharing="groups", num_hidden_groups=groups)
        assert count_parameters(config)["encoder"] == groups * block
    two_inner = AlbertConfig.named("albert-base", inner_group_num=2)
    assert count_parameters(two_inner)["encoder"] == 2 * count_parameters(base)["encoder"]


@pytest.mark.parametrize("overrides", [
    dict(sharing="all"), dict(sharing="attention"), dict(sharing="ffn"), dict(sharing="none"),
    dict(sharing="groups", num_hidden_groups=2), dict(sharing="groups", num_hidden_groups=2, inner_group_num=2),
    dict(sharing="all", inner_group_num=2), dict(sharing="none", embedding_size=128),
    dict(embedding_size=128, embedding_projection=True), dict(layer_norm_position="pre"),
])
def test_built_count_equals_analytic_tiny(overrides):
    config = tiny(num_hidden_layers=4, **overrides)
    model = AlbertForPreTraining(config)
    model(make_inputs())
    counts = count_parameters(config, include_heads=True)
    assert model.albert.count_params() == counts["total"] - counts["heads"]
    assert model.count_params() == counts["total"]
    assert sum(int(np.prod(v.shape)) for v in model.trainable_variables) == counts["total"]


def test_built_count_equals_analytic_albert_base():
    config = AlbertConfig.named("albert-base")
    model = AlbertModel(config)
    model(model.dummy_inputs(1, 4))
    assert model.count_params() == count_parameters(config)["total"] == 11_683_584


# ---------------------------------------------------------------------------------------------------------------------
# Config
# ---------------------------------------------------------------------------------------------------------------------
def test_config_json_round_trip(tmp_path):
    config = AlbertConfig.named("albert-large", sharing="groups", num_hidden_groups=4, inner_group_num=2)
    path = str(tmp_path / "albert_config.json")
    config.to_json_file(path)
    assert AlbertConfig.from_json_file(path) == config
    assert AlbertConfig.from_dict(config.to_dict(official=True)) == config


def test_config_reads_official_json():
    official = {"attention_probs_dropout_prob": 0, "hidden_act": "gelu", "hidden_dropout_prob": 0,
                "embedding_size": 128, "hidden_size": 768, "initializer_range": 0.02, "intermediate_size": 3072,
                "max_position_embeddings": 512, "num_attention_heads": 12, "num_hidden_layers": 12,
                "num_hidden_groups": 1, "net_structure_type": 0, "gap_size": 0, "num_memory_blocks": 0,
                "inner_group_num": 1, "down_scale_factor": 1, "type_vocab_size": 2, "vocab_size": 30000}
    config = AlbertConfig.from_dict(json.loads(json.dumps(official)))
    assert config.sharing == "all"
    assert count_parameters(config) == count_parameters(AlbertConfig.named("albert-base"))
    assert AlbertConfig.from_dict(dict(official, num_hidden_groups=2)).sharing == "groups"


@pytest.mark.parametrize("overrides,message", [
    (dict(hidden_size=100, num_attention_heads=3), "divisible"),
    (dict(sharing="bogus"), "sharing must be one of"),
    (dict(sharing="groups", num_hidden_groups=5), "divide"),
    (dict(sharing="all", num_hidden_groups=2), "only meaningful"),
    (dict(sharing="attention", inner_group_num=2), "inner_group_num"),
    (dict(embedding_projection=False), "embedding_projection"),
    (dict(num_attention_heads=0), "positive integer"),
    (dict(hidden_act="swishy"), "hidden_act"),
    (dict(hidden_dropout_prob=1.5), "hidden_dropout_prob"),
])
def test_config_validation(overrides, message):
    with pytest.raises(ValueError, match=message):
        AlbertConfig.named("albert-base", **overrides)


def test_named_unknown():
    with pytest.raises(ValueError, match="model.size \\(or model-info --size\\) .* is unknown"):
        AlbertConfig.named("albert-gigantic")
    assert AlbertConfig.named("albert-base-v2") == AlbertConfig.named("albert-base")


# ---------------------------------------------------------------------------------------------------------------------
# Behaviour
# ---------------------------------------------------------------------------------------------------------------------
def test_shapes_and_dtypes(tiny_model):
    out = tiny_model(make_inputs(batch=3, seq=12, preds=4))
    assert out["sequence_output"].shape == (3, 12, 128)
    assert out["pooled_output"].shape == (3, 128)
    assert out["mlm_logits"].shape == (3, 4, VOCAB)
    assert out["sentence_logits"].shape == (3, 2)
    for key in ("sequence_output", "pooled_output", "mlm_logits", "sentence_logits"):
        assert out[key].dtype == tf.float32
    # int64 inputs (what TFRecord parsing gives) work too.
    out64 = tiny_model({k: v.astype(np.int64) for k, v in make_inputs(batch=3, seq=12, preds=4).items()})
    np.testing.assert_allclose(out64["mlm_logits"], out["mlm_logits"], rtol=1e-5, atol=1e-5)


def test_padding_does_not_change_real_tokens(tiny_model):
    inputs = make_inputs()
    out_a = tiny_model(inputs)["sequence_output"].numpy()
    changed = {k: v.copy() for k, v in inputs.items()}
    changed["input_ids"][1, -3:] = [7, 8, 9]  # garbage in the padded slots
    changed["segment_ids"][1, -3:] = 1
    out_b = tiny_model(changed)["sequence_output"].numpy()
    np.testing.assert_allclose(out_a[1, :-3], out_b[1, :-3], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out_a[0], out_b[0], rtol=1e-6, atol=1e-6)
    # ... while changing the mask does change them.
    unmasked = dict(changed, input_mask=np.ones_like(inputs["input_mask"]))
    out_c = tiny_model(unmasked)["sequence_output"].numpy()
    assert np.abs(out_c[1, :-3] - out_a[1, :-3]).max() > 1e-3


def test_sharing_all_reuses_one_block():
    shallow, deep = tiny(num_hidden_layers=1), tiny(num_hidden_layers=6)
    m1, m6 = AlbertModel(shallow), AlbertModel(deep)
    inputs = make_inputs()
    m1(inputs)
    m6(inputs)
    assert len(m6.encoder.groups) == 1 and len(m6.encoder.blocks) == 1
    assert len(m6.trainable_variables) == len(m1.trainable_variables)
    m6.set_weights(m1.get_weights())
    # Running the single block 6 times by hand reproduces the 6-layer model.
    emb = m1.embeddings(inputs["input_ids"], inputs["segment_ids"])
    from trainer.modeling_albert import attention_bias_from_mask
    bias = attention_bias_from_mask(inputs["input_mask"])
    h = emb
    for _ in range(6):
        h = m1.encoder.blocks[0](h, bias)
    np.testing.assert_allclose(m6(inputs)["sequence_output"], h, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("sharing", ["attention", "ffn"])
def test_partial_sharing_shares_sublayer(sharing):
    model = AlbertModel(tiny(num_hidden_layers=3, sharing=sharing))
    model(make_inputs())
    blocks = model.encoder.blocks
    assert len(blocks) == 3
    shared = [getattr(b, sharing) for b in blocks]
    other = [getattr(b, "ffn" if sharing == "attention" else "attention") for b in blocks]
    assert all(s is shared[0] for s in shared)
    assert len({id(o) for o in other}) == 3


def test_group_assignment_official_formula():
    config = tiny(num_hidden_layers=6, sharing="groups", num_hidden_groups=3)
    assert [config.group_index(i) for i in range(6)] == [0, 0, 1, 1, 2, 2]
    none = tiny(num_hidden_layers=4, sharing="none")
    assert [none.group_index(i) for i in range(4)] == [0, 1, 2, 3]


def test_dropout_off_is_deterministic_and_on_is_not():
    inputs = make_inputs()
    model = AlbertForPreTraining(tiny())
    a = model(inputs, training=True)["mlm_logits"].numpy()
    b = model(inputs, training=True)["mlm_logits"].numpy()
    np.testing.assert_array_equal(a, b)
    noisy = AlbertForPreTraining(tiny(hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1))
    c = noisy(inputs, training=True)["mlm_logits"].numpy()
    d = noisy(inputs, training=True)["mlm_logits"].numpy()
    assert np.abs(c - d).max() > 1e-6
    np.testing.assert_array_equal(noisy(inputs)["mlm_logits"], noisy(inputs, training=False)["mlm_logits"])


# ---------------------------------------------------------------------------------------------------------------------
# NumPy reference forward pass (official semantics)
# ---------------------------------------------------------------------------------------------------------------------
def _np_layer_norm(x, gamma, beta, eps=1e-12):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def _np_gelu(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def _np_dense(x, layer):
    kernel, bias = [w.numpy().astype(np.float64) for w in layer.weights]
    return x @ kernel + bias


def _np_forward(model, config, inputs):
    emb = model.albert.embeddings
    ids, mask, seg = inputs["input_ids"], inputs["input_mask"], inputs["segment_ids"]
    T = ids.shape[1]
    x = (emb.word_embeddings.numpy()[ids] + emb.token_type_embeddings.numpy()[seg]
         + emb.position_embeddings.numpy()[:T][None])
    x = _np_layer_norm(x, *[w.numpy() for w in emb.LayerNorm.weights])
    if emb.embedding_hidden_mapping_in is not None:
        x = _np_dense(x, emb.embedding_hidden_mapping_in)
    bias = (1.0 - mask[:, None, None, :]) * -10000.0
    N, D = config.num_attention_heads, config.head_size
    B = ids.shape[0]
    pre = config.layer_norm_position == "pre"
    norm = lambda t, layer: _np_layer_norm(t, *[w.numpy() for w in layer.weights])
    for i in range(config.num_hidden_layers):
        for block in model.albert.encoder.groups[config.group_index(i)].blocks:
            att = block.attention
            split = lambda t: t.reshape(B, T, N, D).transpose(0, 2, 1, 3)
            a = norm(x, att.LayerNorm) if pre else x
            q, k, v = (split(_np_dense(a, l)) for l in (att.query, att.key, att.value))
            s = q @ k.transpose(0, 1, 3, 2) / math.sqrt(D) + bias
            p = np.exp(s - s.max(-1, keepdims=True))
            p /= p.sum(-1, keepdims=True)
            ctx = (p @ v).transpose(0, 2, 1, 3).reshape(B, T, N * D)
            x = x + _np_dense(ctx, att.dense)
            x = x if pre else norm(x, att.LayerNorm)
            ffn = block.ffn
            y = _np_dense(_np_gelu(_np_dense(norm(x, ffn.LayerNorm_1) if pre else x, ffn.intermediate)),
                          ffn.output_dense)
            x = x + y if pre else norm(x + y, ffn.LayerNorm_1)
    if pre:
        x = norm(x, model.albert.encoder.final_LayerNorm)
    pooled = np.tanh(_np_dense(x[:, 0], model.albert.pooler))
    gathered = np.take_along_axis(x, inputs["masked_lm_positions"][..., None], axis=1)
    head = model.predictions
    h = _np_layer_norm(_np_gelu(_np_dense(gathered, head.dense)), *[w.numpy() for w in head.LayerNorm.weights])
    mlm = h @ emb.word_embeddings.numpy().T + head.output_bias.numpy()
    sent = _np_dense(pooled, model.seq_relationship)
    return x, pooled, mlm, sent


@pytest.mark.parametrize("overrides", [
    dict(), dict(sharing="groups", num_hidden_layers=4, num_hidden_groups=2, inner_group_num=2),
    dict(sharing="none", embedding_size=128, num_hidden_layers=3),
    dict(layer_norm_position="pre", num_hidden_layers=3),
    dict(layer_norm_position="pre", sharing="none", num_hidden_layers=2),
])
def test_matches_numpy_reference(overrides):
    config = tiny(**overrides)
    model = AlbertForPreTraining(config)
    inputs = make_inputs()
    out = model(inputs)
    seq, pooled, mlm, sent = _np_forward(model, config, inputs)
    np.testing.assert_allclose(out["sequence_output"], seq, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(out["pooled_output"], pooled, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(out["mlm_logits"], mlm, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(out["sentence_logits"], sent, rtol=1e-4, atol=1e-4)


def test_pretraining_losses_match_numpy():
    rng = np.random.RandomState(0)
    logits = rng.randn(2, 3, 5).astype(np.float32)
    sent = rng.randn(2, 2).astype(np.float32)
    ids = np.array([[1, 2, 0], [4, 0, 0]])
    weights = np.array([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]], np.float32)
    labels = np.array([[1], [0]])
    out = pretraining_losses({"mlm_logits": logits, "sentence_logits": sent}, ids, weights, labels)
    logp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    nll = -np.take_along_axis(logp, ids[..., None], -1)[..., 0]
    mlm = (weights * nll).sum() / (weights.sum() + 1e-5)
    slogp = sent - np.log(np.exp(sent).sum(-1, keepdims=True))
    sloss = -slogp[np.arange(2), labels[:, 0]].mean()
    np.testing.assert_allclose(out["mlm_loss"], mlm, rtol=1e-5)
    np.testing.assert_allclose(out["sentence_loss"], sloss, rtol=1e-5)
    np.testing.assert_allclose(out["loss"], mlm + sloss, rtol=1e-5)
    acc = (weights * (logits.argmax(-1) == ids)).sum() / (weights.sum() + 1e-5)
    np.testing.assert_allclose(out["mlm_accuracy"], acc, rtol=1e-5)
    np.testing.assert_allclose(out["sentence_accuracy"], (sent.argmax(-1) == labels[:, 0]).mean(), rtol=1e-6)


# ---------------------------------------------------------------------------------------------------------------------
# tf.function / XLA / mixed precision / training
# ---------------------------------------------------------------------------------------------------------------------
def test_xla_matches_eager(tiny_model):
    inputs = make_inputs()
    eager = tiny_model(inputs)
    compiled = tf.function(lambda x: tiny_model(x, training=False), jit_compile=True)(inputs)
    for key in ("sequence_output", "mlm_logits", "sentence_logits"):
        np.testing.assert_allclose(compiled[key], eager[key], rtol=1e-3, atol=1e-3)


def test_mixed_bfloat16_policy():
    tf_keras.mixed_precision.set_global_policy("mixed_bfloat16")
    try:
        model = AlbertForPreTraining(tiny())
        inputs = make_inputs()
        out = tf.function(lambda x: model(x, training=True))(inputs)
        for key in ("sequence_output", "pooled_output", "mlm_logits", "sentence_logits"):
            assert out[key].dtype == tf.float32, key
        assert all(v.dtype == tf.float32 for v in model.trainable_variables)
        assert model.albert.encoder.blocks[0].attention.query.compute_dtype == "bfloat16"
        assert model.albert.encoder.blocks[0].attention.LayerNorm.compute_dtype == "float32"
        assert model.albert.embeddings.compute_dtype == "float32"
        assert model.albert.embeddings.embedding_hidden_mapping_in.compute_dtype == "bfloat16"
        losses = pretraining_losses(out, np.ones((2, 3), np.int32), np.ones((2, 3), np.float32), np.zeros((2, 1)))
        assert np.isfinite(losses["loss"].numpy())
    finally:
        tf_keras.mixed_precision.set_global_policy("float32")


def test_loss_decreases_on_tiny_batch():
    from trainer.optimization import Lamb
    tf_keras.utils.set_random_seed(0)
    model = AlbertForPreTraining(tiny())
    inputs = make_inputs(batch=4, seq=12, preds=3, seed=3)
    rng = np.random.RandomState(0)
    mlm_ids = rng.randint(5, VOCAB, size=(4, 3))
    weights = np.ones((4, 3), np.float32)
    labels = np.array([[0], [1], [0], [1]])
    optimizer = Lamb(learning_rate=5e-3, jit_compile=False)

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            losses = pretraining_losses(model(inputs, training=True), mlm_ids, weights, labels)
        grads = tape.gradient(losses["loss"], model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return losses["loss"]

    history = [float(step()) for _ in range(40)]
    assert history[-1] < 0.5 * history[0], history


def test_pre_ln_is_named_and_stays_out_of_official_files(tmp_path):
    """post-LN configs serialise as before the option existed; pre-LN round-trips but has no official layout."""
    assert "layer_norm_position" not in tiny().to_dict()
    pre = tiny(layer_norm_position="pre")
    assert AlbertConfig.from_dict(pre.to_dict()).layer_norm_position == "pre"
    assert pre.to_dict(official=True)["layer_norm_position"] == "pre"  # the albert dir's file keeps it
    assert "position_embedding_init" not in pre.to_dict()
    assert AlbertConfig.from_dict(tiny(position_embedding_init="sinusoidal").to_dict()).position_embedding_init \
        == "sinusoidal"
    with pytest.raises(ValueError, match="layer_norm_position must be one of"):
        tiny(layer_norm_position="sandwich")
    model = AlbertForPreTraining(pre)
    model(make_inputs())
    from trainer.checkpoint_interop import hf_variable_map
    with pytest.raises(ValueError, match="no official / Hugging Face checkpoint layout"):
        hf_variable_map(model)
