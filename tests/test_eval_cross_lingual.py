"""Cross-lingual tasks by spec (components/evaluation/glue/task_spec.py: ``languages``, ``train_language``,
``language_column``): PAWS-X's layout (a folder per language) and XNLI's (one file, a column of languages) read per
language; the bundled PAWS-X-format rows (data/sample/glue/PAWS-X, written for the project); bad specs refused with
one line naming the setting; and one real fine-tuning of a tiny ALBERT, in English, scored on six languages' dev sets:
one result per language and their mean, the report's rows and the card's results (huggingface_hub's parser)."""
import csv
import json
import math
import os
from pathlib import Path

import pytest
import yaml

from components.evaluation.glue.task_spec import ClassificationSpec
from components.evaluation.glue.task_spec_reader import read_task
from config.errors import InputError
from config.schema import ConfigError
from pipeline.settings.configs import SAMPLE_DATA, build_config

REPO = Path(__file__).resolve().parent.parent
SAMPLE_YAML = REPO / "data" / "sample" / "cross-lingual.yaml"
PAWS_X = yaml.safe_load(SAMPLE_YAML.read_text(encoding="utf-8"))["benchmarks"]["tasks"]["PAWS-X"]
LANGUAGES = ["en", "de", "fr", "zh", "ja", "ko"]


def test_the_bundled_paws_x_rows_are_balanced_parallel_and_in_paws_xs_format():
    root = Path(SAMPLE_DATA) / "glue" / "PAWS-X"
    spec = ClassificationSpec.from_dict("PAWS-X", PAWS_X)
    assert spec.languages == tuple(LANGUAGES) and spec.train_language == "en"
    assert spec.language_splits("dev") == tuple(f"dev.{c}" for c in LANGUAGES)
    train = read_task(spec, "train", str(root.parent))
    assert len(train) == 32 and sorted(e.label for e in train).count("1") == 16
    labels = None
    for code in LANGUAGES:
        with open(root / code / "dev_2k.tsv", encoding="utf-8", newline="") as f:
            rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
        assert rows[0] == ["id", "sentence1", "sentence2", "label"] and len(rows) == 17
        dev = read_task(spec, f"dev.{code}", str(root.parent))
        assert [e.guid for e in dev] == [f"dev.{code}-{i}" for i in range(1, 17)]
        # the same 16 pairs in every language (ids and labels equal), 8 paraphrases and 8 not
        assert labels is None or [e.label for e in dev] == labels
        labels = [e.label for e in dev]
        assert labels.count("1") == labels.count("0") == 8
    assert read_task(spec, "dev.ko", str(root.parent))[1].text_a == "콘서트가 끝난 후 선생님은 학생에게 감사했다."


