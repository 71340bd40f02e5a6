"""Distribution strategies for pretraining: one device, several devices of one host, several hosts, TPU.

``train.strategy``:

* ``cpu`` / ``auto`` on one device: TensorFlow's default strategy;
* ``mirrored``: one process, one replica per local GPU (or per logical CPU device, ``train.cpu_replicas``: the
  CPU twin that tests run);
* ``multi_worker``: one process per host (``MultiWorkerMirroredStrategy``), the cluster described by
  ``TF_CONFIG``, or by Vertex AI's ``CLUSTER_SPEC`` (worker pool 0 is the chief, pool 1 the workers);
* ``tpu``: ``TPUStrategy`` over the configured TPU (``TPU_NAME``, or the local TPU VM).

``auto`` picks TPU where one is configured, ``multi_worker`` where the cluster has more than one task, mirrored
over more than one GPU, else the default strategy.

Roles: in a cluster the chief alone writes what outlives the run (checkpoints, the export, TensorBoard, the
history); every other task writes its share of TensorFlow's collective saves into a private temporary folder
that is removed (:func:`worker_scratch`).
"""
from __future__ import annotations

import json
import logging
import os
import socket
import tempfile
import time
from typing import Any, Dict, List, Optional, Tuple

from config.errors import UserError

log = logging.getLogger(__name__)

TF_CONFIG = "TF_CONFIG"
CLUSTER_SPEC = "CLUSTER_SPEC"  # what Vertex AI Training sets on every replica
# Vertex AI worker pools (https://cloud.google.com/vertex-ai/docs/training/distributed-training): pool 0 runs the
# chief (one replica), pool 1 the workers; pool 2 is a reduction server and pool 3 evaluators, neither of which
# takes part in MultiWorkerMirroredStrategy's all-reduce.
VERTEX_POOL_ROLES = {"workerpool0": "chief", "workerpool1": "worker"}


class ClusterError(UserError, ValueError):
    """The cluster description is unusable, or the cluster broke (reported in one line, exit 2)."""


def peer_errors():
    """What TensorFlow raises in a collective step when another task died or was preempted."""
    import tensorflow as tf  # lazy: tensorflow (2.8 s)

    return (tf.errors.UnavailableError, tf.errors.InternalError, tf.errors.AbortedError,
            tf.errors.CancelledError, tf.errors.DeadlineExceededError)


def peer_lost(config: Dict[str, Any], step: int, exc: Exception) -> ClusterError:
    """The one-line error of a task whose cluster broke at ``step``."""
    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
    return ClusterError(f"multi_worker: {task_name(config)} lost the cluster after step {step} ({type(exc).__name__}: "
                        f"{first}); a task stopped or was preempted: rerun every task with the same command, the run "
                        "resumes from its last checkpoint")


def tf_config_from_cluster_spec(cluster_spec: Dict[str, Any]) -> Dict[str, Any]:
    """Vertex AI's ``CLUSTER_SPEC`` → the ``TF_CONFIG`` that ``MultiWorkerMirroredStrategy`` reads."""
    pools = cluster_spec.get("cluster") or {}
    task = cluster_spec.get("task") or {}
    cluster = {VERTEX_POOL_ROLES[p]: list(addresses) for p, addresses in sorted(pools.items())
               if p in VERTEX_POOL_ROLES and addresses}
    if task.get("type") not in VERTEX_POOL_ROLES:
        raise ClusterError(f"environment variable {CLUSTER_SPEC}: task type {task.get('type')!r} takes no part in "
                           f"training (expected one of {', '.join(VERTEX_POOL_ROLES)})")
    return {"cluster": cluster, "task": {"type": VERTEX_POOL_ROLES[task["type"]], "index": int(task.get("index", 0))}}


def cluster_config(environ=None) -> Optional[Dict[str, Any]]:
    """The cluster this process belongs to (``TF_CONFIG`` form), or None outside a cluster."""
    environ = os.environ if environ is None else environ
    for name, convert in ((TF_CONFIG, None), (CLUSTER_SPEC, tf_config_from_cluster_spec)):
        text = environ.get(name)
        if not text:
            continue
        try:
            raw = json.loads(text)
        except ValueError as exc:
            raise ClusterError(f"environment variable {name} is not valid JSON: {exc}") from None
        config = convert(raw) if convert else raw
        cluster, task = config.get("cluster") or {}, config.get("task") or {}
        if not cluster:
            return None
        kind, index = task.get("type"), task.get("index", 0)
        if kind not in cluster or not 0 <= int(index) < len(cluster[kind]):
            raise ClusterError(f"environment variable {name}: task {kind!r} #{index} is not in its cluster "
                               f"{sorted(cluster)}")
        return {"cluster": cluster, "task": {"type": kind, "index": int(index)}}
    return None


