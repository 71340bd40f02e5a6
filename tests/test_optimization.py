"""Tests for trainer.optimization against a NumPy implementation of the official ALBERT/BERT updates (and of the
opt-in settings, which must leave the official algorithm and every cache key unchanged while unset)."""
import re

import numpy as np
import pytest

import trainer  # noqa: F401
import tensorflow as tf
import tf_keras

from config.schema import ConfigError
from trainer.trainer_config import ModelConfig, TrainConfig
from trainer.trainer_config import OPTIMIZER_OPTIONS

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


def _np_official(values, grads_per_step, lrs, wd=0.01, trust_ratio=True, b1=0.9, b2=0.999, eps=1e-6,
                 bias_correction=False, no_decay_lr_multiplier=1.0):
    """The official update; ``bias_correction`` / ``no_decay_lr_multiplier`` restate the opt-in settings."""
    w = {k: v.astype(np.float64).copy() for k, v in values.items()}
    m = {k: np.zeros_like(v) for k, v in w.items()}
    v = {k: np.zeros_like(x) for k, x in w.items()}
    for t, (grads, lr) in enumerate(zip(grads_per_step, lrs), start=1):
        for name, (decay, adapt) in VARIABLES.items():
            g = grads[name]
            m[name] = b1 * m[name] + (1 - b1) * g
            v[name] = b2 * v[name] + (1 - b2) * g * g
            if bias_correction:
                u = (m[name] / (1 - b1 ** t)) / (np.sqrt(v[name] / (1 - b2 ** t)) + eps)
            else:
                u = m[name] / (np.sqrt(v[name]) + eps)
            if decay:
                u = u + wd * w[name]
            r = 1.0
            if trust_ratio and adapt:
                wn, un = np.linalg.norm(w[name]), np.linalg.norm(u)
                r = wn / un if wn > 0 and un > 0 else 1.0
            step_lr = lr if decay else lr * no_decay_lr_multiplier  # every variable not decayed is excluded here
            w[name] = w[name] - step_lr * r * u
    return w


def _apply_steps(optimizer, values, grads_per_step):
    """float32 variables started at ``values``, after one ``apply_gradients`` per entry of ``grads_per_step``."""
    variables = [tf.Variable(values[k].astype(np.float32), name=k) for k in VARIABLES]

    @tf.function
    def apply(grads):
        optimizer.apply_gradients(zip(grads, variables))

    for grads in grads_per_step:
        apply([tf.constant(grads[k], tf.float32) for k in VARIABLES])
    return variables


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


@pytest.mark.parametrize("cls", [Lamb, AdamWeightDecay])
@pytest.mark.parametrize("settings", [{"bias_correction": True}, {"no_decay_lr_multiplier": 0.1},
                                      {"bias_correction": True, "no_decay_lr_multiplier": 3.0}])
def test_opt_in_settings_match_numpy_restatement(cls, settings):
    """Two steps (the first at full lr, where bias correction matters most) on decayed and excluded variables."""
    rng = np.random.RandomState(1)
    values = _initial_values(rng)
    grads_per_step = [{k: rng.randn(*v.shape) for k, v in values.items()} for _ in range(2)]
    schedule = WarmupLinearDecay(0.05, warmup_steps=0, total_steps=4)
    lrs = [float(schedule(i)) for i in range(2)]
    np.testing.assert_allclose(lrs, [0.05, 0.0375], rtol=1e-6)
    optimizer = cls(learning_rate=schedule, weight_decay_rate=0.01, jit_compile=False, **settings)
    variables = _apply_steps(optimizer, values, grads_per_step)
    trust = cls is Lamb
    expected = _np_official(values, grads_per_step, lrs, trust_ratio=trust, **settings)
    official = _np_official(values, grads_per_step, lrs, trust_ratio=trust)
    for var, name in zip(variables, VARIABLES):
        np.testing.assert_allclose(var.numpy(), expected[name], rtol=1e-5, atol=1e-6, err_msg=name)
    # The setting moved the excluded variables away from the official result (so the comparison can fail).
    for name in ("layer/bias", "encoder/LayerNorm/gamma", "cls/predictions/output_bias"):
        assert np.abs(expected[name] - official[name]).max() > 1e-3, name
    clone = cls.from_config(optimizer.get_config())
    assert (clone.bias_correction, clone.no_decay_lr_multiplier) == (
        settings.get("bias_correction", False), settings.get("no_decay_lr_multiplier", 1.0))


