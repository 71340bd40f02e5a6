"""Done-when tests of issue 26: every distribution strategy runs ``albert-pipeline pretrain`` end to end.

The same real run (the resume test's masked examples, albert-tiny, 12 steps of batch 8, checkpoints every 5) as:

* on the default device (the reference, run in the test's own process: the command's work without its start-up);
* ``mirrored`` over 2 logical CPU devices (the CPU twin of a multi-GPU VM) with 2 gradient accumulation steps
  (``train.grad_accum_steps``: 2 micro-batches of 2 per replica and step), SIGKILLed after step 6 and rerun with 4
  steps per device loop (``train.steps_per_loop``, the TPU's loop): the killed and resumed run with accumulation;
* ``multi_worker``: 2 processes on loopback ports (``TF_CONFIG``), one SIGKILLed mid-run, both relaunched with
  the same command, the cluster then described as Vertex AI does (``CLUSTER_SPEC``);

each equal to the reference: every logged loss within 1e-5 relative, the exported weights within 1e-5. Every run
but the reference is a process of its own, forked from the warm fork server of tests/warm_processes.py (the command's
console-script start is tests/test_cli_run.py's). Dropout is 0 here: with dropout, each replica draws its own masks
(folded from its replica id), as in any data-parallel run. A worker whose peers never come fails within
``train.peer_timeout_s``, exit 2, one line naming the address.
"""
import json
import os
import subprocess
import sys
import time

import numpy as np
import pytest

from tests import warm_processes
from tests.conftest import CLI, REPO, cli_in_process
from tests.reliability.fixtures import kill_when
from tests.test_resume_same_run import (CHECKPOINT_EVERY, DATA, METRICS, STEPS, _assert_same_run, _checkpoint_steps,
                                        _train_lines)
from trainer.distribute import free_loopback_addresses, reachable

TRAIN = [f"train.num_train_steps={STEPS}", "train.num_warmup_steps=2", "train.train_batch_size=8",
         f"train.checkpoint_every={CHECKPOINT_EVERY}", "train.log_every=1", "train.eval_every=6",
         "train.eval_steps=2", "train.eval_batch_size=4", "train.shuffle_buffer=16", "train.learning_rate=0.003",
         "model.dropout=0.0"]


pytestmark = [pytest.mark.slow, pytest.mark.longest_first(3)]


def _cmd(examples, output, *extra):
    return [CLI, "pretrain", "--examples", examples, "--output", output] + [
        f"--set={o}" for o in DATA + TRAIN + list(extra)]


def _env(**extra):
    env = {k: v for k, v in os.environ.items() if k not in ("TF_CONFIG", "CLUSTER_SPEC")}
    return {**env, "PYTHONPATH": REPO, "TF_CPP_MIN_LOG_LEVEL": "2", **extra}


def _tf_config(addresses, index):
    return json.dumps({"cluster": {"worker": addresses}, "task": {"type": "worker", "index": index}})


def _eval_lines(output):
    path = os.path.join(output, "model_run", "train_history.jsonl")
    with open(path) as f:
        return [r for r in map(json.loads, f) if r["split"] == "eval"]


def _assert_equal_runs(reference, other):
    """The same run: training metrics, weights (1e-5) and TensorBoard steps, and the held-out metrics."""
    _assert_same_run(reference, other, weight_atol=1e-5)
    ref_eval, got_eval = _eval_lines(reference), _eval_lines(other)
    assert [e["step"] for e in got_eval] == [6, 12] == [e["step"] for e in ref_eval]
    for a, b in zip(ref_eval, got_eval):
        for name in METRICS[:-1]:
            np.testing.assert_allclose(b[name], a[name], rtol=1e-5, atol=1e-7, err_msg=f"eval {a['step']} {name}")


@pytest.fixture(scope="module")
def examples(resume_examples):
    return resume_examples["dir"]


@pytest.fixture(scope="module")
def reference(examples, tmp_path_factory):
    """The default-device run: what ``albert-pipeline pretrain`` with ``train.strategy=cpu`` does, in this process
    (each run it is compared with is a process of its own)."""
    base = tmp_path_factory.mktemp("reference")
    out = str(base / "run")
    done = cli_in_process(_cmd(examples, out, "train.strategy=cpu")[1:], base / "logs")
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout)["final_step"] == STEPS
    return out