def num_tasks(config: Optional[Dict[str, Any]]) -> int:
    return sum(len(v) for k, v in (config or {}).get("cluster", {}).items() if k in ("chief", "worker"))


def is_chief(config: Optional[Dict[str, Any]]) -> bool:
    """The task that writes: ``chief``, else worker 0 of a cluster without a chief; any single process."""
    if not config:
        return True
    kind, index = config["task"]["type"], config["task"]["index"]
    return kind == "chief" or (kind == "worker" and index == 0 and "chief" not in config["cluster"])


def task_name(config: Optional[Dict[str, Any]]) -> str:
    return "single process" if not config else f"{config['task']['type']} {config['task']['index']}"


def peers(config: Dict[str, Any]) -> List[Tuple[str, str]]:
    """(``"worker 1"``, ``host:port``) of every other training task."""
    me = (config["task"]["type"], config["task"]["index"])
    return [(f"{kind} {i}", address) for kind in ("chief", "worker") for i, address in
            enumerate(config["cluster"].get(kind, [])) if (kind, i) != me]


def reachable(address: str, timeout: float = 1.0) -> bool:
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
            return True
    except (OSError, ValueError):
        return False


def peer_timeout_message(config: Dict[str, Any], waiting: List[Tuple[str, str]], timeout_s: float) -> str:
    missing = ", ".join(f"{name} at {address}" for name, address in waiting)
    return (f"multi_worker: {task_name(config)} could not reach {missing} within {timeout_s:g} s "
            f"(train.peer_timeout_s); check the addresses in {TF_CONFIG} and that every task was started")


def free_loopback_addresses(n: int) -> List[str]:
    """``n`` ``127.0.0.1:port`` addresses free right now: a local cluster (tests, benchmarks, trying it out)."""
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [f"127.0.0.1:{s.getsockname()[1]}" for s in socks]
    finally:
        for s in socks:
            s.close()


def rendezvous(config: Dict[str, Any], timeout_s: float, poll_s: float = 0.25, linger_s: float = 2.0) -> None:
    """Return once every peer's address accepts connections; :class:`ClusterError` naming those that do not.

    TensorFlow's ``MultiWorkerMirroredStrategy()`` waits for missing peers without a deadline, inside C++ that
    holds the GIL and ignores SIGTERM, so nothing in the process can end that wait. The tasks meet here first:
    each listens on its own address and probes the others'. Having seen them all, a task listens ``linger_s``
    longer (peers probing every ``poll_s`` see it), then TensorFlow's server takes the port over.
    """
    address = config["cluster"][config["task"]["type"]][config["task"]["index"]]
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind(("", int(address.rpartition(":")[2])))
        listener.listen(64)
    except (OSError, ValueError) as exc:
        listener.close()
        raise ClusterError(f"train.strategy=multi_worker: {task_name(config)} cannot listen on {address} (from the "
                           f"environment variable TF_CONFIG/CLUSTER_SPEC): {exc}") from None
    try:
        deadline = time.monotonic() + timeout_s
        waiting = peers(config)
        while True:
            waiting = [(name, addr) for name, addr in waiting if not reachable(addr)]
            if not waiting:
                time.sleep(linger_s)
                return
            if time.monotonic() >= deadline:
                raise ClusterError(peer_timeout_message(config, waiting, timeout_s))
            time.sleep(poll_s)
    finally:
        listener.close()


def cluster_for(name: str, environ=None) -> Optional[Dict[str, Any]]:
    """The cluster of a run with ``train.strategy=name``, or None when it runs as one process.

    Read from the environment alone (the TensorFlow runtime must not start before the strategy is made).
    """
    if name == "multi_worker" or (name == "auto" and not _tpu_configured()
                                  and num_tasks(cluster_config(environ)) > 1):
        return cluster_config(environ)
    return None


def barrier(strategy) -> None:
    """Wait until every task of the cluster reaches this point (one all-reduce); nothing to wait for otherwise."""
    import tensorflow as tf  # lazy: tensorflow (2.8 s)

    def one():
        return tf.constant(1.0)

    @tf.function(autograph=False)
    def all_tasks():
        return strategy.reduce(tf.distribute.ReduceOp.SUM, strategy.run(one), axis=None)

    if is_multi_worker(strategy):
        all_tasks()


LEAVE_WAIT_S = 60.0  # how long the chief waits, at the end of a run, for the other tasks to exit


