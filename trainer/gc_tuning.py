"""The cyclic garbage collector's thresholds for this project's processes (the CLI, the test workers).

TensorFlow, Keras, TFX and Beam allocate millions of container objects and keep most of them (op definitions,
traced graphs, Keras layers, pipeline protos). With CPython's default thresholds, ``(700, 10, 10)``, the collector
runs a young collection every 700 net allocations of tracked objects, a middle one every 10 of those and a full one,
which walks every tracked object, every 10 middle ones. In one pytest process running ``tests/test_change_impact.py``
and ``tests/test_eval_run_benchmark.py`` (16 tests: ten pipeline runs and the benchmarks' fine-tuning), the
collector ran 5,547 times for 7.7 s of CPU; with :data:`THRESHOLDS`, 204 times for 3.6 s (peak RSS 2.53 → 2.54 GB;
docs/performance.md). Reference counting frees everything that is not in a cycle as before; cyclic garbage waits
longer for a collection, and a full one still comes every 10 middle ones (when CPython's rule that a quarter of the
long-lived objects be new allows it, as before).
"""
import gc

THRESHOLDS = (20000, 50, 10)


def tune() -> None:
    """Set :data:`THRESHOLDS` for this process (the CLI calls it first; tests/conftest.py in each test worker)."""
    gc.set_threshold(*THRESHOLDS)
