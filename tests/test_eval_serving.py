"""components/evaluation/glue/serving.py: a failed raw-text export fails the GLUE run and leaves nothing behind; the
Transform graph is built by Beam once per key (SentencePiece model, length, lower-casing, pair) within a run.

Real failures, no mocks: the selected run's weights do not fit the task's classifier (after the tf.Transform
graph has been written to the staging folder), and a task folder that cannot be created because a file is in the
way. Beam builds are counted by wrapping the real ``analyze_and_transform``; the run-level sharing (CoLA → SST-2, MRPC → RTE)
is checked on the sample run (tests/test_pipeline_e2e.py). The successful export of one task
with TFMA is covered by ``tests/test_eval_run_benchmark.py::test_classifier_learns_synthetic_task``.
"""
import os
import shutil

import numpy as np

import pytest

from tests.conftest import export_untrained_albert, tiny_benchmark_config

import components  # noqa: F401  (TF_USE_LEGACY_KERAS before TF)

tf = pytest.importorskip("tensorflow")

from components.evaluation.glue import glue_data as glue_lib  # noqa: E402
from components.evaluation.glue import transform as transform_lib  # noqa: E402
from components.evaluation.finetune import predict  # noqa: E402
from components.evaluation.heads import FEATURE_KEYS, ClassifierModel, build_encoder  # noqa: E402
from components.evaluation.run_benchmark import run_benchmark  # noqa: E402
from components.evaluation.glue.serving import ServingExportError, TransformGraphs, export_glue_serving  # noqa: E402
from components.text.tokenization import AlbertTokenizer  # noqa: E402
from pipeline.settings.configs import FinetuneHParams  # noqa: E402
from trainer.files import METRICS_FILE, SPM_FILE  # noqa: E402

SEQ = 24


@pytest.fixture(scope="module")
def albert_dir(tmp_path_factory):
    return export_untrained_albert(str(tmp_path_factory.mktemp("albert")), seed=0)


def _tree(path):
    return sorted(os.path.relpath(os.path.join(d, n), path) for d, dirs, files in os.walk(path) for n in dirs + files)


def test_weights_that_do_not_fit_fail_the_export_and_leave_nothing(albert_dir, tmp_path):
    glue_dir = tiny_benchmark_config(1, 8, SEQ).benchmarks.glue_dir
    task = glue_lib.get_task("SST-2")
    tokenizer = AlbertTokenizer(os.path.join(albert_dir, SPM_FILE))
    dev = glue_lib.read_glue(task.name, "dev", glue_dir)[:16]
    arrays = glue_lib.convert_glue_examples(dev, tokenizer, SEQ, task.name)
    hp = FinetuneHParams(1e-3, 8, 0.0, 0.1, train_steps=1, warmup_steps=0, max_seq_length=SEQ)
    # The selected run's weights, from a 3-way head: SST-2's classifier has 2 outputs.
    wrong = ClassifierModel(build_encoder(albert_dir, 0.0, SEQ), 3, 0.1, 0)
    wrong({k: v[:1] for k, v in arrays.items() if k in FEATURE_KEYS}, training=False)
    res = {"seed": 0, "weights": wrong.get_weights()}
    out = tmp_path / "out"
    (out / "predictions").mkdir(parents=True)  # what the driver wrote before the export: stays as it was
    with pytest.raises(ServingExportError) as err:
        export_glue_serving(task, hp, albert_dir, tokenizer, res, {"dev": (dev, arrays)}, ["dev"], str(out))
    message = str(err.value)
    assert message.startswith(f"SST-2: exporting the raw-text serving model to {out / 'SST-2' / 'serving_model'} "
                              "failed: ValueError: ")
    assert isinstance(err.value.__cause__, ValueError)
    assert _tree(out) == ["predictions"]  # no SST-2/, transform/, serving_model/ or staging folder


def test_a_file_in_the_way_fails_the_glue_run_before_metrics(albert_dir, tmp_path):
    """Through ``run_benchmark``, as the GlueBenchmark node runs it: the error propagates, no metrics.json."""
    cfg = tiny_benchmark_config(2, 8, SEQ, glue_tasks=["SST-2"], export_serving_model=True, tfma=False)
    out = tmp_path / "out"
    out.mkdir()
    (out / "SST-2").write_text("not a folder\n", encoding="utf-8")
    with pytest.raises(ServingExportError, match=r"^SST-2: exporting the raw-text serving model to .* failed: "
                                                 r"FileExistsError: "):
        run_benchmark("glue", albert_dir, cfg.benchmarks.glue_dir, cfg, str(out))
    assert (out / "SST-2").read_text(encoding="utf-8") == "not a folder\n"
    assert not (out / METRICS_FILE).exists()
    assert [p for p in _tree(out) if "staging" in p or "serving_model" in p or "transform" in p] == []


