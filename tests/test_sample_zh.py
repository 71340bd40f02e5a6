"""The whole DAG in Chinese (issue 54): ``albert-pipeline run --preset sample-zh`` on the bundled ``data/sample-zh``
through the CLI: CorpusGen cuts the Chinese books at 。！？, VocabGen learns a WordPiece vocab.txt, datagen masks
whole words at "##", the Trainer pretrains albert-tiny, the three kinds of CLUE tasks are fine-tuned and scored
(AFQMC and TNEWS, CMRC2018, C3), and the release carries the vocab.txt and a Hugging Face folder that declares
BertTokenizer."""
import glob
import json
import os

import pytest

from tests.conftest import preset_run_in_process


pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def zh_run(tmp_path_factory):
    """``albert-pipeline run --preset sample-zh``, in this process (tests/conftest.py's ``cli_in_process``; the CLI as
    a process of its own is the shared sample run's, tests/test_cli_run.py's and tests/test_pipeline_e2e.py's)."""
    return preset_run_in_process(tmp_path_factory, "sample-zh")


def test_the_chinese_sample_runs_every_node_and_scores_clue(zh_run):
    out, summary, stderr = zh_run
    assert summary["release"]["version"] == 1 and summary["release"]["blessed"] is True
    with open(summary["report"], encoding="utf-8") as f:
        report = f.read()
    assert "## Results in the shape of the paper's Table 2: tasks beyond English" in report
    assert "| Model | AFQMC | TNEWS | CMRC2018 F1/EM | C3 | Avg |" in report
    root = out / "pipeline_root"
    (examples,) = [p for p in (root / "PretrainingDataGen" / "examples").iterdir()]
    assert sorted(os.listdir(examples / "vocab")) == ["tokenizer.json", "vocab.txt"]
    with open(examples / "vocab" / "tokenizer.json") as f:
        assert json.load(f)["kind"] == "wordpiece"
    vocab = (examples / "vocab" / "vocab.txt").read_text(encoding="utf-8").split("\n")
    assert vocab[:5] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] and "##的" in vocab


def test_the_chinese_report_and_card_file_each_task_under_its_family(zh_run):
    """The report's sections by family, and the card's model-index as huggingface_hub's parser reads it: CLUE's
    classification tasks as ``clue`` configs with accuracy, CMRC2018 as question answering with its F1 and EM, C3 as
    multiple choice; each value the one in results.json."""
    from benchmarks import hf_packages

    _, summary, _ = zh_run
    with open(summary["report"], encoding="utf-8") as f:
        headings = [line[3:].strip() for line in f if line.startswith("## ")]
    assert [h for h in headings if h.endswith("(dev)")] == ["CLUE (dev)", "Question answering (dev)",
                                                             "Multiple choice (dev)"]
    with open(os.path.join(os.path.dirname(summary["report"]), "results.json"), encoding="utf-8") as f:
        tasks = {t: m for r in json.load(f)["results"].values() for t, m in r["tasks"].items()}
    hf_packages.use()
    hub = pytest.importorskip("huggingface_hub", reason="the test-only Hugging Face packages are not installed")
    with open(os.path.join(summary["release"]["path"], "model_card.md"), encoding="utf-8") as f:
        card = hub.ModelCard(f.read())
    assert card.data.language == ["zh"]
    assert sorted((r.dataset_type, r.dataset_config, r.task_type, r.metric_type, r.metric_value)
                  for r in card.data.eval_results) == sorted([
        ("clue", "afqmc", "text-classification", "accuracy", tasks["AFQMC"]["accuracy"]),
        ("clue", "tnews", "text-classification", "accuracy", tasks["TNEWS"]["accuracy"]),
        ("clue", "cmrc2018", "question-answering", "f1", tasks["CMRC2018"]["f1"]),
        ("clue", "cmrc2018", "question-answering", "exact_match", tasks["CMRC2018"]["exact_match"]),
        ("clue", "c3", "multiple-choice", "accuracy", tasks["C3"]["all"])])


def test_every_chinese_task_model_serves_raw_text_as_the_benchmark_predicts(zh_run):
    """Issue 64: AFQMC and TNEWS (classify), CMRC2018 (answer) and C3 (choose) on the run's WordPiece vocabulary each
    have a raw-text serving model whose dev predictions are the benchmark's, row for row, and no task is left
    without one."""
    out, _, stderr = zh_run
    assert "no raw-text serving model" not in stderr
    kinds = {"AFQMC": "classify", "TNEWS": "classify", "CMRC2018": "answer", "C3": "choose"}
    seen = {}
    for path in glob.glob(str(out / "pipeline_root" / "*Benchmark" / "*" / "*" / "metrics.json")):
        with open(path, encoding="utf-8") as f:
            for task, m in json.load(f)["tasks"].items():
                assert m["serving_check"]["same_predictions"] == m["serving_check"]["rows"] == m["num_dev"], task
                with open(os.path.join(os.path.dirname(path), m["serving_info"]), encoding="utf-8") as f:
                    seen[task] = json.load(f)["kind"]
    assert seen == kinds


