"""Issue 16: the "no pretraining" arm and the step-0 proof that fine-tuning starts from the pretrained encoder.

Tiny exported ALBERT dirs as in ``tests/test_eval_run_benchmark.py`` (an untrained albert-tiny written the way
``trainer.export.export`` writes it); no DAG run. The check compares every encoder variable with
``<albert_dir>/encoder/ckpt``; the negative cases are a partial restore (one variable off), a checkpoint with
variables the configured model does not hold, and a random-init encoder presented as pretrained.
"""
import json
import os
import shutil

import numpy as np
import pytest

from tests.conftest import export_untrained_albert, tiny_benchmark_config

import components  # noqa: F401  (TF_USE_LEGACY_KERAS before TF)

tf = pytest.importorskip("tensorflow")

from components.report import report_lib  # noqa: E402
from components.evaluation.heads import build_encoder  # noqa: E402
from components.evaluation.init_check import EncoderInitError, check_encoder_init  # noqa: E402
from components.evaluation.metrics import compare_arms  # noqa: E402
from components.evaluation.run_benchmark import run_benchmark  # noqa: E402
from config import ConfigError  # noqa: E402
from pipeline.settings.configs import build_config, sample_config  # noqa: E402

TINY_VARIABLES = 25  # albert-tiny, all shared: embeddings 7, one block 16, pooler 2


def _export(d, seed, **overrides):
    return export_untrained_albert(d, seed, **overrides)


@pytest.fixture(scope="module")
def albert_dir(tmp_path_factory):
    return _export(str(tmp_path_factory.mktemp("albert")), 0)


def test_pretrained_encoder_equals_checkpoint_and_random_init_differs(albert_dir):
    tf.keras.utils.set_random_seed(5)
    restored = build_encoder(albert_dir, 0.0, 32)
    rec = check_encoder_init(restored, albert_dir, "pretrained")
    assert rec["passed"] and rec["variables_compared"] == TINY_VARIABLES == len(restored.variables)
    assert rec["max_abs_diff"] == 0.0 and rec["equal_variables"] == TINY_VARIABLES
    assert rec["values_compared"] == sum(int(np.prod(v.shape)) for v in restored.variables)
    # 11 of 25 are not constant tensors (the embedding tables, the kernels); biases/LayerNorm start as 0/1.
    assert rec["informative_variables"] == 11
    tf.keras.utils.set_random_seed(5)
    fresh = build_encoder(albert_dir, 0.0, 32, restore=False)
    rec = check_encoder_init(fresh, albert_dir, "random_init")
    assert rec["passed"] and rec["variables_compared"] == TINY_VARIABLES
    assert rec["equal_informative_variables"] == 0 and rec["min_abs_diff_informative"] > 0
    # A random-init encoder passed off as pretrained fails, naming the variables.
    with pytest.raises(EncoderInitError, match=r"11 of 25 variables differ .*word_embeddings"):
        check_encoder_init(fresh, albert_dir, "pretrained")
    # And the pretrained encoder passed off as the random baseline fails too.
    with pytest.raises(EncoderInitError, match=r"random_init arm starts from pretrained weights: 11 of 11"):
        check_encoder_init(restored, albert_dir, "random_init")


def test_partial_restore_fails_naming_the_variable(albert_dir):
    encoder = build_encoder(albert_dir, 0.0, 32)
    ffn = next(v for v in encoder.variables if v.name.endswith("ffn/output/kernel:0"))
    ffn.assign_add(tf.fill(ffn.shape, 1e-6))  # one tensor off by 1e-6, as a partly applied restore would be
    with pytest.raises(EncoderInitError, match=r"1 of 25 variables differ .*ffn/output_dense/kernel"):
        check_encoder_init(encoder, albert_dir, "pretrained")