def test_bias_correction_first_step_is_lr_times_sign():
    """Adam's first corrected step is ``lr * g / (|g| + eps)``; the official uncorrected one is ~3.16x that
    (``(1 - b1) / sqrt(1 - b2)``), the large early steps of excluded variables the setting removes."""
    w, g = np.array([1.0, -2.0, 0.5]), np.array([0.3, -4.0, 2e-3])
    steps = {True: g / (np.abs(g) + 1e-6), False: 0.1 * g / (np.sqrt(0.001) * np.abs(g) + 1e-6)}
    for correct, step in steps.items():
        var = tf.Variable(w.astype(np.float32), name="x/LayerNorm/beta")
        opt = AdamWeightDecay(learning_rate=0.01, bias_correction=correct, jit_compile=False)
        opt.apply_gradients([(tf.constant(g, tf.float32), var)])
        np.testing.assert_allclose(var.numpy(), w - 0.01 * step, rtol=1e-6)
    # Where |g| >> eps / sqrt(1 - b2) (the last element is near that, eps weighs ~3x more uncorrected).
    np.testing.assert_allclose(steps[False][:2] / steps[True][:2], 0.1 / np.sqrt(0.001), rtol=1e-3)


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


@pytest.mark.parametrize("over_all", [True, False])
def test_schedule_end_fraction_is_polynomial_decay_with_an_end_rate(over_all):
    """``end_learning_rate_fraction=f``: after warmup, ``tf.train.polynomial_decay(peak, step, total,
    end_learning_rate=f * peak)`` (the official call, there with 0); ``f=0`` is the official schedule."""
    peak, warmup, total = 0.006, 10, 100
    s = WarmupLinearDecay(peak, warmup, total, decay_over_all_steps=over_all, end_learning_rate_fraction=0.1)
    poly = tf_keras.optimizers.schedules.PolynomialDecay(peak, total if over_all else total - warmup,
                                                         end_learning_rate=0.1 * peak, power=1.0)
    for step in (10, 11, 40, 55, 99, 100, 150):
        np.testing.assert_allclose(float(s(step)), float(poly(step if over_all else step - warmup)), rtol=1e-6)
    np.testing.assert_allclose([float(s(step)) for step in (0, 5, 100, 150)], [0.0, 0.003, 0.0006, 0.0006],
                               rtol=1e-6)
    # Mid-decay (step 55, over all steps): 0.1 + 0.9 * 0.45 of the peak instead of 0.45.
    if over_all:
        np.testing.assert_allclose(float(s(55)), peak * (0.1 + 0.9 * 0.45), rtol=1e-6)
    official = WarmupLinearDecay(peak, warmup, total, decay_over_all_steps=over_all, end_learning_rate_fraction=0.0)
    same = WarmupLinearDecay(peak, warmup, total, decay_over_all_steps=over_all)
    assert all(float(official(i)) == float(same(i)) for i in range(0, 120, 7)) and float(official(100)) == 0.0
    with pytest.raises(ValueError, match="end_learning_rate_fraction"):
        WarmupLinearDecay(peak, warmup, total, end_learning_rate_fraction=1.5)


def test_schedule_serialization():
    s = WarmupLinearDecay(2e-3, 7, 70, decay_over_all_steps=False, end_learning_rate_fraction=0.25)
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
    from trainer.train_step import build_pretraining_model

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


