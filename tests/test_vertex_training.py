"""Vertex AI Training Trainer, offline: worker pools from the config, the compiled Vertex spec, and the
executor that publishes the final eval metrics as artifact properties."""
import json
import os

import pytest

from pipeline.settings.configs import ConfigError, VertexTrainingConfig, build_config, sample_config

IMAGE = "us-docker.pkg.dev/p/albert/albert-tfx:1"


def _vertex(**kw):
    cfg = VertexTrainingConfig(enabled=True, project="my-proj", **kw)
    cfg.validate()
    return cfg


def test_worker_pool_tpu_v3():
    from trainer.trainer_component import worker_pool_specs

    specs = worker_pool_specs(_vertex(machine_type="cloud-tpu", accelerator_type="TPU_V3", accelerator_count=8), IMAGE)
    assert specs == [{"machine_spec": {"machine_type": "cloud-tpu", "accelerator_type": "TPU_V3", "accelerator_count": 8},
                      "replica_count": 1, "container_spec": {"image_uri": IMAGE}}]


def test_worker_pool_tpu_v5e_topology():
    from trainer.trainer_component import worker_pool_specs

    specs = worker_pool_specs(_vertex(machine_type="ct5lp-hightpu-4t", accelerator_type="TPU_V5_LITEPOD",
                                      tpu_topology="4x4"), IMAGE)
    assert specs[0]["machine_spec"] == {"machine_type": "ct5lp-hightpu-4t", "accelerator_type": "TPU_V5_LITEPOD",
                                        "tpu_topology": "4x4"}
    assert "disk_spec" not in specs[0]


def test_worker_pool_gpu_chief_and_workers():
    from trainer.trainer_component import training_job_spec, worker_pool_specs

    cfg = _vertex(machine_type="a2-highgpu-4g", accelerator_type="NVIDIA_TESLA_A100", accelerator_count=4,
                  replica_count=3, service_account="sa@my-proj.iam.gserviceaccount.com")
    machine = {"machine_type": "a2-highgpu-4g", "accelerator_type": "NVIDIA_TESLA_A100", "accelerator_count": 4}
    disk = {"boot_disk_type": "pd-ssd", "boot_disk_size_gb": 100}
    assert worker_pool_specs(cfg, IMAGE) == [
        {"machine_spec": machine, "replica_count": 1, "container_spec": {"image_uri": IMAGE}, "disk_spec": disk},
        {"machine_spec": machine, "replica_count": 2, "container_spec": {"image_uri": IMAGE}, "disk_spec": disk}]
    job = training_job_spec(cfg, IMAGE)
    assert job["project"] == "my-proj" and job["job_spec"]["service_account"].startswith("sa@")
    single = _vertex(machine_type="n1-standard-8")
    assert [p["replica_count"] for p in worker_pool_specs(single, IMAGE)] == [1]


def test_several_machines_need_multi_worker_and_no_tpu():
    base = ["vertex_training.enabled=true", "vertex_training.project=p", "vertex_training.machine_type=n1-standard-8",
            "vertex_training.replica_count=2"]
    with pytest.raises(ConfigError, match=r"train\.strategy.*multi_worker"):
        build_config("sample", overrides=base + ["train.strategy=mirrored"])
    assert build_config("sample", overrides=base + ["train.strategy=multi_worker"]).vertex_training.replica_count == 2
    with pytest.raises(ConfigError, match=r"vertex_training\.replica_count"):
        build_config("paper", overrides=["corpus.books_dir=/b", "vertex_training.enabled=true",
                                         "vertex_training.project=p", "vertex_training.replica_count=2"])


@pytest.mark.parametrize("override, field", [
    ("vertex_training.accelerator_count=4", "vertex_training.accelerator_count"),  # cloud-tpu needs 8
    ("vertex_training.accelerator_type=NVIDIA_TESLA_T4", "vertex_training.accelerator_type"),
    ("vertex_training.project=none", "vertex_training.project"),
    ("vertex_training.tpu_topology=2by2", "vertex_training.tpu_topology"),
])
def test_invalid_vertex_config_names_the_field(override, field):
    base = ["vertex_training.enabled=true", "vertex_training.project=p"]
    with pytest.raises(ConfigError, match=field.replace(".", r"\.")):
        build_config("paper", overrides=["corpus.books_dir=/b"] + base + [override])


def test_vertex_off_by_default_and_paper_values():
    assert not build_config("sample").vertex_training.enabled
    paper = build_config("paper", overrides=["corpus.books_dir=/b"]).vertex_training
    assert not paper.enabled
    assert (paper.machine_type, paper.accelerator_type, paper.accelerator_count) == ("cloud-tpu", "TPU_V3", 8)
    with pytest.raises(ConfigError, match="vertex_training.image"):
        from trainer.trainer_component import worker_pool_specs
        worker_pool_specs(paper, "")