def test_mismatched_checkpoint_fails_loudly_through_run_benchmark(tmp_path):
    """A checkpoint of another layout (unshared, 2 layers) under a config saying all-shared: TensorFlow's restore
    takes the layer it finds (``assert_existing_objects_matched`` passes), the check names the rest."""
    good = _export(str(tmp_path / "good"), 0)
    other = _export(str(tmp_path / "other"), 1, sharing="none", num_hidden_layers=2)
    shutil.rmtree(os.path.join(good, "encoder"))
    shutil.copytree(os.path.join(other, "encoder"), os.path.join(good, "encoder"))
    cfg = _cfg(steps=2, glue_tasks=["RTE"])
    with pytest.raises(EncoderInitError, match=r"checkpoint variable\(s\) absent from the encoder: "
                                               r".*encoder/encoder/groups/1/blocks/0/attention"):
        run_benchmark("glue", good, cfg.benchmarks.glue_dir, cfg, str(tmp_path / "out"))


def _cfg(steps=4, batch=8, seq=32, **bench):
    return tiny_benchmark_config(steps, batch, seq, **bench)


def test_random_init_arm_in_metrics_report_and_results(albert_dir, tmp_path):
    cfg = _cfg(steps=4, seeds=3, glue_tasks=["RTE"], baselines=["random_init"])
    out = str(tmp_path / "glue")
    result = run_benchmark("glue", albert_dir, cfg.benchmarks.glue_dir, cfg, out)
    with open(os.path.join(out, "metrics.json"), encoding="utf-8") as f:
        assert json.load(f) == result
    assert result["protocol"]["arms"] == ["pretrained", "random_init"]
    pre, base = result["tasks"]["RTE"], result["baselines"]["random_init"]["tasks"]["RTE"]
    seeds = [cfg.seed + i for i in range(3)]
    assert [r["seed"] for r in result["runs"]["RTE"]] == seeds
    assert [r["seed"] for r in result["baselines"]["random_init"]["runs"]["RTE"]] == seeds  # same protocol
    assert len(pre["run_scores"]) == len(base["run_scores"]) == 3
    assert os.path.exists(os.path.join(out, base["predictions"])) and base["predictions"].startswith("baselines")
    # Step-0 checks of every run (3 seeds per arm), recorded per run and summarised per arm.
    assert all(r["init_check"]["max_abs_diff"] == 0.0 for r in result["runs"]["RTE"])
    chk = result["init_check"]
    assert chk["passed"] and chk["runs_checked"] == 3 and chk["variables_compared"] == TINY_VARIABLES
    assert chk["max_abs_diff"] == 0.0 and chk["arm"] == "pretrained"
    bchk = result["baselines"]["random_init"]["init_check"]
    assert bchk["passed"] and bchk["arm"] == "random_init" and bchk["runs_checked"] == 3
    assert bchk["equal_informative_variables_max"] == 0 and bchk["min_abs_diff_informative"] > 0
    # The seeds differ: the baseline's runs start from different random encoders and give their own scores.
    gain = result["gain_over_baseline"]["random_init"]["RTE"]
    assert gain["pretrained"]["median"] == float(np.median(pre["run_scores"]))
    assert gain["baseline"]["median"] == float(np.median(base["run_scores"]))
    assert gain["gain_median"] == pytest.approx(gain["pretrained"]["median"] - gain["baseline"]["median"])
    assert gain["gain_paired"]["n"] == 3
    assert gain["beyond_spread"] == (min(pre["run_scores"]) > max(base["run_scores"]))
    # The majority-class floor, recomputed from the sample RTE labels, and the runs of each arm that sit on it.
    from components.evaluation.glue import glue_data as glue_lib
    from components.evaluation.metrics import majority_baseline

    labels = {split: [glue_lib.get_task("RTE").labels.index(e.label)
                      for e in glue_lib.read_glue("RTE", split, cfg.benchmarks.glue_dir)] for split in ("train", "dev")}
    floor = 100.0 * majority_baseline("RTE", np.array(labels["train"]), np.array(labels["dev"]))
    assert pre["majority_baseline"] == base["majority_baseline"] == pytest.approx(floor) == gain["majority_baseline"]
    for arm, runs, entry in (("pretrained", result["runs"]["RTE"], pre),
                             ("baseline", result["baselines"]["random_init"]["runs"]["RTE"], base)):
        one_class = [r["metrics"]["splits"]["dev"]["majority_share"] == 100.0 for r in runs]
        assert entry["single_class_runs"] == gain["single_class_runs"][arm] == sum(one_class)
        for r, flag in zip(runs, one_class):  # a one-class run scores its class's constant predictor
            if flag:
                assert r["metrics"]["score"] in (pytest.approx(floor), pytest.approx(100.0 - floor))

    rep = str(tmp_path / "report")
    summary = report_lib.write_report(rep, sample_config(), {"glue": result}, None, None, None, None)
    assert summary["baselines"]["random_init"]["RTE"] == gain
    assert summary["init_check"]["glue/pretrained"]["max_abs_diff"] == 0.0
    with open(os.path.join(rep, "results.json"), encoding="utf-8") as f:
        res = json.load(f)
    assert res["summary"]["baselines"]["random_init"]["RTE"]["gain_median"] == gain["gain_median"]
    assert res["results"]["glue"]["baselines"]["random_init"]["tasks"]["RTE"]["run_scores"] == base["run_scores"]
    md = open(os.path.join(rep, "report.md"), encoding="utf-8").read()
    assert "## Gain over no pretraining" in md
    p, b = gain["pretrained"], gain["baseline"]
    row = (f"| RTE | random_init | {p['median']:.1f} [{p['min']:.1f} – {p['max']:.1f}] | "
           f"{b['median']:.1f} [{b['min']:.1f} – {b['max']:.1f}] | {gain['gain_median']:+.1f} |")
    assert row in md
    one = gain["single_class_runs"]
    assert f"| {floor:.1f} | {one['pretrained']} / {one['baseline']} |" in md
    assert "| glue | pretrained | 3 | 25 |" in md and "| glue | random_init | 3 | 25 |" in md


