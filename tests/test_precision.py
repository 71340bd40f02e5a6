"""``mixed_precision=auto`` (trainer/precision.py): decided by timing the real train step in each precision.

Everything is real (the ALBERT pretraining / fine-tuning steps are built and run) except the probe's clock: a fake
clock reads the precision being timed and advances by a scripted step time, so the tests decide which precision is
"faster". Covered: the choice follows the times, rounds that disagree (a noisy host) get more rounds and an
inconclusive choice is kept for the process but not cached, a cache hit skips the probe (the clock is never read),
the cache is keyed by CPU model, ISA flags, thread count and shape, a CPU without bf16 arithmetic gets float32 however the
timer reads (and a cluster task on one still joins the collective), a resumed run keeps its recorded precision, the probe leaves the run's
initial weights and random streams alone, fine-tuning sets its precision explicitly, and the setting reaches only its
nodes.

Each probe here times the real step, but a step of a shape and precision is built and traced once per module
(:func:`reuse_built_steps`): building and tracing two tiny ALBERTs cost 3-4 s a probe, and the tests' subject is
what the probe decides from the times, not the build. The probe's own build runs for real in the first probe of each
shape and in the test that its model leaves the run's weights and random streams alone (which opts out).
"""
import json
import os

import numpy as np
import pytest

import trainer  # noqa: F401  (TF_USE_LEGACY_KERAS before TF)
import tensorflow as tf
import tf_keras

from config.schema import ConfigError
from trainer.trainer_config import TrainConfig
from trainer import precision
from trainer.modeling_albert import AlbertConfig
from trainer.precision_probe import resolve_precision
from trainer.pretrain_job import PretrainJob
from trainer.train_step import build_pretraining_model

L, P, V = 16, 4, 60


pytestmark = pytest.mark.longest_first(8)