def leave_together(strategy, config: Optional[Dict[str, Any]], timeout_s: float) -> None:
    """The last collective of a cluster run, then a shutdown in which no task leaves while another still needs it.

    A task returns from an all-reduce once it has what it needs, while a peer may still be pulling this task's
    share (TensorFlow's ring all-reduce receives by RecvBuf from the sender's server): a task that exits at once
    fails that peer with "Socket closed" (seen under load, at the end of a run that had trained every step). So:
    the all-reduce (:func:`barrier`), then the coordination service's barrier (every task has finished the
    all-reduce, so no collective still needs anyone), and the chief, which hosts that service, waits until the
    other tasks' servers have closed (at most ``LEAVE_WAIT_S``) so that their barrier replies reach them.
    """
    barrier(strategy)
    if not is_multi_worker(strategy) or not config:
        return
    from tensorflow.python.eager import context  # lazy: tensorflow (2.8 s); the coordination service: no public API

    context.context().wait_at_barrier("albert_tfx_leave", int(timeout_s * 1000))
    if is_chief(config):
        deadline = time.monotonic() + LEAVE_WAIT_S
        for _, address in peers(config):
            while reachable(address, timeout=0.5) and time.monotonic() < deadline:
                time.sleep(0.1)


def split_cpu(n: int) -> None:
    """Make ``n`` logical CPU devices (``train.cpu_replicas``): the host CPU as ``n`` replicas of ``mirrored``."""
    import tensorflow as tf  # lazy: tensorflow (2.8 s)

    if n <= 1:
        return
    cpu = tf.config.list_physical_devices("CPU")[0]
    try:
        tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * n)
    except RuntimeError:  # the runtime already started: fine if it was started with the same split
        have = len(tf.config.list_logical_devices("CPU"))
        if have != n:
            raise ClusterError(f"train.cpu_replicas={n} needs a process whose TensorFlow runtime has not started "
                               f"yet (it runs with {have} CPU device(s)); run `albert-pipeline pretrain`") from None


def _tpu_configured() -> bool:
    return bool(os.environ.get("TPU_NAME") or os.environ.get("CLOUD_TPU_TASK_ID")
                or os.path.exists("/dev/accel0") or os.path.exists("/dev/vfio/0"))


def resolve_name(name: str, environ=None) -> str:
    """``auto`` → the concrete strategy for this process (TPU, cluster, GPUs); other names unchanged."""
    if name != "auto":
        return name
    if _tpu_configured():
        return "tpu"
    if cluster_for(name, environ):
        return "multi_worker"
    import tensorflow as tf  # lazy: tensorflow (2.8 s)

    return "mirrored" if len(tf.config.list_logical_devices("GPU")) > 1 else "default"


def make_strategy(name: str, *, cpu_replicas: int = 1, peer_timeout_s: float = 600.0):
    """The ``tf.distribute.Strategy`` for ``train.strategy`` (see the module docstring)."""
    import tensorflow as tf  # lazy: tensorflow (2.8 s)

    name = resolve_name(name)
    if name == "tpu":
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=os.environ.get("TPU_NAME", "local"))
        tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
        return tf.distribute.TPUStrategy(resolver)
    if name == "multi_worker":
        return make_multi_worker(peer_timeout_s)
    if name == "mirrored":
        split_cpu(cpu_replicas)
        if tf.config.list_logical_devices("GPU"):
            return tf.distribute.MirroredStrategy()
        return tf.distribute.MirroredStrategy([d.name for d in tf.config.list_logical_devices("CPU")])
    return tf.distribute.get_strategy()


def make_multi_worker(peer_timeout_s: float):
    """``MultiWorkerMirroredStrategy`` over the cluster of ``TF_CONFIG`` / ``CLUSTER_SPEC``, within a deadline
    (:func:`rendezvous`: its constructor would wait for a missing peer forever)."""
    import tensorflow as tf  # lazy: tensorflow (2.8 s)

    config = cluster_config()
    if not config:
        raise ClusterError(f"train.strategy=multi_worker needs a cluster: set {TF_CONFIG} (or run on Vertex AI "
                           f"Training, which sets {CLUSTER_SPEC}) on every task")
    os.environ[TF_CONFIG] = json.dumps(config)  # CLUSTER_SPEC converted: TensorFlow reads TF_CONFIG only
    log.info("multi_worker: %s of %d tasks; waiting for %s", task_name(config), num_tasks(config),
             ", ".join(f"{n} at {a}" for n, a in peers(config)) or "no peer")
    rendezvous(config, peer_timeout_s)
    strategy = tf.distribute.MultiWorkerMirroredStrategy(
        cluster_resolver=tf.distribute.cluster_resolver.TFConfigClusterResolver())
    log.info("multi_worker: cluster formed, %d replicas", strategy.num_replicas_in_sync)
    return strategy


def is_multi_worker(strategy) -> bool:
    import tensorflow as tf  # lazy: tensorflow (2.8 s)

    return isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy)


def worker_scratch(config: Optional[Dict[str, Any]]) -> Optional[str]:
    """A private temporary folder for a non-chief task's share of collective saves; None on the chief."""
    if is_chief(config):
        return None
    return tempfile.mkdtemp(prefix=f"albert-{config['task']['type']}{config['task']['index']}-")
