"""GLUE registry, readers (bundled samples always, full files when staged), featurization, submissions."""
from pathlib import Path

import numpy as np
import pytest

from components.evaluation.glue import glue_data as G
from components.evaluation.score import score

REPO = Path(__file__).resolve().parents[1]
SAMPLE_GLUE = REPO / "data" / "sample" / "glue"
SPM_MODEL = REPO / "data" / "sample" / "vocab" / "30k-clean.model"


@pytest.fixture(scope="module")
def tokenizer():
    if not SPM_MODEL.exists():
        pytest.skip(f"{SPM_MODEL} not present")
    from components.text.tokenization import AlbertTokenizer
    return AlbertTokenizer(str(SPM_MODEL))


def test_registry_has_all_nine_tasks():
    assert set(G.GLUE_TASKS) == {"CoLA", "SST-2", "MRPC", "STS-B", "QQP", "MNLI", "QNLI", "RTE", "WNLI"}
    assert G.get_task("MNLI").labels == ("contradiction", "entailment", "neutral")
    assert set(G.get_task("MNLI").splits) >= {"dev_matched", "dev_mismatched", "test_matched", "test_mismatched"}
    assert G.get_task("sts-b").is_regression and G.get_task("STS-B").num_labels == 1
    assert G.get_task("RTE").labels == ("entailment", "not_entailment")
    assert not G.get_task("CoLA").splits["dev"].header and G.get_task("CoLA").splits["test"].header
    assert G.submission_filename("MNLI", "test_mismatched") == "MNLI-mm.tsv"
    assert G.submission_filename("CoLA") == "CoLA.tsv"
    with pytest.raises(ValueError, match="unknown GLUE task"):
        G.get_task("SQuAD")
    with pytest.raises(ValueError, match="no split"):
        G.read_glue("RTE", "dev_matched", str(SAMPLE_GLUE))


@pytest.mark.parametrize("task,n_train,n_dev", [("CoLA", 200, 100), ("SST-2", 200, 100),
                                                ("MRPC", 200, 100), ("RTE", 200, 100)])
def test_read_bundled_samples(task, n_train, n_dev):
    train = G.read_glue(task, "train", str(SAMPLE_GLUE))
    dev = G.read_glue(task, "dev", str(SAMPLE_GLUE))
    assert (len(train), len(dev)) == (n_train, n_dev)
    t = G.get_task(task)
    for ex in train + dev:
        assert ex.label in t.labels and ex.text_a
        assert (ex.text_b is None) == (task in ("CoLA", "SST-2"))
    assert dev[0].guid.startswith("dev-")
    assert len({e.guid for e in dev}) == len(dev)


def test_read_sample_first_rows():
    cola = G.read_glue("CoLA", "dev", str(SAMPLE_GLUE))
    assert cola[0] == G.GlueExample("dev-0", "The sailors rode the breeze clear of the rocks.", None, "1")
    mrpc = G.read_glue("MRPC", "dev", str(SAMPLE_GLUE / "MRPC"))  # the task folder itself works too
    assert mrpc[0].label == "1"  # BOM-prefixed header skipped
    assert mrpc[0].text_b.startswith('"The foodservice pie business')  # unbalanced quote kept (QUOTE_NONE)


def _write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_read_errors_name_file_and_line(tmp_path):
    f = _write(tmp_path / "RTE" / "dev.tsv",
               "index\tsentence1\tsentence2\tlabel\n0\ta\tb\tentailment\n1\tonly two\tcolumns\n")
    with pytest.raises(ValueError, match=r"dev\.tsv:3: .*3 tab-separated columns"):
        G.read_glue("RTE", "dev", str(tmp_path))
    _write(f, "index\tsentence1\tsentence2\tlabel\n0\ta\tb\tentailment\n1\tc\td\tcontradiction\n")
    with pytest.raises(ValueError, match=r"dev\.tsv:3: .*label 'contradiction'"):
        G.read_glue("RTE", "dev", str(tmp_path))
    _write(tmp_path / "STS-B" / "dev.tsv",
           "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\tscore\n"
           "0\tg\tf\ty\to\ts\ts\tA man.\tA guy.\tfive\n")
    with pytest.raises(ValueError, match=r"dev\.tsv:2: .*score 'five'"):
        G.read_glue("STS-B", "dev", str(tmp_path))


