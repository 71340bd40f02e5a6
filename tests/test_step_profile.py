"""``benchmarks/step_profile.py`` reads TensorFlow's own profile: op events, their name scopes and kinds.

The benchmark's table (docs/performance.md, "Measured numbers") is only as good as its reading of the XPlane file, whose layout
belongs to TensorFlow; this profiles a small known graph with the installed TensorFlow and checks what is read."""
import collections

import numpy as np
import tensorflow as tf

from benchmarks.step_profile import kind_of, phase_of, read_ops


def test_op_types_map_to_their_kinds():
    assert [kind_of(t) for t in ("_MklMatMul", "BatchMatMulV2", "_MklEinsum", "Cast", "Softmax", "GatherV2",
                                 "UnsortedSegmentSum", "Mean", "Rsqrt", "Mul", "TanhGrad", "AddN", "Reshape",
                                 "ResourceApplyAdam", "_MklTranspose", "_MklNativeFusedMatMul", "NoSuchOp")] == [
        "matmul", "matmul", "matmul", "cast", "softmax", "gather / embedding gradient",
        "gather / embedding gradient", "reductions (LayerNorm, norms, losses)",
        "reductions (LayerNorm, norms, losses)", "elementwise (GELU, adds, scales)",
        "elementwise (GELU, adds, scales)", "elementwise (GELU, adds, scales)",
        "layout (reshape, transpose, concat, slice)", "variables (reads, assigns)",
        "layout (reshape, transpose, concat, slice)", "matmul", "other"]


def test_phases_come_from_the_name_scope():
    assert phase_of("gradient_tape/albert_for_pretraining/albert/encoder/MatMul") == "backward"
    assert phase_of("Lamb/mul_3") == "update"
    assert phase_of("albert_for_pretraining/albert/encoder/group_0/inner_group_0/ffn/Gelu/mul") == "forward"


def test_reads_the_profiled_ops_of_a_known_graph(tmp_path):
    """A matmul, a cast and a scoped multiply, each run 3 times under the profiler: each is read back with its
    name scope, its type and a positive duration, 3 events per op."""
    a = tf.constant(np.ones((256, 256), np.float32))

    @tf.function
    def f(x):
        with tf.name_scope("probe_scope"):
            y = tf.matmul(x, x)
            return tf.cast(y * 2.0, tf.bfloat16)

    f(a).numpy()
    tf.profiler.experimental.start(str(tmp_path))
    for _ in range(3):
        f(a).numpy()
    tf.profiler.experimental.stop()
    events = collections.defaultdict(list)
    for name, op_type, ps in read_ops(str(tmp_path)):
        if name.startswith("probe_scope/"):
            events[(name, kind_of(op_type))].append(ps)
    kinds = {kind: len(v) for (_, kind), v in events.items()}
    assert kinds == {"matmul": 3, "elementwise (GELU, adds, scales)": 3, "cast": 3}, dict(events)
    assert all(ps > 0 for v in events.values() for ps in v)
