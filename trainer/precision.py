"""``mixed_precision=auto``: the faster precision of the real train step, measured on the machine at hand.

Why measured, not read from CPU flags: bf16 pays only where the bf16 dot products save more than the casts around
every op cost, which depends on the matrix unit *and* the model's width. On a 2-core AMD EPYC with AVX512-BF16 and
no AMX, bf16 was 1.66x faster at albert-base but 1.9x slower at H 256 (docs/performance.md: "Measured numbers", the ``small``
preset); on Intel Xeons with AMX it was reported to win at both. So on a CPU ``auto`` builds the real step
(forward, loss, gradients, clipping, optimizer update, same shapes and batch) once per precision on a throwaway
model, times a few interleaved steps and keeps the faster; on TPU/GPU it is bf16 without probing. A noisy host
gets more rounds, and a choice its rounds do not agree on is kept for the process but not cached
(:data:`PROBE_AGREEMENT`).

A CPU whose flags show no bf16 arithmetic (x86 without AVX512-BF16 or AMX-BF16, Arm without BF16) gets float32
without probing (:func:`bf16_arithmetic`): there bf16 is emulated through casts (measured 0.35x float32 on an AVX2-only
2-core AMD EPYC, ``benchmarks/model_step.py``), so a probe could only pick it by noise.

The result is cached per CPU model, the ISA flags the timing depends on (:data:`ISA_FLAGS`), TensorFlow version,
thread count and shape (:func:`probe_key`) in a JSON file
(``ALBERT_TFX_PRECISION_CACHE``, default ``$XDG_CACHE_HOME/albert-tfx/precision.json``), outside every pipeline
artifact and parameter, so no node's cache key depends on it; the decision itself is recorded in the run's outputs.
The model name alone says too little: hosts sold under one name ("AMD EPYC") differ in AVX-512 and BF16 support, and a
cache shared between them (a shared home folder, a reused image layer, a node pool of mixed hosts) would carry a
choice to a host where it is three times slower.

Determinism: the probe draws its throwaway weights and inputs from its own seed (:data:`PROBE_SEED`); callers seed
the run *after* resolving (the Trainer and the fine-tuning loop both do), so the run's weights and random streams are
those of a run without a probe.
"""
from __future__ import annotations

import dataclasses
import json
import logging
import math
import os
import statistics
import time
from typing import Any, Callable, Dict, Mapping, Optional, Sequence, Tuple

log = logging.getLogger(__name__)

PRECISIONS = ("float32", "mixed_bfloat16")
CACHE_ENV = "ALBERT_TFX_PRECISION_CACHE"
PROBE_SEED = 0x9B0BE
PROBE_ROUNDS = 3  # timed steps per precision (interleaved, median), after one warm-up step each
# A host whose speed swings between rounds (seen: a shared 2-core VM running 10-1000x slower for seconds at a
# time) can make the rounds disagree on which precision is faster. Then the probe times more rounds, up to
# PROBE_MAX_ROUNDS, until PROBE_AGREEMENT of them side with the medians' choice; a choice that never gets there
# is kept for this process but not cached, so the next process measures again instead of inheriting a coin flip.
PROBE_MAX_ROUNDS = 9
PROBE_AGREEMENT = 0.8
# Inconclusive probes of this process, by cache key: later resolutions in the process (a benchmark node's other
# arm, its other tasks of the same shape) reuse the choice, so one node never mixes precisions.
_PROCESS: Dict[str, Dict[str, Any]] = {}
RECORD_FILE = "precision.json"  # in a pretraining run's checkpoint folder: what a resumed run reuses

# The probe's timer; tests replace it (and nothing else) to decide the choice.
clock: Callable[[], float] = time.perf_counter


# /proc/cpuinfo flags that decide bf16 and float32 matmul speed on x86 (AVX-512 float32 kernels, the AVX512-BF16 dot
# product, the AMX tile unit's bf16), and the Arm feature with bf16 dot products; part of the cache key.
ISA_FLAGS = ("avx512f", "avx512_bf16", "amx_bf16", "bf16")
BF16_FLAGS = ("avx512_bf16", "amx_bf16", "bf16")


@dataclasses.dataclass
class Decision:
    """The precision of a run and how it was decided (``setting`` | ``accelerator`` | ``cpu_flags``: no bf16
    arithmetic on this CPU | ``cache`` | ``probe`` |
    ``process``: an inconclusive probe earlier in this process | ``resumed``); ``seconds``: median step time per
    precision when measured (now or when cached)."""

    precision: str
    source: str
    seconds: Dict[str, float] = dataclasses.field(default_factory=dict)
    agreement: Optional[float] = None  # probe or process: the share of the probe's rounds that side with the choice

    def record(self) -> Dict[str, Any]:
        out = {"precision": self.precision, "source": self.source, "step_seconds": dict(self.seconds)}
        if self.agreement is not None:
            out["round_agreement"] = self.agreement
        return out


