"""Tests for trainer.optimization against a NumPy implementation of the official ALBERT/BERT updates."""
import numpy as np
import pytest

import trainer  # noqa: F401
import tensorflow as tf
import tf_keras

from trainer.optimization import (
    AdamWeightDecay,
    GradientAccumulator,
    Lamb,
    WarmupLinearDecay,
    clip_gradients,
    create_optimizer,
)

# name -> (use weight decay, use layer adaptation) under the default exclusion list.
VARIABLES = {
    "layer/kernel": (True, True),
    "layer/bias": (False, False),
    "encoder/LayerNorm/gamma": (False, False),
    "zero_init/kernel": (True, True),  # ||w|| = 0 at the first step -> trust ratio 1
    "cls/predictions/output_bias": (False, False),
}


def _initial_values(rng):
    values = {}
    for name in VARIABLES:
        shape = (3, 4) if name.endswith("kernel") else (4,)
        values[name] = np.zeros(shape) if name.startswith("zero") else rng.randn(*shape)
    return values


def _np_official(values, grads_per_step, lrs, wd=0.01, trust_ratio=True, b1=0.9, b2=0.999, eps=1e-6):
    w = {k: v.astype(np.float64).copy() for k, v in values.items()}
    m = {k: np.zeros_like(v) for k, v in w.items()}
    v = {k: np.zeros_like(x) for k, x in w.items()}
    for grads, lr in zip(grads_per_step, lrs):
        for name, (decay, adapt) in VARIABLES.items():
            g = grads[name]
            m[name] = b1 * m[name] + (1 - b1) * g
            v[name] = b2 * v[name] + (1 - b2) * g * g
            u = m[name] / (np.sqrt(v[name]) + eps)
            if decay:
                u = u + wd * w[name]
            r = 1.0
            if trust_ratio and adapt:
                wn, un = np.linalg.norm(w[name]), np.linalg.norm(u)
                r = wn / un if wn > 0 and un > 0 else 1.0
            w[name] = w[name] - lr * r * u
    return w


@pytest.mark.parametrize("cls,jit", [(Lamb, False), (AdamWeightDecay, False), (Lamb, True)])
def test_optimizer_matches_numpy_reference(cls, jit):
    rng = np.random.RandomState(0)
    values = _initial_values(rng)
    steps = 4
    grads_per_step = [{k: rng.randn(*v.shape) for k, v in values.items()} for _ in range(steps)]
    schedule = WarmupLinearDecay(0.1, warmup_steps=2, total_steps=10)
    lrs = [float(schedule(i)) for i in range(steps)]
    assert lrs[0] == 0.0  # first official step uses lr 0 (global_step 0)

    variables = [tf.Variable(values[k].astype(np.float32), name=k) for k in VARIABLES]
    optimizer = cls(learning_rate=schedule, weight_decay_rate=0.01, jit_compile=jit)

    @tf.function
    def apply(grads):
        optimizer.apply_gradients(zip(grads, variables))

    for grads in grads_per_step:
        apply([tf.constant(grads[k], tf.float32) for k in VARIABLES])
    expected = _np_official(values, grads_per_step, lrs, trust_ratio=cls is Lamb)
    for var, name in zip(variables, VARIABLES):
        np.testing.assert_allclose(var.numpy(), expected[name], rtol=2e-5, atol=2e-6, err_msg=name)
    assert int(optimizer.iterations) == steps


def test_exclusion_is_by_name():
    opt = Lamb(learning_rate=1e-3)
    for name, (decay, adapt) in VARIABLES.items():
        var = tf.Variable(tf.zeros([2]), name=name)
        assert opt.use_weight_decay(var) == decay, name
        assert opt.use_layer_adaptation(var) == adapt, name
    custom = Lamb(learning_rate=1e-3, exclude_from_weight_decay=["gamma"], exclude_from_layer_adaptation=[])
    gamma = tf.Variable(tf.zeros([2]), name="x/LayerNorm/gamma")
    assert not custom.use_weight_decay(gamma) and custom.use_layer_adaptation(gamma)
    assert custom.use_weight_decay(tf.Variable(tf.zeros([2]), name="x/bias"))