def _executors(spec):
    return spec.get("pipelineSpec", spec)["deploymentSpec"]["executors"]


def test_compiled_vertex_spec_has_vertex_trainer(tmp_path):
    from pipeline.cloud.kubeflow_v2_runner import compile_pipeline
    from tfx import v1 as tfx

    config = build_config("sample", overrides=[
        "vertex_training.enabled=true", "vertex_training.project=my-proj", "vertex_training.region=europe-west4",
        "vertex_training.machine_type=cloud-tpu", "vertex_training.accelerator_type=TPU_V3",
        "vertex_training.accelerator_count=8", f"vertex_training.image={IMAGE}"])
    path = compile_pipeline(config, str(tmp_path / "spec.json"), image=IMAGE)
    with open(path) as f:
        spec = json.load(f)
    pipeline_spec = spec.get("pipelineSpec", spec)
    assert "Trainer" in pipeline_spec["root"]["dag"]["tasks"]
    trainer_exec = [e for name, e in _executors(spec).items() if "Trainer" in name]
    assert len(trainer_exec) == 1
    args = " ".join(trainer_exec[0]["container"]["args"])
    assert "trainer.trainer_component.VertexMetricsGenericExecutor" in args
    task_params = pipeline_spec["root"]["dag"]["tasks"]["Trainer"]["inputs"]["parameters"]
    assert task_params["run_fn"]["runtimeValue"]["constant"] == "trainer.task.run_fn"
    custom = json.loads(task_params["custom_config"]["runtimeValue"]["constant"])
    ext = tfx.extensions.google_cloud_ai_platform
    assert custom[ext.ENABLE_VERTEX_KEY] is True and custom[ext.VERTEX_REGION_KEY] == "europe-west4"
    assert custom[ext.TRAINING_ARGS_KEY] == {
        "project": "my-proj",
        "job_spec": {"worker_pool_specs": [{
            "machine_spec": {"machine_type": "cloud-tpu", "accelerator_type": "TPU_V3", "accelerator_count": 8},
            "replica_count": 1, "container_spec": {"image_uri": IMAGE}}]}}
    # The Trainer's own settings only: model, train (the step count is its own runtime parameter), seed.
    albert = json.loads(custom["albert"])
    assert sorted(albert) == ["model", "seed", "train"] and "num_train_steps" not in albert["train"]
    assert task_params["num_train_steps"] == {"componentInputParameter": "num_train_steps"}


def test_compiled_multi_host_job_runs_one_chief_and_workers(tmp_path):
    """What ``compile`` wrote, through TFX's own Vertex job client (the code that builds the CustomJob it sends):
    a chief pool and a worker pool on the same image and command, whose CLUSTER_SPEC becomes the TF_CONFIG that
    ``train.strategy=multi_worker`` trains from."""
    from tfx.extensions.google_cloud_ai_platform import training_clients
    from tfx import v1 as tfx

    from pipeline.cloud.kubeflow_v2_runner import compile_pipeline
    from trainer import distribute

    config = build_config("sample", overrides=[
        "vertex_training.enabled=true", "vertex_training.project=my-proj", "vertex_training.machine_type=a2-highgpu-8g",
        "vertex_training.accelerator_type=NVIDIA_TESLA_A100", "vertex_training.accelerator_count=8",
        "vertex_training.replica_count=3", "train.strategy=multi_worker"], pipeline_root="gs://bucket/albert")
    path = compile_pipeline(config, str(tmp_path / "spec.json"), image=IMAGE)
    with open(path) as f:
        spec = json.load(f)
    params = spec["pipelineSpec"]["root"]["dag"]["tasks"]["Trainer"]["inputs"]["parameters"]
    custom = json.loads(params["custom_config"]["runtimeValue"]["constant"])
    assert json.loads(custom["albert"])["train"]["strategy"] == "multi_worker"
    client = training_clients.VertexJobClient.__new__(training_clients.VertexJobClient)  # no credentials offline
    job = client.create_training_job({}, {}, {"run_fn": "trainer.task.run_fn"},
                                     "trainer.trainer_component.VertexMetricsGenericExecutor",
                                     custom[tfx.extensions.google_cloud_ai_platform.TRAINING_ARGS_KEY], None, None)
    pools = job["job_spec"]["worker_pool_specs"]
    assert [p["replica_count"] for p in pools] == [1, 2]
    assert {p["container_spec"]["image_uri"] for p in pools} == {IMAGE}
    assert pools[0]["container_spec"]["command"] == pools[1]["container_spec"]["command"]
    assert "trainer.trainer_component.VertexMetricsGenericExecutor" in pools[1]["container_spec"]["command"]
    assert all(p["machine_spec"]["accelerator_count"] == 8 for p in pools)
    # The CLUSTER_SPEC Vertex AI gives the second worker of these pools, and what the trainer makes of it.
    cluster_spec = {"cluster": {"workerpool0": ["chief-0:2222"], "workerpool1": ["w-0:2222", "w-1:2222"]},
                    "task": {"type": "workerpool1", "index": 1}, "environment": "cloud"}
    tf_config = distribute.cluster_config({"CLUSTER_SPEC": json.dumps(cluster_spec)})
    assert tf_config == {"cluster": {"chief": ["chief-0:2222"], "worker": ["w-0:2222", "w-1:2222"]},
                         "task": {"type": "worker", "index": 1}}
    assert not distribute.is_chief(tf_config) and distribute.num_tasks(tf_config) == 3


