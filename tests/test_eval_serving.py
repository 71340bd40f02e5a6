"""components/evaluation/serving.py: a failed raw-text export fails the GLUE run and leaves nothing behind.

Real failures, no mocks: the selected run's weights do not fit the task's classifier (after the tf.Transform
graph has been written to the staging folder), and a task folder that cannot be created because a file is in the
way. The successful export is covered by ``tests/test_eval_run_benchmark.py::test_classifier_learns_synthetic_task``.
"""
import os

import pytest

from tests.conftest import export_untrained_albert, tiny_benchmark_config

import components  # noqa: F401  (TF_USE_LEGACY_KERAS before TF)

tf = pytest.importorskip("tensorflow")

from components.evaluation import glue as glue_lib  # noqa: E402
from components.evaluation.heads import FEATURE_KEYS, ClassifierModel, build_encoder  # noqa: E402
from components.evaluation.run_benchmark import run_benchmark  # noqa: E402
from components.evaluation.serving import ServingExportError, export_glue_serving  # noqa: E402
from components.text.tokenization import AlbertTokenizer  # noqa: E402
from pipeline.configs import FinetuneHParams  # noqa: E402
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