def test_mirrored_over_two_cpu_replicas_equals_one_device_through_a_kill(examples, reference, tmp_path):
    out = str(tmp_path / "mirrored")
    mirrored = ["train.strategy=mirrored", "train.cpu_replicas=2", "train.grad_accum_steps=2"]
    proc = warm_processes.start(_cmd(examples, out, *mirrored), env=_env())
    kill_when(proc, lambda: any(h["step"] > CHECKPOINT_EVERY for h in _train_lines(out)), "step 6", timeout=300,
              poll=0.01)
    assert _checkpoint_steps(out) == [CHECKPOINT_EVERY]
    # Rerun: resumes at step 5 and runs the rest 4 optimizer steps per call into the device (steps 6-8, 9-10 ...).
    done = warm_processes.run(_cmd(examples, out, *mirrored, "train.steps_per_loop=4"), env=_env(), timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    info = json.loads(done.stdout)
    assert (info["start_step"], info["final_step"]) == (CHECKPOINT_EVERY, STEPS)
    with open(os.path.join(out, "model", "albert", "export_info.json")) as f:
        assert json.load(f)["num_replicas"] == 2
    _assert_equal_runs(reference, out)


def test_two_workers_equal_one_process_and_resume_after_a_worker_is_killed(examples, reference, tmp_path):
    out = str(tmp_path / "cluster")
    addresses = free_loopback_addresses(2)
    cmd = _cmd(examples, out, "train.strategy=multi_worker", "train.peer_timeout_s=600")
    procs = [warm_processes.start(cmd, env=_env(TF_CONFIG=_tf_config(addresses, i))) for i in range(2)]
    try:
        # SIGKILL worker 1 once the chief logged step 6 (after checkpoint 5, before checkpoint 10).
        kill_when(procs[1], lambda: any(h["step"] > CHECKPOINT_EVERY for h in _train_lines(out)), "step 6",
                  timeout=300, poll=0.01)
        # The chief cannot finish alone: its next collective fails, and it stops with one line saying what to do.
        _, err = procs[0].communicate(timeout=180)
        assert procs[0].returncode == 2, err[-3000:]
        lines = [line for line in err.splitlines() if line.startswith("albert-pipeline pretrain: error:")]
        assert len(lines) == 1 and "worker 0 lost the cluster after step" in lines[0], err[-3000:]
        assert "rerun every task with the same command" in lines[0]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    logged, saved = [h["step"] for h in _train_lines(out)], _checkpoint_steps(out)
    assert saved == [CHECKPOINT_EVERY] and CHECKPOINT_EVERY < max(logged) < STEPS
    # Only the chief wrote: one history, checkpoints in one folder, no worker scratch left behind.
    assert len(os.listdir(os.path.join(out, "checkpoints"))) == 1

    # Relaunch both with the same command; the cluster now described as Vertex AI does (chief pool + worker pool).
    spec = {"cluster": {"workerpool0": addresses[:1], "workerpool1": addresses[1:]}, "environment": "cloud"}
    procs = [warm_processes.start(cmd, env=_env(CLUSTER_SPEC=json.dumps(
        {**spec, "task": {"type": f"workerpool{i}", "index": 0}}))) for i in range(2)]
    results = []
    for p in procs:
        try:
            out_text, err_text = p.communicate(timeout=600)
        finally:
            if p.poll() is None:
                p.kill()
        assert p.returncode == 0, err_text[-3000:]
        # Nothing but the CLI's own lines on the terminal (TensorFlow's C++ banners and cuInit go to the log).
        assert all(line.startswith("albert-pipeline: ") for line in err_text.splitlines()), err_text[-3000:]
        results.append(json.loads(out_text))
    assert [(r["start_step"], r["final_step"]) for r in results] == [(CHECKPOINT_EVERY, STEPS)] * 2
    assert results[0]["eval_metrics"] == results[1]["eval_metrics"]
    _assert_equal_runs(reference, out)
    with open(os.path.join(out, "model", "albert", "export_info.json")) as f:
        assert json.load(f)["num_replicas"] == 2


def test_a_worker_whose_peer_never_comes_fails_in_bounded_time(examples, tmp_path):
    out = str(tmp_path / "alone")
    addresses = free_loopback_addresses(2)
    proc = warm_processes.start(_cmd(examples, out, "train.strategy=multi_worker", "train.peer_timeout_s=5"),
                                env=_env(TF_CONFIG=_tf_config(addresses, 0)))
    try:
        # The bound runs from the moment the worker listens on its address (the rendezvous), not from process
        # start: importing TensorFlow takes minutes on a slow shared host, and that is not what is bounded.
        deadline = time.monotonic() + 600
        while not reachable(addresses[0]) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        waiting_from = time.monotonic()
        stdout, stderr = proc.communicate(timeout=300)
        waited = time.monotonic() - waiting_from
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    done = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
    assert done.returncode == 2, done.stderr[-3000:]
    assert waited < 60, waited  # 5 s of probing, the linger and the exit; the default would wait 600 s
    lines = [line for line in done.stderr.splitlines() if "error" in line]
    assert len(lines) == 1 and f"worker 1 at {addresses[1]}" in lines[0] and "within 5 s" in lines[0], done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""


def _trainer_artifacts(examples, tmp_path):
    from tfx.types import standard_artifacts

    source = standard_artifacts.Examples()
    source.uri, source.split_names = examples, json.dumps(["train", "eval"])
    model, model_run = standard_artifacts.Model(), standard_artifacts.ModelRun()
    model.uri, model_run.uri = str(tmp_path / "model"), str(tmp_path / "model_run")
    return {"examples": [source]}, {"model": [model], "model_run": [model_run]}


def test_local_trainer_node_under_a_distributed_strategy(examples, tmp_path):
    """The Trainer node's own executor, in-process, with ``train.strategy=mirrored``: distributed variables (as on
    several GPUs or a TPU) through ``run_fn``, the export and the metrics it publishes to MLMD."""
    from pipeline.settings.configs import build_config
    from trainer.trainer_component import MetricsGenericExecutor, create_trainer
    from tfx import types as tfx_types
    from tfx.types import standard_artifacts

    config = build_config("sample", overrides=DATA + TRAIN + ["train.strategy=mirrored", "train.num_train_steps=3"],
                          pipeline_root=str(tmp_path / "root"))
    node = create_trainer(config.node_parameters()["Trainer"], tfx_types.Channel(type=standard_artifacts.Examples))
    inputs, outputs = _trainer_artifacts(examples, tmp_path)
    MetricsGenericExecutor().Do(inputs, outputs, dict(node.exec_properties))
    run = outputs["model_run"][0]
    assert run.get_float_custom_property("final_step") == 3.0
    assert run.get_float_custom_property("num_replicas") == 1.0
    serving_dir = os.path.join(outputs["model"][0].uri, "Format-Serving")
    assert os.path.exists(os.path.join(serving_dir, "saved_model.pb"))
    # The published held-out sentence accuracy is the exported model's correct sentence-order predictions over
    # the evaluated records (the first eval_steps * eval_batch_size of Split-eval), divided by their number, as
    # the Trainer divides (float32): recomputed here from the SavedModel's sentence logits.
    import tensorflow as tf

    from trainer import input_pipeline

    d, t = config.datagen, config.train
    eval_files = input_pipeline.expand_files([os.path.join(examples, "Split-eval", "*")])
    num = min(sum(input_pipeline.count_records(eval_files)), t.eval_steps * t.eval_batch_size)
    assert num == 8
    (features, labels), = input_pipeline.make_eval_dataset(eval_files, num, d.max_seq_length,
                                                            d.max_predictions_per_seq, num_records=num,
                                                            global_batch_size=num)
    serve = tf.saved_model.load(serving_dir).signatures["serving_default"]
    logits = serve(input_ids=features["input_ids"], input_mask=features["input_mask"],
                   segment_ids=features["segment_ids"])["sentence_logits"].numpy()
    correct = int(np.sum(np.argmax(logits, axis=-1) == labels["next_sentence_labels"].numpy().reshape(-1)))
    assert run.get_float_custom_property("eval_sentence_accuracy") == float(np.float32(correct) / np.float32(num))


def test_vertex_trainer_job_on_two_machines(examples, reference, tmp_path, monkeypatch):
    """The Vertex AI Trainer node end to end, with Vertex itself played locally: TFX's real Vertex executor builds
    and 'sends' the CustomJob of two worker pools; the send (the gapic call) starts each pool's container command
    as a local process, with the CLUSTER_SPEC Vertex AI would give it; the job's result is the reference run's."""
    import google.auth
    from google.auth.credentials import AnonymousCredentials
    from google.cloud.aiplatform_v1.services.job_service import JobServiceClient
    from google.cloud.aiplatform_v1.types import job_state

    from pipeline.settings.configs import build_config
    from trainer.trainer_component import VertexMetricsGenericExecutor, create_trainer
    from tfx import types as tfx_types
    from tfx.types import standard_artifacts

    monkeypatch.setattr(google.auth, "default", lambda *a, **k: (AnonymousCredentials(), "p"))
    addresses = free_loopback_addresses(2)
    sent, finished = [], []

    def create_custom_job(self, parent=None, custom_job=None, **kwargs):
        sent.append(custom_job)
        pools = custom_job["job_spec"]["worker_pool_specs"]
        cluster = {f"workerpool{i}": addresses[sum(p["replica_count"] for p in pools[:i]):][:pool["replica_count"]]
                   for i, pool in enumerate(pools)}
        procs = []
        for i, pool in enumerate(pools):
            for index in range(pool["replica_count"]):
                command = pool["container_spec"]["command"]
                assert command[:3] == ["python", "-m", "tfx.scripts.run_executor"]
                spec = {"cluster": cluster, "task": {"type": f"workerpool{i}", "index": index}, "environment": "cloud"}
                log = str(tmp_path / f"workerpool{i}-{index}.log")
                procs.append(warm_processes.start([sys.executable] + command[1:], stdout=log, stderr=log,
                                                  env=_env(CLUSTER_SPEC=json.dumps(spec))))
        for p in procs:
            out, _ = p.communicate(timeout=600)
            finished.append((p.returncode, out[-3000:]))
        return type("Job", (), {"name": f"{parent}/customJobs/1"})()

    def get_custom_job(self, name=None, **kwargs):
        ok = all(rc == 0 for rc, _ in finished)
        return type("Job", (), {"state": job_state.JobState.JOB_STATE_SUCCEEDED if ok
                                else job_state.JobState.JOB_STATE_FAILED})()

    monkeypatch.setattr(JobServiceClient, "create_custom_job", create_custom_job)
    monkeypatch.setattr(JobServiceClient, "get_custom_job", get_custom_job)
    config = build_config("sample", overrides=DATA + TRAIN + [
        "train.strategy=multi_worker", "train.peer_timeout_s=600", "vertex_training.enabled=true",
        "vertex_training.project=p", "vertex_training.machine_type=n1-standard-4", "vertex_training.replica_count=2"],
        pipeline_root=str(tmp_path / "root"))
    node = create_trainer(config.node_parameters(image="albert-tfx:test")["Trainer"],
                          tfx_types.Channel(type=standard_artifacts.Examples))
    inputs, outputs = _trainer_artifacts(examples, tmp_path)
    try:
        VertexMetricsGenericExecutor().Do(inputs, outputs, dict(node.exec_properties))
    finally:
        assert finished and all(rc == 0 for rc, _ in finished), finished
    assert [p["replica_count"] for p in sent[0]["job_spec"]["worker_pool_specs"]] == [1, 1]
    run = outputs["model_run"][0]
    assert run.get_float_custom_property("final_step") == STEPS
    assert run.get_float_custom_property("num_replicas") == 2.0
    assert len(os.listdir(str(tmp_path / "root" / "_checkpoints"))) == 1  # one run folder, written by the chief
    # The job trained what one process trains (the same loss curve and weights).
    ref, got = _train_lines(reference), _train_lines(str(tmp_path))
    np.testing.assert_allclose([h["loss"] for h in got], [h["loss"] for h in ref], rtol=1e-5)
    with open(os.path.join(outputs["model_run"][0].uri, "eval_metrics.json")) as f:
        assert json.load(f)["final_step"] == STEPS