def test_training_args_key_is_tfx_own():
    """``vertex_training`` spells TFX's key itself: TFX defines it only next to its aiplatform-importing executor."""
    from tfx.extensions.google_cloud_ai_platform.trainer import executor as vertex_executor

    from trainer import trainer_component as vertex_training

    assert vertex_training.TRAINING_ARGS_KEY == vertex_executor.TRAINING_ARGS_KEY


def test_create_pipeline_local_trainer_uses_metrics_executor():
    from pipeline.pipeline import create_pipeline

    p = create_pipeline(build_config("sample"))
    trainer = next(c for c in p.components if c.id == "Trainer")
    assert trainer.executor_spec.executor_class.__name__ == "MetricsGenericExecutor"
    assert trainer.exec_properties["run_fn"] == "trainer.task.run_fn"
    vertex = create_pipeline(build_config("sample", overrides=["vertex_training.enabled=true",
                                                               "vertex_training.project=p"]), image=IMAGE)
    trainer = next(c for c in vertex.components if c.id == "Trainer")
    assert trainer.executor_spec.executor_class.__name__ == "VertexMetricsGenericExecutor"
    custom = json.loads(trainer.exec_properties["custom_config"])
    pool = custom["ai_platform_training_args"]["job_spec"]["worker_pool_specs"][0]
    assert pool["container_spec"]["image_uri"] == IMAGE and pool["machine_spec"]["machine_type"] == "n1-standard-8"
    with pytest.raises(TypeError, match="resolved, validated configuration of build_config"):
        create_pipeline(sample_config())  # a preset as such: not resolved, validated and frozen


def test_metrics_executor_sets_float_properties(tmp_path, monkeypatch):
    """After run_fn, eval_metrics.json in model_run becomes float custom properties of model_run and model."""
    from tfx.components.trainer import executor as trainer_executor
    from tfx.types import standard_artifacts

    from trainer import trainer_component as vertex_training

    model_run, model = standard_artifacts.ModelRun(), standard_artifacts.Model()
    model_run.uri, model.uri = str(tmp_path / "model_run"), str(tmp_path / "model")
    os.makedirs(model_run.uri)

    def fake_do(self, input_dict, output_dict, exec_properties):  # what run_fn leaves behind
        with open(os.path.join(output_dict["model_run"][0].uri, "eval_metrics.json"), "w") as f:
            json.dump({"eval_metrics": {"mlm_accuracy": 0.25, "sentence_accuracy": 0.75, "mlm_loss": 4.5},
                       "start_step": 0, "final_step": 300, "precision": "float32"}, f)

    monkeypatch.setattr(trainer_executor.GenericExecutor, "Do", fake_do)
    vertex_training.MetricsGenericExecutor().Do({}, {"model_run": [model_run], "model": [model]}, {})
    for artifact in (model_run, model):
        assert artifact.get_float_custom_property("eval_mlm_accuracy") == 0.25
        assert artifact.get_float_custom_property("eval_sentence_accuracy") == 0.75
        assert artifact.get_float_custom_property("final_step") == 300.0
    # the Vertex launcher reads the file back the same way once the CustomJob has succeeded
    assert vertex_training.read_eval_metrics(model_run.uri)["eval_mlm_loss"] == 4.5


def test_num_train_steps_parameter_becomes_train_args():
    """The step count is a plain int node parameter (runtime-parameter capable) that the executor puts into
    ``train_args.num_steps``, where ``run_fn`` reads it."""
    from google.protobuf import json_format
    from tfx.proto import trainer_pb2

    from trainer.trainer_component import apply_num_train_steps

    props = apply_num_train_steps({"train_args": "{}", "num_train_steps": 17, "run_fn": "x"})
    assert "num_train_steps" not in props and props["run_fn"] == "x"
    assert json_format.Parse(props["train_args"], trainer_pb2.TrainArgs()).num_steps == 17
    assert apply_num_train_steps({"train_args": "{}"}) == {"train_args": "{}"}
