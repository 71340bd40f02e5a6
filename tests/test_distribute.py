"""The distribution pieces, in-process: cluster descriptions and roles, the rendezvous with a deadline, several
optimizer steps per device loop, the update under XLA (TPUStrategy compiles the whole step), the layout-independent
held-out input. The strategies themselves run end to end in test_distributed_pretrain.py."""
import json
import socket
import threading
import time

import numpy as np
import pytest

import trainer  # noqa: F401
import tensorflow as tf

from trainer import distribute

TWO_WORKERS = {"cluster": {"worker": ["10.0.0.1:2222", "10.0.0.2:2222"]}, "task": {"type": "worker", "index": 1}}


def test_cluster_from_tf_config_and_from_vertex_cluster_spec():
    assert distribute.cluster_config({}) is None
    assert distribute.cluster_config({"TF_CONFIG": json.dumps(TWO_WORKERS)}) == TWO_WORKERS
    vertex = {"cluster": {"workerpool0": ["c:2222"], "workerpool1": ["w0:2222", "w1:2222"], "workerpool2": ["r:2222"]},
              "task": {"type": "workerpool0", "index": 0, "trial": ""}, "environment": "cloud"}
    chief = distribute.cluster_config({"CLUSTER_SPEC": json.dumps(vertex)})
    assert chief == {"cluster": {"chief": ["c:2222"], "worker": ["w0:2222", "w1:2222"]},
                     "task": {"type": "chief", "index": 0}}  # the reduction-server pool takes no part
    assert distribute.is_chief(chief) and distribute.num_tasks(chief) == 3
    both = {"TF_CONFIG": json.dumps(TWO_WORKERS), "CLUSTER_SPEC": json.dumps(vertex)}
    assert distribute.cluster_config(both) == TWO_WORKERS  # TensorFlow's own description wins
    with pytest.raises(distribute.ClusterError, match="TF_CONFIG is not valid JSON"):
        distribute.cluster_config({"TF_CONFIG": "{cluster"})
    with pytest.raises(distribute.ClusterError, match=r"task 'worker' #2 is not in its cluster"):
        distribute.cluster_config({"TF_CONFIG": json.dumps({**TWO_WORKERS, "task": {"type": "worker", "index": 2}})})
    with pytest.raises(distribute.ClusterError, match="workerpool2.*takes no part"):
        distribute.cluster_config({"CLUSTER_SPEC": json.dumps({**vertex, "task": {"type": "workerpool2", "index": 0}})})


def test_roles_and_peers():
    assert distribute.is_chief(None)
    assert not distribute.is_chief(TWO_WORKERS)
    assert distribute.is_chief({**TWO_WORKERS, "task": {"type": "worker", "index": 0}})
    with_chief = {"cluster": {"chief": ["c:1"], "worker": ["w:1"]}, "task": {"type": "worker", "index": 0}}
    assert not distribute.is_chief(with_chief)
    assert distribute.peers(TWO_WORKERS) == [("worker 0", "10.0.0.1:2222")]
    assert distribute.peers(with_chief) == [("chief 0", "c:1")]
    assert distribute.worker_scratch(None) is None


def test_cluster_for_reads_only_the_environment():
    env = {"TF_CONFIG": json.dumps(TWO_WORKERS)}
    assert distribute.cluster_for("multi_worker", env) == TWO_WORKERS
    assert distribute.cluster_for("auto", env) == TWO_WORKERS  # auto: a cluster of 2 tasks trains as a cluster
    assert distribute.cluster_for("cpu", env) is None and distribute.cluster_for("mirrored", env) is None
    one = {"TF_CONFIG": json.dumps({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 0}})}
    assert distribute.cluster_for("auto", one) is None and distribute.cluster_for("auto", {}) is None


def _cluster(addresses, index):
    return {"cluster": {"worker": addresses}, "task": {"type": "worker", "index": index}}


def test_rendezvous_meets_peers_that_start_later_and_names_the_missing_one():
    ports = distribute.free_loopback_addresses(3)
    errors = []

    def task(i, delay):
        time.sleep(delay)
        try:
            distribute.rendezvous(_cluster(ports, i), timeout_s=20, poll_s=0.05, linger_s=0.5)
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=task, args=(i, 0.3 * i)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert errors == [] and not any(t.is_alive() for t in threads)

    start = time.monotonic()
    with pytest.raises(distribute.ClusterError) as info:  # worker 1 and 2 never start
        distribute.rendezvous(_cluster(ports, 0), timeout_s=0.5, poll_s=0.05)
    assert time.monotonic() - start < 10
    assert (f"worker 0 could not reach worker 1 at {ports[1]}, worker 2 at {ports[2]} "
            "within 0.5 s (train.peer_timeout_s)") in str(info.value)
    busy = socket.socket()
    busy.bind(("", int(ports[0].rsplit(":", 1)[1])))  # someone else holds this task's port
    busy.listen(1)
    try:
        with pytest.raises(distribute.ClusterError, match=f"cannot listen on {ports[0]}"):
            distribute.rendezvous(_cluster(ports, 0), timeout_s=0.5)
    finally:
        busy.close()