def test_the_chinese_samples_data_is_the_bytes_the_code_wrote_before_runs_of_several_languages(zh_run):
    """Documents, WordPiece vocabulary, examples and datagen statistics, file by file, are those commit f8c4e63 (the
    last before issue 63) wrote for the same command (tests/fixtures/fingerprints/sample_zh_outputs.json)."""
    from tests import fingerprints

    out, _, _ = zh_run
    now = fingerprints.sample_outputs(str(out / "metadata.sqlite"))
    committed = fingerprints.load("sample_zh_outputs.json")
    assert sorted(now) == sorted(committed)
    for type_name in committed:
        assert now[type_name] == committed[type_name], type_name


def test_the_chinese_release_carries_its_wordpiece_vocabulary(zh_run):
    _, summary, _ = zh_run
    release = summary["release"]["path"]
    assert sorted(os.listdir(os.path.join(release, "vocab"))) == ["tokenizer.json", "vocab.txt"]
    with open(os.path.join(release, "huggingface", "tokenizer_config.json")) as f:
        assert json.load(f)["tokenizer_class"] == "BertTokenizer"
    with open(os.path.join(release, "model_card.md"), encoding="utf-8") as f:
        head = f.read().split("---\n", 2)[1]
    assert "language:\n- zh\n" in head  # the run's language, not English's
    with open(os.path.join(release, "checkpoint", "albert_config.json")) as f:
        size = json.load(f)["vocab_size"]
    with open(os.path.join(release, "vocab", "vocab.txt"), encoding="utf-8") as f:
        assert size == sum(1 for _ in f)


ZH_TEXTS = ["中文分词测试，我们的模型。", "Debian 是一个自由的操作系统！", "ＡＢＣ１２３ 全角", "", "  空白\t\n", "混合English和数字2024年",
            "唐诗：床前明月光，疑是地上霜。", "😀 表情", "a\x00b"]
ZH_MASKED = ["床前明月[MASK]，疑是地上霜。", "没有掩码", "[MASK][MASK]是自由的操作系统"]


def test_the_chinese_version_serves_raw_text_as_its_ids_path(zh_run, tmp_path, cli):
    """TF Hub's pair of the WordPiece model, in a process that imports only tensorflow and tensorflow_text: the
    in-graph ids are BERT's FullTokenizer's, preprocess → encoder gives the ids path's pooled_output, fill_mask gives
    K tokens for a masked Chinese sentence (tests/raw_text_probe.py)."""
    from tests.raw_text_probe import TOP_K, check_version
    from tests.test_graph_tokenizer import HARD

    _, summary, _ = zh_run
    answer = check_version(summary["release"]["path"], ZH_TEXTS + HARD, ZH_MASKED, tmp_path)
    filled = answer["fill_mask"]
    assert filled["mask_count"] == [1, 0, 2]
    assert all(len(m) == TOP_K and all(m) for m in filled["tokens"][0][:1] + filled["tokens"][2])
    # `albert-pipeline predict fill-mask` on the same version: the top-k tokens of a masked Chinese sentence.
    done = cli("predict", "fill-mask", "--model", summary["release"]["path"], ZH_MASKED[0])
    assert done.returncode == 0, done.stderr[-2000:]
    (row,) = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(row["tokens"]) == 1 and len(row["tokens"][0]) == TOP_K and all(row["tokens"][0])


def test_an_official_format_chinese_checkpoint_converts_and_is_benchmarked_on_clue(zh_run, tmp_path, cli):
    """The released model written the way the official Chinese models ship (TF1 variables under the official names,
    albert_config.json, vocab_chinese.txt), then `convert tf1-to-albert`, then `run --set mode=benchmark` on it: the
    three kinds of CLUE tasks are scored and a version naming the source is pushed. Both commands run in this process
    (the ``cli`` fixture): zh_run is the real process of this file."""
    from trainer.checkpoint_interop import save_tf1_checkpoint
    from trainer.convert import load_albert_dir

    _, summary, _ = zh_run
    release = summary["release"]["path"]
    official = tmp_path / "albert_tiny_zh"
    official.mkdir()
    save_tf1_checkpoint(load_albert_dir(os.path.join(release, "checkpoint")), str(official / "model.ckpt-best"))
    with open(os.path.join(release, "vocab", "vocab.txt"), "rb") as f:
        (official / "vocab_chinese.txt").write_bytes(f.read())
    converted = tmp_path / "converted"
    done = cli("convert", "tf1-to-albert", official, converted)
    assert done.returncode == 0, done.stderr[-2000:]
    files = set(os.listdir(converted))
    assert {"tokenizer.json", "vocab.txt"} <= files and "spm.model" not in files
    # The task models' raw-text exports are zh_run's (test_every_chinese_task_model_serves_raw_text_as_the_benchmark_
    # predicts): here the conversion, the scores and the version's raw-text pair are what is checked.
    done = cli("run", "--preset", "sample-zh", "--output-dir", tmp_path / "bench", "--set", "mode=benchmark",
               "--set", f"train.init_from={converted}", "--set", "benchmarks.export_serving_model=false")
    assert done.returncode == 0, done.stderr[-3000:]
    bench = json.loads(done.stdout)
    with open(bench["report"], encoding="utf-8") as f:
        assert "| Model | AFQMC | TNEWS | CMRC2018 F1/EM | C3 | Avg |" in f.read()
    assert bench["release"]["version"] == 1
    # The converted model's version carries the raw-text pair too, and serves as the project's code computes.
    from tests.raw_text_probe import check_version

    check_version(bench["release"]["path"], ZH_TEXTS, ZH_MASKED, tmp_path)
