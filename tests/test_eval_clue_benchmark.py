"""``mode=benchmark`` on an official-format Chinese model: the benchmark drivers, in process, fine-tune a tiny ALBERT
whose folder is what ``convert tf1-to-albert`` writes for ``albert_base_zh`` (``vocab_size`` 21128, a WordPiece
``vocab.txt`` in the official layout, ``tokenizer.json`` saying WordPiece) on the CLUE fixtures
(tests/fixtures/clue): a CLUE classification task and a task described only by a spec (GLUE node), CMRC2018
(SQuAD node, CMRC2018's character-level scorer) and C3 (RACE node). Scores of random weights mean nothing: each
test checks the result's structure and that the reported numbers are the official rules applied to the prediction
files the run wrote. Known-prediction checks of the scorers are in tests/test_eval_clue.py."""
import json
import math
import os
import shutil
from pathlib import Path

import pytest

from tests.conftest import tiny_benchmark_config

import components  # noqa: F401  (TF_USE_LEGACY_KERAS before TF)

tf = pytest.importorskip("tensorflow")

from components.evaluation.glue import clue as C  # noqa: E402
from components.evaluation.metrics import glue_metrics  # noqa: E402
from components.evaluation.run_benchmark import run_benchmark  # noqa: E402
from components.evaluation.squad.cmrc2018 import cmrc2018_metrics  # noqa: E402
from config.errors import InputError, UserError  # noqa: E402
from components.evaluation.glue.task_spec import ClassificationSpec  # noqa: E402
from pipeline.settings.configs import FinetuneHParams  # noqa: E402

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "clue"
VOCAB_SIZE = 21128  # albert_base_zh's


pytestmark = pytest.mark.slow