def test_xnli_layout_one_file_with_a_column_of_languages(tmp_path):
    """XNLI's dev file: a ``language`` column, MNLI's labels; the training file (MNLI's, GLUE's layout) has no such
    column, so all of it is the training language's."""
    folder = tmp_path / "XNLI"
    folder.mkdir()
    (folder / "train.tsv").write_text("index\tsentence1\tsentence2\tgold_label\n"
                                      "0\tA man sleeps.\tA man is awake.\tcontradiction\n"
                                      "1\tA dog runs.\tAn animal moves.\tentailment\n", encoding="utf-8")
    (folder / "xnli.dev.tsv").write_text(
        "language\tgold_label\tsentence1\tsentence2\tpairID\n"
        "en\tneutral\tShe reads.\tShe reads a novel.\t1\n"
        "de\tneutral\tSie liest.\tSie liest einen Roman.\t1\n"
        "fr\tentailment\tElle lit un roman.\tElle lit.\t2\n"
        "de\tcontradiction\tEr schläft.\tEr ist wach.\t3\n", encoding="utf-8")
    spec = ClassificationSpec.from_dict("XNLI", {
        "format": "tsv", "files": {"train": "train.tsv", "dev": "xnli.dev.tsv"}, "text_a": "sentence1",
        "text_b": "sentence2", "label": "gold_label", "labels": ["contradiction", "entailment", "neutral"],
        "id": "pairID", "languages": ["de", "en", "fr"], "train_language": "en", "language_column": "language"})
    assert spec.language_splits("dev") == ("dev.en", "dev.de", "dev.fr")  # the training language's first
    assert [e.label for e in read_task(spec, "train", str(tmp_path))] == ["contradiction", "entailment"]
    dev = {code: read_task(spec, f"dev.{code}", str(tmp_path)) for code in ("en", "de", "fr")}
    assert {c: [(e.guid, e.text_a, e.label) for e in ex] for c, ex in dev.items()} == {
        "en": [("dev.en-1", "She reads.", "neutral")],
        "de": [("dev.de-1", "Sie liest.", "neutral"), ("dev.de-3", "Er schläft.", "contradiction")],
        "fr": [("dev.fr-2", "Elle lit un roman.", "entailment")]}
    # A dev file without the column cannot say which rows are whose.
    (folder / "xnli.dev.tsv").write_text("gold_label\tsentence1\tsentence2\tpairID\nneutral\ta\tb\t1\n",
                                         encoding="utf-8")
    with pytest.raises(InputError) as caught:
        read_task(spec, "dev.de", str(tmp_path))
    assert str(caught.value) == (f"{folder / 'xnli.dev.tsv'}:1: no column 'language' in the header "
                                 "['gold_label', 'sentence1', 'sentence2', 'pairID'] "
                                 "(benchmarks.tasks.XNLI.language_column)")


@pytest.mark.parametrize("change,message", [
    ({"languages": ["en"]}, "config benchmarks.tasks.PAWS-X.languages=['en'] is invalid: expected two or more "
                            "ISO 639-1 codes (a task of one language leaves benchmarks.tasks.PAWS-X.languages out)"),
    ({"languages": ["en", "xx"]}, "config benchmarks.tasks.PAWS-X.languages='xx' is invalid: expected an ISO 639-1 "
                                  "code in lower case (en, zh, ja, ko, ar, hi, ...)"),
    ({"train_language": "es"}, "config benchmarks.tasks.PAWS-X.train_language='es' is not one of "
                               "benchmarks.tasks.PAWS-X.languages (en, de, fr, zh, ja, ko): the training language's "
                               "dev set chooses the checkpoints"),
    ({"files": {"train": "{language}/train.tsv", "dev": "dev.tsv"}},
     "config benchmarks.tasks.PAWS-X.files.dev='dev.tsv' is one file for every language: put {language} in its "
     "name, or set benchmarks.tasks.PAWS-X.language_column (the column naming each row's language, as XNLI's)"),
    ({"languages": None, "train_language": None},
     "config benchmarks.tasks.PAWS-X.files.train='{language}/train.tsv' names {language}, but "
     "benchmarks.tasks.PAWS-X.languages is not set"),
])
def test_a_bad_cross_lingual_spec_is_one_line_naming_the_setting(change, message):
    data = {k: v for k, v in {**PAWS_X, **change}.items() if v is not None}
    with pytest.raises(ConfigError) as caught:
        ClassificationSpec.from_dict("PAWS-X", data)
    assert str(caught.value) == message


def test_the_sample_config_for_the_cross_lingual_task_validates_and_leaves_the_other_tasks_alone():
    sample = build_config("sample").benchmarks.node_settings("glue", 12345)
    config = build_config("sample", str(SAMPLE_YAML)).benchmarks.node_settings("glue", 12345)
    assert config["glue_tasks"] == sample["glue_tasks"] + ["PAWS-X"] and config["tasks"] == {"PAWS-X": PAWS_X}
    assert {k: v for k, v in config["hparams"].items() if k != "PAWS-X"} == sample["hparams"]