# ---------------------------------------------------------------------------------------------------------------------
# The opt-in settings in the config: named train.* fields, in the Trainer's parameters only when set
# ---------------------------------------------------------------------------------------------------------------------
OPTIONS_SET = {"bias_correction": True, "no_decay_lr_multiplier": 0.1, "end_learning_rate_fraction": 0.1,
               "beta_1": 0.98}


def test_train_section_carries_the_options_only_when_set():
    from trainer import task
    from trainer.modeling_albert import AlbertConfig

    assert set(OPTIMIZER_OPTIONS) == set(OPTIONS_SET)
    default, explicit = TrainConfig(), TrainConfig(bias_correction=False, no_decay_lr_multiplier=1,
                                                   end_learning_rate_fraction=0, beta_1=0.9)
    assert not set(OPTIMIZER_OPTIONS) & set(default.to_dict())
    assert default.to_json() == explicit.to_json() and default.identity() == explicit.identity()
    albert = AlbertConfig.named("albert-tiny", vocab_size=500)
    base_key = task.checkpoint_dir_for("r", task.run_identity("f" * 64, albert, default, 1))
    for name, value in OPTIONS_SET.items():
        changed = TrainConfig(**{name: value})
        assert set(changed.to_dict()) - set(default.to_dict()) == {name} and changed.to_dict()[name] == value
        assert TrainConfig.from_json(changed.to_json()) == changed
        assert task.checkpoint_dir_for("r", task.run_identity("f" * 64, albert, changed, 1)) != base_key
        # What the Trainer component receives (custom_config) and parses back.
        _, parsed, _ = task.parse_settings(task.trainer_settings(ModelConfig(size="albert-tiny"), changed, 1), 125_000)
        assert parsed.optimizer_options() == {**default.optimizer_options(), name: value}
    opt = create_optimizer("lamb", 0.006, 10, 100, **TrainConfig(**OPTIONS_SET).optimizer_options())
    assert (opt.bias_correction, opt.no_decay_lr_multiplier) == (True, 0.1)
    assert opt._learning_rate.end_learning_rate_fraction == 0.1
    assert float(opt.beta_1) == pytest.approx(0.98)


def _train_section(params):
    """The ``train`` mapping inside a node's parameters (JSON-valued parameters decoded, at any depth)."""
    import json

    if isinstance(params, str):
        try:
            params = json.loads(params)
        except ValueError:
            return None
    if isinstance(params, dict):
        if isinstance(params.get("train"), dict):
            return params["train"]
        for value in params.values():
            found = _train_section(value)
            if found is not None:
                return found
    return None


def test_options_reach_only_the_trainer_node_parameters():
    from pipeline.settings.configs import build_config

    base = build_config("sample").node_parameters()
    base_train = _train_section(base["Trainer"])
    assert base_train["learning_rate"] == 0.005 and not set(OPTIMIZER_OPTIONS) & set(base_train)
    explicit = build_config("sample", overrides=["train.bias_correction=false", "train.no_decay_lr_multiplier=1",
                                                 "train.end_learning_rate_fraction=0",
                                                 "train.beta_1=0.9"]).node_parameters()
    assert explicit == base  # the official values are the defaults: no cache key moves
    for name, value in OPTIONS_SET.items():
        new = build_config("sample", overrides=[f"train.{name}={str(value).lower()}"]).node_parameters()
        assert {node for node in base if base[node] != new[node]} == {"Trainer"}
        assert _train_section(new["Trainer"]) == {**base_train, name: value}


@pytest.mark.parametrize("override,needle", [
    ("train.no_decay_lr_multiplier=0", "train.no_decay_lr_multiplier=0.0 is invalid: expected > 0"),
    ("train.end_learning_rate_fraction=1.5", "train.end_learning_rate_fraction=1.5 is invalid: expected in"),
    ("train.end_learning_rate_fraction=-0.1", "train.end_learning_rate_fraction=-0.1 is invalid"),
    ("train.bias_correction=maybe", "train.bias_correction='maybe' is not a valid bool"),
    ("train.beta_1=1", "train.beta_1=1.0 is invalid: expected in [0, 1)"),
])
def test_bad_option_values_are_config_errors(override, needle):
    from pipeline.settings.configs import build_config

    with pytest.raises(ConfigError, match=re.escape(needle)):
        build_config("sample", overrides=[override])