def cpu_model() -> str:
    """``model name`` of /proc/cpuinfo (``unknown`` where there is none)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            return next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "unknown")
    except OSError:
        return "unknown"


def cpu_flags() -> Optional[Tuple[str, ...]]:
    """The :data:`ISA_FLAGS` this CPU has (sorted), from the ``flags`` (x86) or ``Features`` (Arm) line of
    /proc/cpuinfo; None where there is no such line (another OS), i.e. unknown."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                name, _, value = line.partition(":")
                if name.strip() in ("flags", "Features"):
                    return tuple(sorted(set(value.split()) & set(ISA_FLAGS)))
    except OSError:
        pass
    return None


def bf16_arithmetic(flags: Optional[Sequence[str]]) -> bool:
    """Whether the CPU computes in bf16 natively (unknown flags: assumed yes, and the probe decides)."""
    return flags is None or any(flag in flags for flag in BF16_FLAGS)


def thread_count() -> int:
    """CPUs this process may run on (what TensorFlow's default thread pools size themselves by)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def on_accelerator(strategy=None) -> bool:
    """TPU strategy or a visible GPU: bf16 is the native fast path there, no probe."""
    import tensorflow as tf  # lazy: tensorflow (2.8 s)

    return isinstance(strategy, tf.distribute.TPUStrategy) or bool(tf.config.list_logical_devices("GPU"))


def cache_path() -> str:
    """``$ALBERT_TFX_PRECISION_CACHE``, else ``precision.json`` under the user's cache folder."""
    explicit = os.environ.get(CACHE_ENV)
    if explicit:
        return explicit
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "albert-tfx", "precision.json")


def intra_op_threads() -> int:
    """TensorFlow's intra-op pool size as this process sets it: the ``tf.config`` value, else
    ``TF_NUM_INTRAOP_THREADS`` (which TensorFlow reads when the config leaves it 0), else 0 (its default: one thread
    per CPU of :func:`thread_count`)."""
    import tensorflow as tf  # lazy: tensorflow (2.8 s)

    configured = tf.config.threading.get_intra_op_parallelism_threads()
    if configured:
        return configured
    try:
        return max(0, int(os.environ.get("TF_NUM_INTRAOP_THREADS", "0")))
    except ValueError:
        return 0


def probe_key(kind: str, shape: Mapping[str, Any]) -> str:
    """The cache key: what the timing depends on (CPU model and its :data:`ISA_FLAGS`, runtime, threads, what is
    trained and its shape)."""
    import tensorflow as tf  # lazy: tensorflow (2.8 s)

    flags = cpu_flags()
    return json.dumps({"cpu": cpu_model(), "isa": None if flags is None else list(flags),
                       "tensorflow": tf.__version__, "threads": thread_count(),
                       "intra_op_threads": intra_op_threads(), "kind": kind, "shape": dict(shape)}, sort_keys=True)


def _read_cache(path: str) -> Dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        return data if isinstance(data, dict) else {}
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:  # a cache, not an input: a broken one is measured again and rewritten
        log.warning("precision cache %s unreadable (%s); measuring again", path, exc)
        return {}


def _write_cache(path: str, key: str, entry: Dict[str, Any]) -> None:
    data = _read_cache(path)
    data[key] = entry
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=1, sort_keys=True)
        os.replace(tmp, path)  # atomic: concurrent runs never read a torn file
    except OSError as exc:
        log.warning("precision cache %s not written (%s)", path, exc)


def choose(seconds: Mapping[str, float]) -> str:
    """bf16 only when its step is strictly faster (ties keep float32, the exact arithmetic)."""
    return "mixed_bfloat16" if seconds["mixed_bfloat16"] < seconds["float32"] else "float32"


def agreement(times: Mapping[str, Sequence[float]]) -> float:
    """The share of rounds (one timed step per precision, side by side) that rank the precisions as the medians do."""
    choice = choose({p: statistics.median(v) for p, v in times.items()})
    sides = [choose({"float32": f, "mixed_bfloat16": b}) == choice
             for f, b in zip(times["float32"], times["mixed_bfloat16"])]
    return sum(sides) / len(sides)