@pytest.fixture
def beam_builds(monkeypatch):
    """The real ``analyze_and_transform``, counted: one entry (has_text_b) per Beam build of a Transform graph."""
    builds, real = [], transform_lib.analyze_and_transform

    def counting(rows, preprocessing_fn, has_text_b, *args, **kwargs):
        builds.append(has_text_b)
        return real(rows, preprocessing_fn, has_text_b, *args, **kwargs)

    monkeypatch.setattr(transform_lib, "analyze_and_transform", counting)
    return builds


def _dev(name, tokenizer, seq, n=16):
    dev = glue_lib.read_glue(name, "dev", tiny_benchmark_config(1, 8, seq).benchmarks.glue_dir)[:n]
    return dev, glue_lib.convert_glue_examples(dev, tokenizer, seq, name)


@pytest.mark.slow
def test_tasks_with_the_same_key_build_the_transform_graph_once(albert_dir, tmp_path, beam_builds):
    tokenizer = AlbertTokenizer(os.path.join(albert_dir, SPM_FILE))
    hp = FinetuneHParams(1e-3, 8, 0.0, 0.1, train_steps=1, warmup_steps=0, max_seq_length=SEQ)
    sst_dev, sst_arrays = _dev("SST-2", tokenizer, SEQ)
    model = ClassifierModel(build_encoder(albert_dir, 0.0, SEQ), 2, 0.1, 0)  # every task here has two labels
    in_memory = predict(model, sst_arrays)["logits"]
    res = {"seed": 0, "weights": model.get_weights()}
    wrong = ClassifierModel(build_encoder(albert_dir, 0.0, SEQ), 3, 0.1, 0)
    wrong({k: v[:1] for k, v in sst_arrays.items() if k in FEATURE_KEYS}, training=False)
    graphs, out = TransformGraphs(), tmp_path / "out"

    def export(name, weights=res):
        devs = {"dev": (sst_dev, sst_arrays) if name == "SST-2" else _dev(name, tokenizer, SEQ)}
        return export_glue_serving(glue_lib.get_task(name), hp, albert_dir, tokenizer, weights, devs, ["dev"],
                                   str(out), run_tfma=False, graphs=graphs)["dev"]

    cola = export("CoLA")
    assert beam_builds == [False] and cola["transform_check"]["graph"] == "built" and len(graphs) == 1
    # A failure on the reuse path is still all or nothing, and records no graph.
    with pytest.raises(ServingExportError, match=r"^SST-2: exporting .* failed: ValueError: "):
        export("SST-2", weights={"seed": 0, "weights": wrong.get_weights()})
    assert [p for p in _tree(out) if not p.startswith("CoLA")] == [] and len(graphs) == 1
    sst = export("SST-2")
    assert beam_builds == [False]  # same (spm model, length, lower-casing, single sentence): no second Beam build
    assert sst["transform_check"] == {"split": "dev", "rows": 16, "rows_equal_python_featurisation": 16,
                                      "graph": "reused from CoLA"}
    assert sst["serving_check"]["same_predictions"] == 16 and sst["serving_check"]["max_abs_logit_diff"] < 1e-4
    # SST-2's serving model is self-contained: its own transform/ copy, served with CoLA's folder gone.
    assert os.path.isdir(out / "SST-2" / "transform" / "transform_fn")
    shutil.rmtree(out / "CoLA")
    serve = tf.saved_model.load(str(out / sst["serving_model"])).signatures["serving_default"]
    served = serve(text_a=tf.constant([e.text_a for e in sst_dev]))["logits"].numpy()
    np.testing.assert_allclose(served, in_memory, rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(np.argmax(served, -1), np.argmax(in_memory, -1))
    # Another length, lower-casing, pair or model is another key (the sample run builds MRPC's pair graph anew:
    # tests/test_pipeline_e2e.py).
    proto = tokenizer.sp.serialized_model_proto()
    assert len({TransformGraphs.key(proto, SEQ, True, False), TransformGraphs.key(proto, SEQ + 8, True, False),
                TransformGraphs.key(proto, SEQ, False, False), TransformGraphs.key(proto, SEQ, True, True),
                TransformGraphs.key(proto + b"x", SEQ, True, False)}) == 5