def test_sparse_gradient_is_densified():
    table = tf.Variable(np.random.RandomState(1).randn(6, 3).astype(np.float32), name="emb/word_embeddings")
    ref = tf.Variable(table.numpy(), name="emb2/word_embeddings")
    opt_a, opt_b = Lamb(1e-2, jit_compile=False), Lamb(1e-2, jit_compile=False)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.gather(table, [0, 2, 2]) ** 2)
    sparse = tape.gradient(loss, table)
    assert isinstance(sparse, tf.IndexedSlices)
    opt_a.apply_gradients([(sparse, table)])
    opt_b.apply_gradients([(tf.convert_to_tensor(sparse), ref)])
    np.testing.assert_allclose(table.numpy(), ref.numpy(), rtol=1e-6)


def test_optimizer_checkpoint_resume(tmp_path):
    rng = np.random.RandomState(0)
    init = rng.randn(3, 4).astype(np.float32)
    grads = [rng.randn(3, 4).astype(np.float32) for _ in range(4)]

    def run(steps, var, opt):
        for g in steps:
            opt.apply_gradients([(tf.constant(g), var)])

    var_a = tf.Variable(init, name="dense/kernel")
    opt_a = create_optimizer("lamb", peak_lr=0.1, warmup_steps=1, total_steps=10, jit_compile=False)
    run(grads, var_a, opt_a)

    var_b = tf.Variable(init, name="dense/kernel")
    opt_b = create_optimizer("lamb", peak_lr=0.1, warmup_steps=1, total_steps=10, jit_compile=False)
    run(grads[:2], var_b, opt_b)
    path = tf.train.Checkpoint(var=var_b, optimizer=opt_b).save(str(tmp_path / "ckpt"))

    var_c = tf.Variable(np.zeros_like(init), name="dense/kernel")
    opt_c = create_optimizer("lamb", peak_lr=0.1, warmup_steps=1, total_steps=10, jit_compile=False)
    opt_c.build([var_c])
    tf.train.Checkpoint(var=var_c, optimizer=opt_c).restore(path).assert_consumed()
    assert int(opt_c.iterations) == 2
    run(grads[2:], var_c, opt_c)
    np.testing.assert_allclose(var_c.numpy(), var_a.numpy(), rtol=1e-6)


def test_get_config_round_trip():
    opt = create_optimizer("lamb", peak_lr=0.00176, warmup_steps=3125, total_steps=125000)
    config = opt.get_config()
    assert config["weight_decay_rate"] == 0.01 and config["epsilon"] == 1e-6
    clone = Lamb.from_config(dict(config))
    assert isinstance(clone._learning_rate, WarmupLinearDecay)
    assert clone.get_config() == config
    assert clone.exclude_from_layer_adaptation_patterns == ["LayerNorm", "layer_norm", "bias"]
    assert isinstance(create_optimizer("adamw", 1e-4, 10, 100), AdamWeightDecay)
    with pytest.raises(ValueError, match="Unknown optimizer"):
        create_optimizer("sgd", 1e-4, 10, 100)


# ---------------------------------------------------------------------------------------------------------------------
# Schedule
# ---------------------------------------------------------------------------------------------------------------------
def test_schedule_official_values():
    s = WarmupLinearDecay(1.0, warmup_steps=10, total_steps=100)
    values = {step: float(s(step)) for step in (0, 5, 9, 10, 55, 99, 100, 150)}
    np.testing.assert_allclose(
        [values[k] for k in (0, 5, 9, 10, 55, 99, 100, 150)], [0.0, 0.5, 0.9, 0.9, 0.45, 0.01, 0.0, 0.0], atol=1e-6)
    # Official recipe: end of warmup = 0.975 x peak.
    official = WarmupLinearDecay(0.00176, 3125, 125000)
    np.testing.assert_allclose(float(official(3125)), 0.00176 * 0.975, rtol=1e-6)
    np.testing.assert_allclose(float(official(3124)), 0.00176 * 3124 / 3125, rtol=1e-6)


def test_schedule_decay_from_warmup_end():
    s = WarmupLinearDecay(1.0, warmup_steps=10, total_steps=100, decay_over_all_steps=False)
    got = [float(s(step)) for step in (0, 5, 10, 55, 99, 100)]
    np.testing.assert_allclose(got, [0.0, 0.5, 1.0, 0.5, 1 / 90, 0.0], atol=1e-6)