def test_quote_none_and_mnli_layout(tmp_path):
    # A lone double quote must not swallow the following lines (it would with csv's default quoting).
    _write(tmp_path / "SST-2" / "dev.tsv", 'sentence\tlabel\n" a quote starts here\t1\nsecond line\t0\n')
    ex = G.read_glue("SST-2", "dev", str(tmp_path))
    assert [(e.text_a, e.label) for e in ex] == [('" a quote starts here', "1"), ("second line", "0")]
    header = "\t".join(["index", "promptID", "pairID", "genre", "s1bp", "s2bp", "s1p", "s2p", "sentence1",
                        "sentence2", "label1", "label2", "label3", "label4", "label5", "gold_label"])
    row = "\t".join(["7", "p", "q", "fiction", "x", "x", "x", "x", "The cat sat.", "A cat sat.",
                     "entailment", "entailment", "neutral", "entailment", "entailment", "entailment"])
    _write(tmp_path / "MNLI" / "dev_matched.tsv", header + "\n" + row + "\n")
    (ex,) = G.read_glue("MNLI", "dev_matched", str(tmp_path))
    assert ex == G.GlueExample("dev_matched-7", "The cat sat.", "A cat sat.", "entailment")


def test_convert_layout_and_labels(tokenizer):
    examples = [G.GlueExample("dev-0", "The cat sat on the mat.", "A cat was sitting.", "entailment"),
                G.GlueExample("dev-1", "Short.", "Also short.", "not_entailment"),
                G.GlueExample("test-2", "Unlabeled one.", "Yes.", None)]
    out = G.convert_glue_examples(examples, tokenizer, 32, "RTE")
    for k in ("input_ids", "input_mask", "segment_ids"):
        assert out[k].shape == (3, 32) and out[k].dtype == np.int32
    np.testing.assert_array_equal(out["label_ids"], [0, 1, -1])
    assert out["label_ids"].dtype == np.int32
    a, b = tokenizer.encode(examples[0].text_a), tokenizer.encode(examples[0].text_b)
    want = [tokenizer.cls_id] + a + [tokenizer.sep_id] + b + [tokenizer.sep_id]
    n = len(want)
    assert out["input_ids"][0, :n].tolist() == want and not out["input_ids"][0, n:].any()
    assert out["input_mask"][0].tolist() == [1] * n + [0] * (32 - n)
    assert out["segment_ids"][0].tolist() == [0] * (len(a) + 2) + [1] * (len(b) + 1) + [0] * (32 - n)

    single = G.convert_glue_examples([G.GlueExample("d-0", "hello world", None, "1")], tokenizer, 8, "SST-2")
    assert single["input_ids"][0].tolist()[:4] == [tokenizer.cls_id] + tokenizer.encode("hello world") + [tokenizer.sep_id]
    assert not single["segment_ids"].any()

    stsb = G.convert_glue_examples([G.GlueExample("d-0", "a b", "c d", "3.800"),
                                    G.GlueExample("t-0", "a b", "c d", None)], tokenizer, 16, "STS-B")
    assert stsb["label_ids"].dtype == np.float32
    assert stsb["label_ids"][0] == pytest.approx(3.8) and np.isnan(stsb["label_ids"][1])