def test_compare_arms_by_hand():
    pre = {"SST-2": {"run_scores": [80.0, 84.0, 82.0]}, "RTE": {"run_scores": [55.0, 50.0, 60.0]}}
    base = {"SST-2": {"run_scores": [60.0, 70.0, 65.0]}, "RTE": {"run_scores": [52.0, 58.0, None]}}
    g = compare_arms(pre, base)
    sst = g["SST-2"]
    assert sst["pretrained"] == {"median": 82.0, "min": 80.0, "max": 84.0, "n": 3}
    assert sst["gain_median"] == 82.0 - 65.0 and sst["beyond_spread"] is True
    assert sst["gain_paired"] == {"median": 17.0, "min": 14.0, "max": 20.0, "n": 3}  # 20, 14, 17
    rte = g["RTE"]  # a NaN/None seed is left out of its arm and of the pairs
    assert rte["baseline"]["n"] == 2 and rte["gain_median"] == 55.0 - 55.0 and rte["beyond_spread"] is False
    assert rte["gain_paired"]["n"] == 2


def test_baselines_setting_reaches_only_benchmark_nodes_and_is_validated():
    base = build_config("sample", overrides=["benchmarks.baselines=[]"]).node_parameters()
    new = build_config("sample", overrides=["benchmarks.baselines=random_init"]).node_parameters()
    assert {n for n in base if base[n] != new[n]} == {"GlueBenchmark", "SquadBenchmark", "RaceBenchmark"}
    assert base["RaceBenchmark"]["config"]["baselines"] == []
    assert new["RaceBenchmark"]["config"]["baselines"] == ["random_init"]
    assert build_config("sample").node_parameters() == new  # the sample preset runs the random_init arm
    with pytest.raises(ConfigError, match="benchmarks.baselines"):
        build_config("sample", overrides=["benchmarks.baselines=imagenet"])