@pytest.mark.slow  # datagen (Beam) + a real pretraining run and its export: ~2 min on 2 loaded cores
def test_pretraining_builds_its_optimizer_from_the_options(resume_examples, tmp_path):
    """A real 3-step ``albert-pipeline pretrain`` run with the options set: the logged learning rates follow the
    schedule with the end value (the options dict ``train_lib.pretrain`` passes to ``create_optimizer`` carries all
    three), and the run's record and checkpoint key include them."""
    import json
    import os

    from pipeline.settings.configs import build_config
    from tests.conftest import RESUME_DATA
    from trainer import task

    train = ["train.num_train_steps=3", "train.num_warmup_steps=1", "train.train_batch_size=8", "train.log_every=1",
             "train.eval_every=0", "train.eval_steps=1", "train.checkpoint_every=0", "train.shuffle_buffer=16",
             "train.learning_rate=0.004", "train.strategy=cpu", "train.mixed_precision=float32"]
    options = [f"train.{k}={str(v).lower()}" for k, v in {**OPTIONS_SET, "end_learning_rate_fraction": 0.5}.items()]
    config = build_config("sample", overrides=RESUME_DATA + train + options)
    info = task.pretrain_from_examples(resume_examples["dir"], str(tmp_path), config)
    assert info["final_step"] == 3
    with open(os.path.join(str(tmp_path), "model_run", "train_history.jsonl")) as f:
        rates = {r["step"]: r["learning_rate"] for r in map(json.loads, f) if r["split"] == "train"}
    # Step s logs the rate of its last update (iteration s - 1): warmup 0 at 0, then 0.5 + 0.5 * (1 - i / 3) of peak.
    np.testing.assert_allclose([rates[s] for s in (1, 2, 3)], [0.0, 0.004 * (0.5 + 0.5 * 2 / 3),
                                                                0.004 * (0.5 + 0.5 / 3)], rtol=1e-6)
    with open(os.path.join(str(tmp_path), "model_run", task.RUN_CONFIG_FILE)) as f:
        recorded = json.load(f)["train"]
    assert {k: recorded[k] for k in OPTIMIZER_OPTIONS} == {**OPTIONS_SET, "end_learning_rate_fraction": 0.5}


@pytest.mark.parametrize("name,cls", [("lamb", Lamb), ("adamw", AdamWeightDecay)])
def test_beta_1_setting_reaches_the_update(name, cls):
    """``train.beta_1`` goes from the config through ``create_optimizer`` into every step (NumPy restatement of 3)."""
    options = TrainConfig(beta_1=0.99).optimizer_options()
    assert options["beta_1"] == 0.99 and "beta_1" not in TrainConfig().to_dict()  # official 0.9 stays out of keys
    rng = np.random.RandomState(2)
    values = _initial_values(rng)
    grads_per_step = [{k: rng.randn(*v.shape) for k, v in values.items()} for _ in range(3)]
    optimizer = create_optimizer(name, peak_lr=0.05, warmup_steps=0, total_steps=6, jit_compile=False, **options)
    assert isinstance(optimizer, cls)
    lrs = [0.05 * (1 - i / 6) for i in range(3)]
    variables = _apply_steps(optimizer, values, grads_per_step)
    trust = cls is Lamb
    expected = _np_official(values, grads_per_step, lrs, trust_ratio=trust, b1=0.99)
    official = _np_official(values, grads_per_step, lrs, trust_ratio=trust)
    for var, key in zip(variables, VARIABLES):
        np.testing.assert_allclose(var.numpy(), expected[key], rtol=1e-5, atol=1e-6, err_msg=key)
    assert max(np.abs(expected[k] - official[k]).max() for k in VARIABLES) > 1e-3