def test_schedule_serialization():
    s = WarmupLinearDecay(2e-3, 7, 70, decay_over_all_steps=False)
    restored = tf_keras.optimizers.schedules.deserialize(tf_keras.optimizers.schedules.serialize(s))
    assert isinstance(restored, WarmupLinearDecay) and restored.get_config() == s.get_config()
    with pytest.raises(ValueError):
        WarmupLinearDecay(1.0, 20, 10)


# ---------------------------------------------------------------------------------------------------------------------
# Gradient accumulation and clipping
# ---------------------------------------------------------------------------------------------------------------------
def test_accumulated_micro_batches_equal_big_batch():
    rng = np.random.RandomState(0)
    x = rng.randn(8, 5).astype(np.float32)
    y = rng.randn(8, 2).astype(np.float32)
    kernel = tf.Variable(rng.randn(5, 2).astype(np.float32), name="dense/kernel")
    bias = tf.Variable(np.zeros(2, np.float32), name="dense/bias")
    variables = [kernel, bias]

    def grads_for(xb, yb):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(tf.tanh(xb @ kernel + bias) - yb))
        return tape.gradient(loss, variables)

    big = grads_for(x, y)
    acc = GradientAccumulator(variables)

    @tf.function
    def accumulate(xb, yb):
        acc.accumulate(grads_for(xb, yb))

    for k in range(4):
        accumulate(x[2 * k:2 * k + 2], y[2 * k:2 * k + 2])
    assert int(acc.step) == 4
    for a, b in zip(acc.gradients(), big):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)
    acc.reset()
    assert int(acc.step) == 0
    assert all(np.all(g.numpy() == 0) for g in acc.gradients())

    lazy = GradientAccumulator()  # built from the first gradients
    lazy.accumulate(big)
    for a, b in zip(lazy.gradients(), big):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6)


def test_clip_gradients():
    grads = [tf.constant([3.0, 0.0]), None, tf.constant([[4.0]])]
    clipped, norm = clip_gradients(grads, 1.0)
    assert clipped[1] is None
    np.testing.assert_allclose(float(norm), 5.0)
    np.testing.assert_allclose(clipped[0].numpy(), [0.6, 0.0], rtol=1e-6)
    np.testing.assert_allclose(clipped[2].numpy(), [[0.8]], rtol=1e-6)


def test_clip_norm_of_an_embedding_gradient_counts_repeated_tokens_once():
    """A gathered row used twice is two IndexedSlices; the clipped norm must be the dense gradient's norm."""
    table = tf.Variable(np.arange(12, dtype=np.float32).reshape(4, 3))
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.gather(table, [1, 1, 2]))
    sparse = tape.gradient(loss, table)
    assert isinstance(sparse, tf.IndexedSlices)
    dense = tf.convert_to_tensor(sparse).numpy()  # row 1: 2, row 2: 1
    clipped, norm = clip_gradients([sparse], 1.0)
    np.testing.assert_allclose(float(norm), np.linalg.norm(dense), rtol=1e-6)  # sqrt(15), not sqrt(9)
    np.testing.assert_allclose(clipped[0].numpy(), dense / np.linalg.norm(dense), rtol=1e-6)


# ---------------------------------------------------------------------------------------------------------------------
# Exclusions on the real model
# ---------------------------------------------------------------------------------------------------------------------
# albert-tiny's trainable variables that the official patterns (LayerNorm, layer_norm, bias) exclude from weight
# decay and from the LAMB trust ratio: every LayerNorm gamma/beta and every bias, the MLM output bias included.
# Embedding tables and kernels are decayed (as in the official code).
EXCLUDED = {
    "albert/embeddings/LayerNorm/gamma", "albert/embeddings/LayerNorm/beta",
    "albert/embeddings/embedding_hidden_mapping_in/bias",
    *(f"albert/encoder/group_0/inner_group_0/attention/{n}/bias" for n in ("query", "key", "value", "dense")),
    "albert/encoder/group_0/inner_group_0/attention/LayerNorm/gamma",
    "albert/encoder/group_0/inner_group_0/attention/LayerNorm/beta",
    "albert/encoder/group_0/inner_group_0/ffn/intermediate/bias", "albert/encoder/group_0/inner_group_0/ffn/output/bias",
    "albert/encoder/group_0/inner_group_0/ffn/LayerNorm_1/gamma",
    "albert/encoder/group_0/inner_group_0/ffn/LayerNorm_1/beta",
    "albert/pooler/bias", "predictions/dense/bias", "predictions/LayerNorm/gamma", "predictions/LayerNorm/beta",
    "predictions/decoder/output_bias", "seq_relationship/bias",
}
DECAYED = {
    "albert/embeddings/word_embeddings", "albert/embeddings/token_type_embeddings",
    "albert/embeddings/position_embeddings", "albert/embeddings/embedding_hidden_mapping_in/kernel",
    *(f"albert/encoder/group_0/inner_group_0/attention/{n}/kernel" for n in ("query", "key", "value", "dense")),
    "albert/encoder/group_0/inner_group_0/ffn/intermediate/kernel", "albert/encoder/group_0/inner_group_0/ffn/output/kernel",
    "albert/pooler/kernel", "predictions/dense/kernel", "seq_relationship/kernel",
}