@pytest.mark.slow
def test_fine_tuned_once_in_english_scored_in_six_languages(tmp_path):
    """A tiny untrained ALBERT fine-tuned 2 steps on the English rows, scored on each language's dev set: one
    result per language (the numbers are what the prediction files score), their mean under the task's name; the
    report's cross-lingual rows; the card's results, one per language, read by huggingface_hub's parser."""
    import components  # noqa: F401  (TF_USE_LEGACY_KERAS before TF)
    from components.evaluation.glue.glue_data import GlueExample  # noqa: F401
    from components.evaluation.run_benchmark import run_benchmark
    from components.release import model_card
    from components.release.blessing import task_scores
    from components.report import report_lib
    from pipeline.settings.configs import FinetuneHParams
    from tests.conftest import export_untrained_albert, tiny_benchmark_config

    albert = export_untrained_albert(str(tmp_path / "albert"), seed=0)
    glue_dir = os.path.join(SAMPLE_DATA, "glue")
    cfg = tiny_benchmark_config(2, 8, 48, glue_dir=glue_dir, glue_tasks=["PAWS-X"], tasks={"PAWS-X": PAWS_X})
    cfg.benchmarks.hparams["PAWS-X"] = FinetuneHParams(1e-3, 8, 0.0, 0.1, train_steps=2, warmup_steps=1,
                                                       max_seq_length=48)
    out = tmp_path / "out"
    result = run_benchmark("glue", albert, glue_dir, cfg, str(out))

    names = [f"PAWS-X-{c}" for c in LANGUAGES]
    assert list(result["tasks"]) == names + ["PAWS-X"] and result["skipped"] == {}
    assert result["protocol"]["selection_metrics"] == {"PAWS-X": "accuracy"}
    spec = ClassificationSpec.from_dict("PAWS-X", PAWS_X)
    for code, name in zip(LANGUAGES, names):
        entry = result["tasks"][name]
        assert entry["cross_lingual"] == {"task": "PAWS-X", "language": code, "train_language": "en"}
        assert (entry["num_train"], entry["num_dev"]) == (32, 16)
        # the reported accuracy is that of the predictions the run wrote for this language's dev set
        lines = (out / entry["predictions"]).read_text(encoding="utf-8").splitlines()[1:]
        gold = [e.label for e in read_task(spec, f"dev.{code}", glue_dir)]
        assert entry["accuracy"] == 100 * sum(line.split("\t")[1] == g for line, g in zip(lines, gold)) / 16
    mean = result["tasks"]["PAWS-X"]
    assert math.isclose(mean["score"], sum(result["tasks"][n]["score"] for n in names) / 6)
    assert (mean["languages"], mean["train_language"], mean["language_results"], mean["num_dev"]) == (
        LANGUAGES, "en", names, 96)
    assert mean["run_scores"] == [mean["score"]]

    results = {"results": {"glue": json.loads(json.dumps(result))}}
    report_lib.write_report(str(tmp_path / "report"), None, results["results"], None, None, None, None)
    md = (tmp_path / "report" / "report.md").read_text(encoding="utf-8")
    assert "## Cross-lingual (dev)" in md and f"| PAWS-X | en (fine-tuned in) | " in md
    assert f"| PAWS-X | mean of 6 | {mean['accuracy']:.1f} |" in md

    scores = task_scores(results)
    facts = {"license": "apache-2.0", "name": "albert-tfx-sample", "language": "en", "corpus": {"sources": {}},
             "benchmarks": {"scores": scores, "metrics": {t: "" for t in scores},
                            "tasks": model_card.task_records(results)}}
    from benchmarks import hf_packages

    hf_packages.use()
    hub = pytest.importorskip("huggingface_hub", reason="the test-only Hugging Face packages are not installed")
    card = hub.ModelCard(model_card.front_matter(facts))
    assert [(r.dataset_type, r.dataset_config, r.dataset_name, r.metric_type, r.metric_value)
            for r in card.data.eval_results] == [
        ("paws-x", code, f"PAWS-X ({code})", "accuracy", result["tasks"][f"PAWS-X-{code}"]["accuracy"])
        for code in sorted(LANGUAGES)]