# -- the TPU's loop and compiler, on CPU --------------------------------------------------------------------------
def _run(strategy, steps_per_call, calls):
    from tests.test_train_step import B, L, P, make_batches, tiny_config
    from trainer.optimization import create_optimizer
    from trainer.train_step import build_pretraining_model, make_train_step
    import tf_keras

    tf_keras.utils.set_random_seed(3)
    with strategy.scope():
        model = build_pretraining_model(tiny_config(0.1), "sop", L, P)
        optimizer = create_optimizer("lamb", 0.01, 1, 10)
        optimizer.build(model.trainable_variables)
    step = make_train_step(model, optimizer, strategy, grad_accum_steps=2, clip_norm=0.05, seed=7)
    inputs, labels = make_batches(steps_per_call * calls)
    ds = tf.data.Dataset.from_tensor_slices((inputs, labels)).batch(B // 2)
    iterator = iter(strategy.experimental_distribute_dataset(ds))
    if steps_per_call == 1:
        metrics = [step(iterator).numpy() for _ in range(calls)]
    else:
        metrics = [step.steps(iterator, tf.constant(steps_per_call)).numpy() for _ in range(calls)]
    return np.sum(metrics, axis=0), [v.numpy() for v in model.trainable_variables], int(optimizer.iterations.numpy())


@pytest.mark.parametrize("mirrored", [False, True])
def test_several_steps_per_call_are_the_steps_of_several_calls(mirrored):
    """``train.steps_per_loop``: 4 optimizer steps in one device loop (dropout on, accumulation of 2) give the
    weights and summed metrics of 4 calls; also under MirroredStrategy, whose variables are distributed as a
    TPU's are."""
    strategy = tf.distribute.MirroredStrategy(["/cpu:0"]) if mirrored else tf.distribute.get_strategy()
    one_m, one_w, one_it = _run(strategy, 1, 4)
    loop_m, loop_w, loop_it = _run(strategy, 4, 1)
    assert one_it == loop_it == 4
    np.testing.assert_allclose(loop_m, one_m, rtol=1e-5)
    for a, b in zip(loop_w, one_w):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
    assert 4 * 3.0 < one_m[0] < 4 * 8.0  # four steps' losses (about ln 60 + ln 2 each), summed


def test_the_update_compiles_under_xla_and_equals_the_eager_one():
    """TPUStrategy compiles the replica step whole: clipping and the LAMB update must be XLA-compatible, and give
    the update they give without XLA."""
    from trainer.optimization import clip_gradients, create_optimizer

    rng = np.random.default_rng(0)
    shapes = [(8, 4), (4,), (3, 4, 2)]
    init = [rng.normal(size=s).astype(np.float32) for s in shapes]
    grads = [tf.constant(rng.normal(size=s).astype(np.float32)) for s in shapes]

    def run(jit):
        variables = [tf.Variable(v, name=f"layer_{i}/kernel" if i != 1 else "LayerNorm/beta")
                     for i, v in enumerate(init)]
        optimizer = create_optimizer("lamb", 0.01, 1, 10, weight_decay=0.01)
        optimizer.build(variables)

        @tf.function(jit_compile=jit)
        def update():
            clipped, norm = clip_gradients(grads, 1.0)
            optimizer.apply_gradients(zip(clipped, variables), skip_gradients_aggregation=True)
            return norm

        norms = [float(update()) for _ in range(3)]
        return norms, [v.numpy() for v in variables]

    eager_norms, eager = run(False)
    xla_norms, xla = run(True)
    np.testing.assert_allclose(xla_norms, eager_norms, rtol=1e-6)
    for a, b in zip(xla, eager):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert max(float(np.abs(a - i).max()) for a, i in zip(eager, init)) > 1e-3  # it moved


def test_held_out_input_is_padded_to_whole_global_batches_in_the_same_order_for_any_layout(resume_examples):
    from trainer import input_pipeline

    pattern = [f"{resume_examples['dir']}/Split-eval/*"]
    n, global_batch = 7, 4
    plain = list(input_pipeline.make_eval_dataset(pattern, 4, 64, 10, num_records=n, global_batch_size=4)
                 .as_numpy_iterator())
    assert len(plain) == 2
    ids = np.concatenate([inputs["input_ids"] for inputs, _ in plain])
    weights = np.concatenate([labels["row_weights"] for _, labels in plain])
    assert weights.tolist() == [1.0] * n + [0.0]
    assert not ids[n:].any() and ids[:n].any()
    # Two hosts, one replica each: host i holds positions i, i+2, ... of every global batch.
    per_host = [list(input_pipeline.make_eval_dataset(
        pattern, 2, 64, 10, num_records=n, global_batch_size=global_batch,
        input_context=tf.distribute.InputContext(2, i, 2)).as_numpy_iterator()) for i in range(2)]
    assert [len(b) for b in per_host] == [2, 2]  # every host runs the same number of steps
    for step in range(2):
        merged = np.empty_like(plain[step][0]["input_ids"])
        merged[0::2], merged[1::2] = per_host[0][step][0]["input_ids"], per_host[1][step][0]["input_ids"]
        np.testing.assert_array_equal(merged, plain[step][0]["input_ids"])