def _real_model_with_nonzero_weights():
    """albert-tiny as the trainer builds it, every variable set to seeded values away from 0 (so a zero bias or
    beta cannot hide the trust ratio behind its ``||w|| = 0`` rule)."""
    from trainer.modeling_albert import AlbertConfig
    from trainer.train_lib import build_pretraining_model

    model = build_pretraining_model(AlbertConfig.named("albert-tiny", vocab_size=60), "sop", 16, 4)
    rng = np.random.RandomState(4)
    for v in model.trainable_variables:
        v.assign(rng.uniform(0.5, 1.5, v.shape).astype(np.float32) * rng.choice([-1, 1], v.shape))
    names = {v.name.split("/", 1)[1].rsplit(":", 1)[0]: v for v in model.trainable_variables}
    return model, names


def test_real_model_exclusions_by_name_and_by_value():
    model, names = _real_model_with_nonzero_weights()
    assert set(names) == EXCLUDED | DECAYED and not EXCLUDED & DECAYED
    lamb = Lamb(learning_rate=0.1, weight_decay_rate=0.01, jit_compile=False)
    assert {n for n, v in names.items() if not lamb.use_weight_decay(v)} == EXCLUDED
    assert {n for n, v in names.items() if not lamb.use_layer_adaptation(v)} == EXCLUDED

    before = {n: v.numpy().astype(np.float64) for n, v in names.items()}
    variables = model.trainable_variables
    # 1. Zero gradient: only the decay moves a variable. AdamW: w -= lr * wd * w; LAMB: u = wd * w, trust ratio
    #    ||w|| / ||u|| = 1 / wd, so w -= lr * w. Excluded variables do not move.
    adamw = AdamWeightDecay(learning_rate=0.1, weight_decay_rate=0.01, jit_compile=False)
    adamw.apply_gradients([(tf.zeros_like(v), v) for v in variables])
    for n, v in names.items():
        expected = before[n] * (1 - 0.1 * 0.01) if n in DECAYED else before[n]
        np.testing.assert_allclose(v.numpy(), expected, rtol=1e-6, err_msg=n)
        v.assign(before[n])
    lamb.apply_gradients([(tf.zeros_like(v), v) for v in variables])
    for n, v in names.items():
        expected = before[n] * (1 - 0.1) if n in DECAYED else before[n]
        np.testing.assert_allclose(v.numpy(), expected, rtol=1e-5, err_msg=n)
        v.assign(before[n])
    # 2. The trust ratio alone (no decay): gradient of ones gives u = c everywhere (c = 0.1 / (sqrt(0.001) + eps));
    #    excluded variables move by lr * c, adapted ones by lr * ||w|| / ||u|| * c = lr * ||w|| / sqrt(size).
    no_decay = Lamb(learning_rate=0.1, weight_decay_rate=0.0, jit_compile=False)
    no_decay.apply_gradients([(tf.ones_like(v), v) for v in variables])
    c = 0.1 / (np.sqrt(0.001) + 1e-6)
    for n, v in names.items():
        step = 0.1 * (np.linalg.norm(before[n]) / np.sqrt(before[n].size) if n in DECAYED else c)
        np.testing.assert_allclose(before[n] - v.numpy(), np.full(before[n].shape, step), rtol=1e-4, err_msg=n)