def test_longest_first_truncation(tokenizer):
    a, b = list(range(10)), list(range(100, 104))
    G.truncate_pair(a, b, 9)
    assert a == list(range(5)) and b == list(range(100, 104))
    a, b = list(range(6)), list(range(100, 106))
    G.truncate_pair(a, b, 7)  # equal lengths: b loses first, then alternate
    assert len(a) + len(b) == 7 and a == list(range(4)) and b == list(range(100, 103))
    long_a = "one two three four five six seven eight nine ten eleven twelve"
    out = G.convert_glue_examples([G.GlueExample("x-0", long_a, "short b", "1")], tokenizer, 12, "MRPC")
    ids = out["input_ids"][0].tolist()
    b_ids = tokenizer.encode("short b")
    assert out["input_mask"][0].sum() == 12
    assert ids[-len(b_ids) - 1:] == b_ids + [tokenizer.sep_id]  # the short side is kept whole
    assert ids[1:12 - len(b_ids) - 2] == tokenizer.encode(long_a)[: 12 - 3 - len(b_ids)]


def test_write_predictions_and_score_roundtrip(tmp_path):
    dev = G.read_glue("MRPC", "dev", str(SAMPLE_GLUE))
    labels = np.array([int(e.label) for e in dev])
    preds = labels.copy()
    preds[:10] = 1 - preds[:10]
    path = tmp_path / "MRPC.tsv"
    G.write_glue_predictions("MRPC", [e.guid for e in dev], preds, str(path))
    lines = path.read_text().splitlines()
    assert lines[0] == "index\tprediction" and lines[1] == f"0\t{preds[0]}" and len(lines) == 101
    result = score("glue", str(SAMPLE_GLUE / "MRPC" / "dev.tsv"), str(path))
    assert result["task"] == "MRPC" and result["accuracy"] == pytest.approx(0.9)
    from components.evaluation.metrics import f1_binary
    assert result["f1"] == pytest.approx(f1_binary(preds, labels))
    # Task folder + explicit task; logits rows and label strings are accepted when writing.
    G.write_glue_predictions("RTE", ["test-5", "test-6"], [np.array([0.1, 2.0]), "entailment"], str(tmp_path / "RTE.tsv"))
    assert (tmp_path / "RTE.tsv").read_text().splitlines()[1:] == ["5\tnot_entailment", "6\tentailment"]
    G.write_glue_predictions("STS-B", [0, 1], [3.25, np.array([1.5])], str(tmp_path / "STS-B.tsv"))
    assert (tmp_path / "STS-B.tsv").read_text().splitlines()[1:] == ["0\t3.250000", "1\t1.500000"]
    # A partial predictions file is an error, not a silently different score.
    _write(tmp_path / "partial.tsv", "index\tprediction\n0\t1\n")
    with pytest.raises(ValueError, match="no prediction for 99"):
        score("glue", str(SAMPLE_GLUE / "MRPC"), str(tmp_path / "partial.tsv"), task="MRPC")


FULL_COUNTS = [("CoLA", "dev", 1043), ("SST-2", "dev", 872), ("MRPC", "dev", 408), ("STS-B", "dev", 1500),
               ("RTE", "dev", 277), ("WNLI", "dev", 71), ("QNLI", "dev", 5463), ("CoLA", "train", 8551),
               ("MRPC", "train", 3668), ("RTE", "train", 2490), ("WNLI", "train", 635), ("STS-B", "train", 5749),
               ("CoLA", "test", 1063), ("SST-2", "test", 1821), ("MRPC", "test", 1725), ("STS-B", "test", 1379),
               ("QNLI", "test", 5463), ("RTE", "test", 3000), ("WNLI", "test", 146)]


@pytest.mark.parametrize("task,split,count", FULL_COUNTS)
def test_full_glue_row_counts(task, split, count, shared_data):
    FULL_GLUE = shared_data("glue_data")
    examples = G.read_glue(task, split, str(FULL_GLUE))
    assert len(examples) == count
    if split == "test":
        assert all(e.label is None for e in examples)
        assert examples[0].guid == "test-0" and examples[-1].guid == f"test-{count - 1}"
    else:
        assert all(e.label is not None for e in examples)