def time_steps(build_step: Callable[[str], Callable[[], Any]], rounds: int = PROBE_ROUNDS,
               max_rounds: int = PROBE_MAX_ROUNDS) -> Tuple[Dict[str, float], float]:
    """(median seconds of one step per precision, :func:`agreement` of the rounds). ``build_step(precision)`` is
    called with that precision's policy set and returns a zero-argument step whose result has ``.numpy()`` (to wait
    for it). Each step is run once untimed (tracing, first-touch), then the precisions alternate so that load on a
    shared host falls on both; rounds are added while fewer than :data:`PROBE_AGREEMENT` of them agree.
    """
    import tf_keras  # lazy: tf_keras (2.8 s)

    previous = tf_keras.mixed_precision.global_policy()
    steps, times = {}, {p: [] for p in PRECISIONS}
    try:
        for precision in PRECISIONS:
            tf_keras.mixed_precision.set_global_policy(precision)
            steps[precision] = build_step(precision)
            steps[precision]().numpy()
        done = 0
        while done < rounds or (done < max_rounds and agreement(times) < PROBE_AGREEMENT):
            for precision in PRECISIONS:
                tf_keras.mixed_precision.set_global_policy(precision)  # in force while it is timed
                start = clock()
                steps[precision]().numpy()
                times[precision].append(clock() - start)
            done += 1
    finally:
        tf_keras.mixed_precision.set_global_policy(previous)
    return {p: float(statistics.median(v)) for p, v in times.items()}, agreement(times)


def resolve(setting: str, *, kind: str, shape: Mapping[str, Any],
            build_step: Callable[[str], Callable[[], Any]], strategy=None,
            combine: Optional[Callable[[Dict[str, float]], Dict[str, float]]] = None) -> Decision:
    """The precision for ``setting`` (``auto`` | ``float32`` | ``mixed_bfloat16``); see the module docstring.

    ``combine``: applied to the step times before choosing (a cluster averages them over its tasks, so every task
    picks the same precision). Logs one line with the times and the choice.
    """
    if setting != "auto":
        return Decision(setting, "setting")
    if on_accelerator(strategy):
        return Decision("mixed_bfloat16", "accelerator")
    flags = cpu_flags()
    if not bf16_arithmetic(flags):
        if combine is not None:  # a cluster's other tasks wait in the collective: join it, voting bf16 out
            combine({"float32": 0.0, "mixed_bfloat16": math.inf})
        log.info("mixed_precision=auto (%s): float32 without probing: this CPU has no bf16 arithmetic (ISA flags "
                 "of interest: %s; none of %s)", kind, ", ".join(flags) or "none", ", ".join(BF16_FLAGS))
        return Decision("float32", "cpu_flags")
    import tf_keras  # lazy: tf_keras (2.8 s)

    path, key = cache_path(), probe_key(kind, shape)
    entry = _read_cache(path).get(key)
    if isinstance(entry, dict) and set(PRECISIONS) <= set(entry.get("step_seconds", {})):
        seconds, source, agreed = {p: float(entry["step_seconds"][p]) for p in PRECISIONS}, "cache", None
    elif key in _PROCESS:
        seconds, source, agreed = dict(_PROCESS[key]["step_seconds"]), "process", _PROCESS[key]["agreement"]
    else:
        tf_keras.utils.set_random_seed(PROBE_SEED)  # the throwaway model's own seed; callers reseed the run after
        (seconds, agreed), source = time_steps(build_step), "probe"
        if agreed >= PROBE_AGREEMENT:
            _write_cache(path, key, {"step_seconds": seconds, "choice": choose(seconds),
                                     "measured": time.strftime("%Y-%m-%dT%H:%M:%S")})
        else:
            _PROCESS[key] = {"step_seconds": dict(seconds), "agreement": agreed}
            log.warning("mixed_precision=auto: only %.0f%% of the probe's rounds agree on the faster precision (a "
                        "noisy host or a near tie); this process uses the medians' choice, which is not cached",
                        100 * agreed)
    if combine is not None:
        seconds = combine(seconds)
    decision = Decision(choose(seconds), source, seconds, agreed)
    shape_text = " ".join(f"{k} {v}" for k, v in sorted(shape.items()) if not isinstance(v, (dict, list)))
    log.info("mixed_precision=auto (%s, %s): float32 %.4f s/step, mixed_bfloat16 %.4f s/step -> %s (%s, %s)",
             kind, shape_text, seconds["float32"], seconds["mixed_bfloat16"], decision.precision,
             {"probe": "measured now", "process": "measured earlier in this process"}.get(source, "cached"), path)
    return decision


def recorded(folder: str) -> Optional[Decision]:
    """The decision recorded in a run folder by :func:`record`, if any (a resumed run keeps it)."""
    import tensorflow as tf  # lazy: tensorflow (2.8 s)

    path = os.path.join(folder, RECORD_FILE)
    if not tf.io.gfile.exists(path):
        return None
    with tf.io.gfile.GFile(path) as f:
        data = json.load(f)
    return Decision(data["precision"], "resumed", dict(data.get("step_seconds", {})))


def record(folder: str, decision: Decision) -> None:
    import tensorflow as tf  # lazy: tensorflow (2.8 s)

    tf.io.gfile.makedirs(folder)
    with tf.io.gfile.GFile(os.path.join(folder, RECORD_FILE), "w") as f:
        f.write(json.dumps(decision.record(), indent=2, sort_keys=True))