class FakeClock:
    """Advances by the step time of the policy being timed (``precision.time_steps`` sets it) between the two reads
    around each timed step. Round k's step times are ``rounds[k]`` = (float32, mixed_bfloat16), the last repeating:
    one pair is a steady host, several a host whose speed swings between (and within) rounds. ``calls`` counts reads."""

    def __init__(self, *rounds):
        self.rounds, self.now, self.calls, self._open, self._timed = rounds, 0.0, 0, False, 0

    def __call__(self):
        self.calls += 1
        if self._open:
            name = tf_keras.mixed_precision.global_policy().name
            self.now += self.rounds[min(self._timed // 2, len(self.rounds) - 1)][precision.PRECISIONS.index(name)]
            self._timed += 1
        self._open = not self._open
        return self.now


class NoClock:
    def __call__(self):
        raise AssertionError("the probe ran: the timer was read")


# (shape, precision) -> the built step, for every test but those marked ``fresh_build``.
_BUILT = {}


@pytest.fixture(autouse=True)
def reuse_built_steps(request, monkeypatch):
    """``precision.resolve`` given a ``build_step`` that builds each (shape, precision) once per module."""
    if request.node.get_closest_marker("fresh_build"):
        return
    resolve = precision.resolve

    def resolve_reusing(setting, *, shape, build_step, **kwargs):
        key = json.dumps(shape, sort_keys=True, default=str)

        def built(name):
            if (key, name) not in _BUILT:
                _BUILT[key, name] = build_step(name)
            return _BUILT[key, name]

        return resolve(setting, shape=shape, build_step=built if build_step else None, **kwargs)

    monkeypatch.setattr(precision, "resolve", resolve_reusing)


@pytest.fixture(autouse=True)
def cache_file(tmp_path, monkeypatch):
    path = tmp_path / "cache" / "precision.json"
    monkeypatch.setenv(precision.CACHE_ENV, str(path))
    monkeypatch.setattr(precision, "_PROCESS", {})  # each test starts as a new process
    yield path
    tf_keras.mixed_precision.set_global_policy("float32")


def _job(tmp_path, batch=4, setting="auto", name="run"):
    train = TrainConfig(train_batch_size=batch, num_train_steps=10, num_warmup_steps=1, mixed_precision=setting,
                        strategy="cpu").validate()
    config = AlbertConfig.named("albert-tiny", vocab_size=V, max_position_embeddings=L)
    return PretrainJob(albert_config=config, train=train, seed=1, train_files=[], eval_files=[], max_seq_length=L,
                       max_predictions_per_seq=P, checkpoint_dir=str(tmp_path / name / "ckpt"),
                       log_dir=str(tmp_path / name / "log"))


def _resolve(job, clock, monkeypatch, chief=True):
    monkeypatch.setattr(precision, "clock", clock)
    return resolve_precision(job, tf.distribute.get_strategy(), chief)


@pytest.mark.parametrize("f32,bf16,want", [(1.0, 0.5, "mixed_bfloat16"), (0.5, 1.0, "float32")])
def test_probe_picks_the_precision_whose_real_step_is_faster(tmp_path, monkeypatch, cache_file, f32, bf16, want):
    clock = FakeClock((f32, bf16))
    decision = _resolve(_job(tmp_path), clock, monkeypatch)
    assert (decision.precision, decision.source) == (want, "probe")
    assert decision.seconds == {"float32": f32, "mixed_bfloat16": bf16}
    assert clock.calls == 2 * 2 * precision.PROBE_ROUNDS  # two reads per timed step, interleaved rounds
    assert tf_keras.mixed_precision.global_policy().name == "float32"  # the probe restores the policy it found
    entries = json.loads(cache_file.read_text())
    (key, entry), = entries.items()
    assert entry["choice"] == want and json.loads(key)["cpu"] == precision.cpu_model()
    assert json.loads(key)["shape"]["batch"] == 4
    # Recorded in the run's checkpoint folder (what a resumed run reuses).
    with open(os.path.join(_job(tmp_path).checkpoint_dir, precision.RECORD_FILE)) as f:
        assert json.load(f)["precision"] == want


def test_rounds_that_disagree_get_more_rounds_and_a_choice_they_never_agree_on_is_not_cached(tmp_path, monkeypatch,
                                                                                           cache_file, caplog):
    # One round falls in a slow spell of the host: the probe times rounds until 4 of 5 (80 %) side with the medians.
    noisy = [(1.0, 0.5), (0.2, 2.0), (1.0, 0.5), (1.0, 0.5), (1.0, 0.5)]
    clock = FakeClock(*noisy, (9.0, 9.0))  # rounds it must not reach
    decision = _resolve(_job(tmp_path, name="a"), clock, monkeypatch)
    assert (decision.precision, decision.agreement, clock.calls) == ("mixed_bfloat16", 0.8, 2 * 2 * 5)
    assert decision.seconds == {"float32": 1.0, "mixed_bfloat16": 0.5}  # medians: the slow round is outvoted
    assert [e["choice"] for e in json.loads(cache_file.read_text()).values()] == ["mixed_bfloat16"]
    cache_file.unlink()

    # Rounds that keep contradicting each other: nine at most, the medians decide, nothing is cached on disk.
    clock = FakeClock(*[(1.0, 0.5), (0.5, 1.0)] * 4, (1.0, 0.5))
    job = _job(tmp_path, name="b")
    decision = _resolve(job, clock, monkeypatch)
    assert (decision.precision, decision.source, clock.calls) == ("mixed_bfloat16", "probe", 2 * 2 * 9)
    assert decision.agreement == pytest.approx(5 / 9) and not cache_file.exists()
    assert "only 56% of the probe's rounds agree" in caplog.text
    with open(os.path.join(job.checkpoint_dir, precision.RECORD_FILE)) as f:
        assert json.load(f)["round_agreement"] == pytest.approx(5 / 9)
    # The rest of this process keeps that choice (a node's other arm must not run in the other precision) ...
    same = _resolve(_job(tmp_path, name="c"), NoClock(), monkeypatch)
    assert (same.precision, same.source, same.agreement) == ("mixed_bfloat16", "process", decision.agreement)
    # ... and the next process measures again.
    monkeypatch.setattr(precision, "_PROCESS", {})
    rerun = _resolve(_job(tmp_path, name="d"), FakeClock((0.5, 1.0)), monkeypatch)
    assert (rerun.precision, rerun.source) == ("float32", "probe")


def test_cache_hit_skips_the_probe_and_another_shape_probes_again(tmp_path, monkeypatch):
    first = _resolve(_job(tmp_path, name="a"), FakeClock((1.0, 0.5)), monkeypatch)
    hit = _resolve(_job(tmp_path, name="b"), NoClock(), monkeypatch)  # same machine and shape, a new run
    assert (hit.precision, hit.source, hit.seconds) == (first.precision, "cache", first.seconds)
    clock = FakeClock((0.5, 1.0))
    other = _resolve(_job(tmp_path, batch=8, name="c"), clock, monkeypatch)  # another batch: measured again
    assert (other.precision, other.source, clock.calls) == ("float32", "probe", 2 * 2 * precision.PROBE_ROUNDS)


def test_cache_is_keyed_by_cpu_model(tmp_path, monkeypatch, cache_file):
    _resolve(_job(tmp_path, name="a"), FakeClock((1.0, 0.5)), monkeypatch)
    (key, entry), = json.loads(cache_file.read_text()).items()
    moved = json.loads(key)
    moved["cpu"] = "Some Other CPU @ 2.0GHz"
    cache_file.write_text(json.dumps({json.dumps(moved, sort_keys=True): entry}))  # only another CPU's entry
    clock = FakeClock((0.5, 1.0))
    decision = _resolve(_job(tmp_path, name="b"), clock, monkeypatch)
    assert (decision.precision, decision.source) == ("float32", "probe") and clock.calls > 0


def test_cache_is_keyed_by_isa_flags_and_thread_count(tmp_path, monkeypatch, cache_file):
    """Two hosts with one model name ("AMD EPYC") but other ISA flags or threads do not share a cached choice."""
    monkeypatch.setattr(precision, "cpu_model", lambda: "AMD EPYC")
    monkeypatch.setattr(precision, "cpu_flags", lambda: ("avx512_bf16", "avx512f"))
    first = _resolve(_job(tmp_path, name="a"), FakeClock((1.0, 0.5)), monkeypatch)
    assert (first.precision, first.source) == ("mixed_bfloat16", "probe")
    (key,) = json.loads(cache_file.read_text())
    assert json.loads(key)["isa"] == ["avx512_bf16", "avx512f"] and json.loads(key)["cpu"] == "AMD EPYC"
    assert _resolve(_job(tmp_path, name="b"), NoClock(), monkeypatch).source == "cache"  # same host: a hit
    # Same name, AMX on top: measured again (and here float32 wins), not read from the other host's entry.
    monkeypatch.setattr(precision, "cpu_flags", lambda: ("amx_bf16", "avx512_bf16", "avx512f"))
    clock = FakeClock((0.5, 1.0))
    other = _resolve(_job(tmp_path, name="c"), clock, monkeypatch)
    assert (other.precision, other.source, clock.calls) == ("float32", "probe", 2 * 2 * precision.PROBE_ROUNDS)
    # Same name and flags, another thread count: measured again too.
    monkeypatch.setattr(precision, "thread_count", lambda: 64)
    clock = FakeClock((1.0, 0.5))
    more = _resolve(_job(tmp_path, name="d"), clock, monkeypatch)
    assert (more.precision, more.source, clock.calls) == ("mixed_bfloat16", "probe", 2 * 2 * precision.PROBE_ROUNDS)
    threads = json.loads(key)["threads"]
    assert sorted(json.loads(k)["threads"] for k in json.loads(cache_file.read_text())) == sorted([threads, threads, 64])


def test_the_key_holds_the_intra_op_pool_the_environment_sets(monkeypatch):
    """``TF_NUM_INTRAOP_THREADS`` (read by TensorFlow when tf.config leaves the pool at 0) is in the key: a probe
    timed on one thread is not reused for a run on every core, nor the other way round."""
    import tensorflow as tf

    assert tf.config.threading.get_intra_op_parallelism_threads() == 0  # the suite leaves tf.config alone
    shape = {"batch": 4}
    monkeypatch.delenv("TF_NUM_INTRAOP_THREADS", raising=False)
    default = json.loads(precision.probe_key("pretrain", shape))
    monkeypatch.setenv("TF_NUM_INTRAOP_THREADS", "1")
    one = json.loads(precision.probe_key("pretrain", shape))
    assert (default["intra_op_threads"], one["intra_op_threads"]) == (0, 1)
    assert {k: v for k, v in one.items() if k != "intra_op_threads"} == {
        k: v for k, v in default.items() if k != "intra_op_threads"}
    monkeypatch.setenv("TF_NUM_INTRAOP_THREADS", "many")  # not a pool size: keyed as the default
    assert json.loads(precision.probe_key("pretrain", shape))["intra_op_threads"] == 0


@pytest.mark.parametrize("flags", [(), ("avx512f",)])
def test_a_cpu_without_bf16_arithmetic_gets_float32_however_the_timer_reads(tmp_path, monkeypatch, cache_file, flags):
    """AVX2-only or AVX-512F without BF16: float32 without probing, even with a timer that makes bf16 twice as fast and
    a cache entry written on a bf16 host of the same name under the old key (model name only)."""
    monkeypatch.setattr(precision, "cpu_model", lambda: "AMD EPYC")
    monkeypatch.setattr(precision, "cpu_flags", lambda: ("avx512_bf16", "avx512f"))
    _resolve(_job(tmp_path, name="bf16-host"), FakeClock((1.0, 0.5)), monkeypatch)
    (key, entry), = json.loads(cache_file.read_text()).items()
    old_key = {k: v for k, v in json.loads(key).items() if k != "isa"}  # what a cache written before the flags holds
    cache_file.write_text(json.dumps({key: entry, json.dumps(old_key, sort_keys=True): entry}))
    monkeypatch.setattr(precision, "cpu_flags", lambda: flags)
    clock = FakeClock((1.0, 0.5))
    decision = _resolve(_job(tmp_path, name="avx2-host"), clock, monkeypatch)
    assert (decision.precision, decision.source, clock.calls) == ("float32", "cpu_flags", 0)
    assert len(json.loads(cache_file.read_text())) == 2  # nothing measured, nothing cached
    with open(os.path.join(_job(tmp_path, name="avx2-host").checkpoint_dir, precision.RECORD_FILE)) as f:
        assert json.load(f) == {"precision": "float32", "source": "cpu_flags", "step_seconds": {}}
    # A cluster task on such a host still joins the collective that averages the step times, voting bf16 out.
    votes = []
    monkeypatch.setattr(precision, "clock", NoClock())
    decided = precision.resolve("auto", kind="pretrain", shape={"batch": 4}, build_step=None,
                                combine=lambda s: votes.append(s) or s)
    assert (decided.precision, votes) == ("float32", [{"float32": 0.0, "mixed_bfloat16": float("inf")}])


def test_bf16_arithmetic_from_flags():
    assert not precision.bf16_arithmetic(()) and not precision.bf16_arithmetic(("avx512f",))
    assert precision.bf16_arithmetic(("avx512_bf16",)) and precision.bf16_arithmetic(("amx_bf16",))
    assert precision.bf16_arithmetic(("bf16",))  # Arm
    assert precision.bf16_arithmetic(None)  # no flags to read (another OS): the probe decides
    flags = precision.cpu_flags()
    assert flags is None or set(flags) <= set(precision.ISA_FLAGS)


def test_a_broken_cache_is_measured_again_and_rewritten_and_only_the_chief_records(tmp_path, monkeypatch, cache_file):
    cache_file.parent.mkdir(parents=True)
    cache_file.write_text("{not json")
    job = _job(tmp_path)
    decision = _resolve(job, FakeClock((1.0, 0.5)), monkeypatch, chief=False)
    assert decision.source == "probe" and len(json.loads(cache_file.read_text())) == 1
    assert not os.path.exists(os.path.join(job.checkpoint_dir, precision.RECORD_FILE))  # a cluster's other tasks


def test_resumed_run_keeps_the_recorded_precision(tmp_path, monkeypatch):
    job = _job(tmp_path)
    first = _resolve(job, FakeClock((1.0, 0.5)), monkeypatch)
    assert first.precision == "mixed_bfloat16"
    os.remove(os.environ[precision.CACHE_ENV])  # even with the cache gone and the machine now favouring float32
    resumed = _resolve(job, NoClock(), monkeypatch)
    assert (resumed.precision, resumed.source) == ("mixed_bfloat16", "resumed")
    # A setting other than auto is the run's own identity; nothing recorded overrides it.
    pinned = _resolve(_job(tmp_path, setting="float32"), NoClock(), monkeypatch)
    assert (pinned.precision, pinned.source) == ("float32", "setting")


@pytest.mark.fresh_build
def test_probe_leaves_the_runs_weights_and_random_streams_alone(tmp_path, monkeypatch):
    """pretrain() resolves, then seeds, then builds: the model and the next random draws are the probe-free ones."""
    job = _job(tmp_path)

    def start(probe):
        if probe:
            _resolve(job, FakeClock((0.5, 1.0)), monkeypatch)
        tf_keras.utils.set_random_seed(job.seed)  # what pretrain() does right after resolving
        model = build_pretraining_model(job.albert_config, "sop", L, P)
        return [w.copy() for w in model.get_weights()], tf.random.uniform([3]).numpy(), np.random.rand(3)

    plain, probed = start(False), start(True)
    for a, b in zip(plain[0], probed[0]):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(plain[1], probed[1])
    np.testing.assert_array_equal(plain[2], probed[2])


def _finetune_setup(tmp_path):
    from components.evaluation.heads import ClassifierModel
    from pipeline.settings.configs import FinetuneHParams
    from tests.conftest import export_untrained_albert

    albert_dir = export_untrained_albert(str(tmp_path / "albert"), seed=0)
    rng = np.random.default_rng(0)
    n, length = 8, 16
    train = {"input_ids": rng.integers(5, 300, (n, length)).astype(np.int32),
             "input_mask": np.ones((n, length), np.int32), "segment_ids": np.zeros((n, length), np.int32),
             "label_ids": rng.integers(0, 2, n).astype(np.int32)}
    hp = FinetuneHParams(1e-3, 4, 0.0, 0.1, train_steps=2, warmup_steps=1, max_seq_length=length)
    return albert_dir, hp, train, lambda enc, s: ClassifierModel(enc, 2, 0.1, s)


def test_finetuning_auto_is_measured_cached_and_recorded(tmp_path, monkeypatch):
    from components.evaluation.finetune import fine_tune_seeds, runs_record
    from components.evaluation.heads import classification_loss

    albert_dir, hp, train, make_head = _finetune_setup(tmp_path)
    evaluate = lambda m: ({"score": 1.0, "selection_score": 1.0}, None)  # noqa: E731
    kw = dict(seed=3, num_seeds=1, selection="last", eval_every=0, task="RTE")
    monkeypatch.setattr(precision, "clock", FakeClock((1.0, 0.5)))
    runs, _ = fine_tune_seeds(albert_dir, hp, train, make_head, classification_loss, evaluate, precision="auto", **kw)
    record = runs_record(runs)[0]["precision"]
    assert (record["precision"], record["source"]) == ("mixed_bfloat16", "probe")
    assert tf_keras.mixed_precision.global_policy().name == "mixed_bfloat16"  # the runs trained in it
    monkeypatch.setattr(precision, "clock", NoClock())
    again, _ = fine_tune_seeds(albert_dir, hp, train, make_head, classification_loss, evaluate, precision="auto", **kw)
    assert (again[0]["precision"]["precision"], again[0]["precision"]["source"]) == ("mixed_bfloat16", "cache")
    # The default is float32, set explicitly: a policy left behind (here bf16, as by a Trainer in the same process)
    # does not leak into fine-tuning.
    pinned, _ = fine_tune_seeds(albert_dir, hp, train, make_head, classification_loss, evaluate, **kw)
    assert pinned[0]["precision"]["precision"] == "float32"
    assert tf_keras.mixed_precision.global_policy().name == "float32"


def test_finetuning_precision_is_a_benchmark_setting_that_reaches_only_benchmark_nodes():
    from components.evaluation.benchmark_config import BenchmarkConfig
    from pipeline.settings.configs import build_config

    bench = {"GlueBenchmark", "SquadBenchmark", "RaceBenchmark"}
    base = build_config("sample").node_parameters()
    assert not any("mixed_precision" in json.dumps(base[n], default=str) for n in bench)  # default: keys unchanged
    cfg = build_config("sample", overrides=["benchmarks.mixed_precision=auto"])
    auto = cfg.node_parameters()
    assert {n for n in base if base[n] != auto[n]} == bench
    settings = cfg.benchmarks.node_settings("glue", cfg.seed)
    assert BenchmarkConfig.from_node_settings(settings, 1).mixed_precision == "auto"  # what the node runs with
    with pytest.raises(ConfigError, match="benchmarks.mixed_precision"):
        build_config("sample", overrides=["benchmarks.mixed_precision=float16"])