def official_chinese_vocab():
    """A vocab.txt in the official Chinese models' layout ([PAD] 0, [unused1..99], [UNK] 100, [CLS] 101, [SEP] 102,
    [MASK] 103) holding every character of the CLUE fixtures but 志 and 愿 (which stay [UNK]), ``##`` forms of the
    non-CJK ones, then filler to 21128 tokens."""
    text = "".join(p.read_text(encoding="utf-8") for p in sorted(FIXTURES.rglob("*.json")))
    chars = sorted({c for c in text.lower() if c.isprintable() and not c.isspace() and c not in '志愿"\\'})
    tokens = ["[PAD]"] + [f"[unused{i}]" for i in range(1, 100)] + ["[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tokens += chars + [f"##{c}" for c in chars if c.isascii() and c.isalnum()]
    tokens += [f"word{i}" for i in range(VOCAB_SIZE - len(tokens))]
    return "".join(t + "\n" for t in tokens)


@pytest.fixture(scope="module")
def chinese_albert(tmp_path_factory):
    """albert-tiny with vocab_size 21128, untrained (seed 0), exported as train_lib.export writes it (as
    tests/conftest.py export_untrained_albert), with the official Chinese models' vocabulary files."""
    from trainer import train_lib
    from trainer.modeling_albert import AlbertConfig, AlbertForPreTraining

    d = str(tmp_path_factory.mktemp("albert_base_zh") / "albert")
    os.makedirs(d)
    tf.keras.utils.set_random_seed(0)
    config = AlbertConfig.named("albert-tiny", vocab_size=VOCAB_SIZE)
    model = AlbertForPreTraining(config)
    model(model.dummy_inputs(batch_size=1, seq_len=8, num_predictions=2))
    config.to_json_file(os.path.join(d, train_lib.CONFIG_FILE), official=True)
    tf.train.Checkpoint(encoder=model.albert).write(os.path.join(d, train_lib.ENCODER_CKPT))
    Path(d, "vocab.txt").write_text(official_chinese_vocab(), encoding="utf-8")
    Path(d, "tokenizer.json").write_text(json.dumps({"do_lower_case": True, "kind": "wordpiece",
                                                     "normalization": "none", "strip_accents": False}))
    return d


def _cfg(rows, seq=48, steps=4, **bench):
    """The sample config made tiny, with a fine-tuning row for each task of ``rows``."""
    cfg = tiny_benchmark_config(steps, 4, seq, **bench)
    for task in rows:
        cfg.benchmarks.hparams[task] = FinetuneHParams(1e-3, 4, 0.0, 0.1, train_steps=steps, warmup_steps=1,
                                                       max_seq_length=seq)
    return cfg


# A task described only by its spec: TSV with a header, three labels, macro-F1 (KLUE YNAT's metric) then accuracy.
TOPICS = {"format": "tsv", "files": {"train": "train.tsv", "dev": "dev.tsv"}, "text_a": "title", "label": "topic",
          "labels": ["体育", "科技", "财经"], "metrics": ["macro_f1", "accuracy"], "id": "guid"}
TOPICS_ROWS = [("t1", "球队赢了比赛", "体育"), ("t2", "新手机发布了", "科技"), ("t3", "股票价格上涨", "财经"),
               ("t4", "运动员跑步", "体育"), ("t5", "电脑软件更新", "科技"), ("t6", "银行利率下降", "财经")]


def _topics(folder: Path):
    folder.mkdir(parents=True)
    for split, rows in (("train", TOPICS_ROWS), ("dev", TOPICS_ROWS[:4])):
        lines = ["guid\ttitle\ttopic"] + ["\t".join(r) for r in rows]
        (folder / f"{split}.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_classification_clue_and_spec_tasks(chinese_albert, tmp_path):
    glue_dir = tmp_path / "data"
    shutil.copytree(FIXTURES / "AFQMC", glue_dir / "AFQMC")
    _topics(glue_dir / "TOPICS")
    # export_serving_model at its default (true): both tasks get a raw-text model through the in-graph tokenizer.
    cfg = _cfg(["AFQMC", "TOPICS"], glue_dir=str(glue_dir), glue_tasks=["AFQMC", "TOPICS"], tasks={"TOPICS": TOPICS},
               export_serving_model=True)
    out = str(tmp_path / "out")
    result = run_benchmark("glue", chinese_albert, str(glue_dir), cfg, out)

    assert set(result["tasks"]) == {"AFQMC", "TOPICS"} and result["skipped"] == {}
    pretrained = result["protocol"]["pretrained"]
    assert pretrained["vocabulary"] == os.path.join(chinese_albert, "vocab.txt") and "spm_model" not in pretrained
    assert pretrained["tokenizer"] == {"kind": "wordpiece", "do_lower_case": True, "normalization": "none",
                                       "strip_accents": False}
    assert pretrained["albert_config"]["vocab_size"] == VOCAB_SIZE
    assert result["protocol"]["selection_metrics"] == {"AFQMC": "accuracy", "TOPICS": "macro_f1"}

    afqmc, topics = result["tasks"]["AFQMC"], result["tasks"]["TOPICS"]
    assert (afqmc["num_train"], afqmc["num_dev"], topics["num_train"], topics["num_dev"]) == (4, 3, 6, 4)
    assert afqmc["score"] == afqmc["accuracy"] == afqmc["selection_score"]
    assert math.isclose(topics["score"], (topics["macro_f1"] + topics["accuracy"]) / 2)
    assert topics["selection_score"] == topics["macro_f1"]
    for name, entry, spec, pair in (("AFQMC", afqmc, C.CLUE_TASKS["AFQMC"], True),
                                     ("TOPICS", topics, ClassificationSpec.from_dict("TOPICS", TOPICS), False)):
        assert "serving_model_skipped" not in entry
        assert entry["serving_model"] == os.path.join(name, "serving_model")
        # the served labels are the benchmark's dev predictions, row for row
        assert entry["serving_check"] == {"split": "dev", "rows": entry["num_dev"],
                                          "same_predictions": entry["num_dev"]}
        info = json.loads((Path(out) / entry["serving_info"]).read_text(encoding="utf-8"))
        assert info == {"kind": "classify", "inputs": ["text_a", "text_b"] if pair else ["text_a"],
                        "outputs": ["label", "label_id", "scores"], "labels": list(spec.labels),
                        "max_seq_length": 48}
        assert not [p for p in os.listdir(Path(out) / name) if p.startswith(".serving-staging-")]
    serve = tf.saved_model.load(str(Path(out) / topics["serving_model"])).signatures["serving_default"]
    served = serve(text_a=tf.constant(["球队赢了比赛", "银行利率下降"]))
    assert served["scores"].shape == (2, 3) and served["label_id"].dtype == tf.int32
    assert [TOPICS["labels"][i] for i in served["label_id"].numpy()] == [
        x.decode() for x in served["label"].numpy()]

    # The reported numbers are the metrics of the prediction files the run wrote (label strings, dev order).
    for name, spec, examples in (("AFQMC", C.CLUE_TASKS["AFQMC"], C.read_clue("AFQMC", "dev", str(glue_dir))),
                                 ("TOPICS", ClassificationSpec.from_dict("TOPICS", TOPICS), None)):
        lines = (Path(out) / result["tasks"][name]["predictions"]).read_text(encoding="utf-8").splitlines()
        assert lines[0] == "index\tprediction"
        predicted = [spec.labels.index(line.split("\t")[1]) for line in lines[1:]]
        gold = ([spec.labels.index(e.label) for e in examples] if examples is not None
                else [spec.labels.index(r[2]) for r in TOPICS_ROWS[:4]])
        values = glue_metrics(spec, predicted, gold)
        assert {m: 100 * values[m] for m in spec.metrics} == {m: result["tasks"][name][m] for m in spec.metrics}
    # AFQMC's test file gets predictions in CLUE's submission format: JSON lines {"id", "label"}.
    submission = (Path(out) / afqmc["test_predictions"]).read_text(encoding="utf-8").splitlines()
    assert afqmc["test_predictions"] == os.path.join("predictions", "test", "afqmc_predict.json")
    assert [sorted(json.loads(line)) for line in submission] == [["id", "label"], ["id", "label"]]
    assert [json.loads(line)["id"] for line in submission] == [0, 1]


def test_cmrc2018_through_the_squad_node(chinese_albert, tmp_path):
    cfg = _cfg(["CMRC2018"], seq=64, squad_dir=str(FIXTURES / "CMRC2018"), squad_train_file="train.json",
               squad_dev_file="dev.json", squad_metric="cmrc2018", doc_stride=32, max_query_length=16)
    out = str(tmp_path / "out")
    result = run_benchmark("squad", chinese_albert, cfg.benchmarks.squad_dir, cfg, out)
    assert set(result["tasks"]) == {"CMRC2018"}
    assert result["protocol"]["squad"]["metric"] == "cmrc2018"
    assert result["protocol"]["selection_metrics"] == {"CMRC2018": "f1"}
    task = result["tasks"]["CMRC2018"]
    assert (task["num_train"], task["num_dev"], task["skipped_questions"]) == (3, 2, 0)
    assert task["predictions"] == os.path.join("predictions", "cmrc2018_predictions.json")
    predictions = json.loads((Path(out) / task["predictions"]).read_text(encoding="utf-8"))
    assert sorted(predictions) == ["DEV_1_QUERY_0", "DEV_1_QUERY_1"]
    dev = C.read_cmrc2018(str(FIXTURES / "CMRC2018"), "dev")
    for example in dev:  # each answer a span of its own context
        assert predictions[example.qid] in example.context
    rescored = cmrc2018_metrics(str(FIXTURES / "CMRC2018" / "dev.json"), predictions)
    assert (task["exact_match"], task["f1"], task["total"]) == (rescored["exact_match"], rescored["f1"], 2)
    assert math.isclose(task["score"], (task["f1"] + task["exact_match"]) / 2)


def test_c3_through_the_race_node(chinese_albert, tmp_path):
    cfg = _cfg(["C3"], seq=48, race_dir=str(FIXTURES / "C3"), race_format="c3")
    out = str(tmp_path / "out")
    result = run_benchmark("race", chinese_albert, cfg.benchmarks.race_dir, cfg, out)
    assert set(result["tasks"]) == {"C3"} and result["protocol"]["race_format"] == "c3"
    task = result["tasks"]["C3"]
    assert (task["num_train"], task["num_dev"], task["n_d"], task["n_m"], task["n_all"]) == (5, 3, 2, 1, 3)
    assert task["score"] == task["all"] == task["selection_score"] and task["selection_metric"] == "accuracy"
    predictions = json.loads((Path(out) / task["predictions"]).read_text(encoding="utf-8"))
    dev = C.read_c3(str(FIXTURES / "C3"), "dev")
    assert list(predictions) == [e.example_id for e in dev]
    accuracy = C.c3_accuracy([predictions[e.example_id] for e in dev], [e.label for e in dev],
                             [e.level for e in dev])
    assert {k: task[k] for k in ("d", "m", "all")} == {k: 100 * accuracy[k] for k in ("d", "m", "all")}


def test_a_spec_task_whose_file_lacks_a_column_fails_before_fine_tuning(chinese_albert, tmp_path):
    glue_dir = tmp_path / "data"
    _topics(glue_dir / "TOPICS")
    cfg = _cfg(["TOPICS"], glue_dir=str(glue_dir), glue_tasks=["TOPICS"], tasks={"TOPICS": {**TOPICS,
                                                                                          "text_b": "summary"}})
    with pytest.raises(InputError) as caught:
        run_benchmark("glue", chinese_albert, str(glue_dir), cfg, str(tmp_path / "out"))
    assert isinstance(caught.value, UserError)   # exit code 2 at the CLI
    assert str(caught.value) == (f"{glue_dir / 'TOPICS' / 'train.tsv'}:1: no column 'summary' in the header "
                                 "['guid', 'title', 'topic'] (benchmarks.tasks.TOPICS.text_b)")
    assert not (tmp_path / "out" / "metrics.json").exists()
