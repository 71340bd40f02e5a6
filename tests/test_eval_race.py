"""RACE reader (bundled sample always, full dev/test when staged), featurization, metrics, scoring."""
import json
from pathlib import Path

import numpy as np
import pytest

from components.evaluation.race import race_data as R
from components.evaluation.score import score

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "data" / "sample" / "race"
SPM_MODEL = REPO / "data" / "sample" / "vocab" / "30k-clean.model"


@pytest.fixture(scope="module")
def tokenizer():
    if not SPM_MODEL.exists():
        pytest.skip(f"{SPM_MODEL} not present")
    from components.text.tokenization import AlbertTokenizer
    return AlbertTokenizer(str(SPM_MODEL))


def _count_questions(split_dir):
    return sum(len(json.loads(p.read_text(encoding="utf-8"))["questions"]) for p in split_dir.glob("*/*.txt"))


@pytest.mark.parametrize("split", ["train", "dev"])
def test_read_sample(split):
    examples = R.read_race(str(SAMPLE), split)
    assert len(examples) == _count_questions(SAMPLE / split) > 0
    assert {e.level for e in examples} == {"middle", "high"}
    levels = [e.level for e in examples]
    assert levels == sorted(levels, key=["middle", "high"].index)  # middle first
    assert len({e.example_id for e in examples}) == len(examples)
    for e in examples:
        assert len(e.options) == 4 and e.label in (0, 1, 2, 3) and e.article and e.question
    # The split folder itself works too.
    assert len(R.read_race(str(SAMPLE / split))) == len(examples)


def test_example_ids_and_labels(tmp_path):
    obj = {"id": "middle42.txt", "article": "Tom has a red bike.", "questions": ["Tom's bike is _ .", "Who?"],
           "options": [["red", "blue", "green", "black"], ["Tom", "Ann", "Bob", "Sue"]], "answers": ["A", "A"]}
    d = tmp_path / "dev" / "middle"
    d.mkdir(parents=True)
    (d / "42.txt").write_text(json.dumps(obj))
    examples = R.read_race(str(tmp_path), "dev")
    assert [e.example_id for e in examples] == ["middle42.txt-0", "middle42.txt-1"]
    assert [e.label for e in examples] == [0, 0] and examples[0].level == "middle"


@pytest.mark.parametrize("broken,match", [
    ({"options": None}, "missing field.*options"),
    ({"answers": None}, "missing field.*answers"),
    ({"options": [["a", "b", "c"]]}, "3 options, expected 4"),
    ({"answers": ["E"]}, "answer 'E'"),
    ({"questions": ["q1", "q2"]}, "2 questions but 1 option lists"),
])
def test_read_errors_name_the_file(tmp_path, broken, match):
    obj = {"id": "high7.txt", "article": "Text.", "questions": ["q1"], "options": [["a", "b", "c", "d"]],
           "answers": ["B"]}
    for k, v in broken.items():
        if v is None:
            obj.pop(k)
        else:
            obj[k] = v
    path = tmp_path / "test" / "high" / "7.txt"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(obj))
    with pytest.raises(R.RaceFormatError, match=rf"7\.txt: .*{match}"):
        R.read_race(str(tmp_path), "test")


def _ex(article, question, options, label=1):
    return R.RaceExample("x-0", "high", article, question, tuple(options), label)


def test_convert_layout(tokenizer):
    ex = _ex("Tom has a red bike. He rides it to school.", "Tom's bike is _ .", ["red", "blue", "old", "new"])
    out = R.convert_race_examples([ex], tokenizer, max_seq_length=40, max_qa_length=16)
    assert out["input_ids"].shape == (1, 4, 40) and out["label_ids"].tolist() == [1]
    assert all(v.dtype == np.int32 for v in out.values())
    art = tokenizer.encode(ex.article)
    for j, option in enumerate(ex.options):
        qa = tokenizer.encode(f"Tom's bike is {option} .")  # "_" replaced by the option
        want = [tokenizer.cls_id] + art + [tokenizer.sep_id] + qa + [tokenizer.sep_id]
        row = out["input_ids"][0, j].tolist()
        assert row[: len(want)] == want and not any(row[len(want):])
        assert out["segment_ids"][0, j].tolist() == [0] * (len(art) + 2) + [1] * (len(qa) + 1) + [0] * (40 - len(want))
        assert out["input_mask"][0, j].sum() == len(want)
    # Without "_" the option is appended to the question.
    ex2 = _ex("Short.", "What colour is it?", ["red", "blue", "old", "new"], None)
    out2 = R.convert_race_examples([ex2], tokenizer, max_seq_length=40)
    qa = tokenizer.encode("What colour is it? blue")
    row = out2["input_ids"][0, 1].tolist()
    assert row[len(tokenizer.encode("Short.")) + 2:][: len(qa)] == qa
    assert out2["label_ids"].tolist() == [-1]


def test_truncation_keeps_last_qa_tokens_and_cuts_article(tokenizer):
    article = " ".join(f"word{i}" for i in range(200))
    question = " ".join(f"q{i}" for i in range(50)) + " which one?"
    ex = _ex(article, question, ["alpha", "beta", "gamma", "delta"])
    L, Q = 64, 12
    out = R.convert_race_examples([ex], tokenizer, max_seq_length=L, max_qa_length=Q)
    qa = tokenizer.encode(question + " beta")[-Q:]
    row = out["input_ids"][0, 1].tolist()
    assert out["input_mask"][0, 1].sum() == L  # full row
    assert row[-Q - 1:] == qa + [tokenizer.sep_id]
    art = tokenizer.encode(article)[: L - 3 - Q]
    assert row[: len(art) + 2] == [tokenizer.cls_id] + art + [tokenizer.sep_id]
    capped = R.convert_race_examples([ex], tokenizer, max_seq_length=16, max_qa_length=64)
    assert capped["input_ids"][0, 1].tolist() == ([tokenizer.cls_id, tokenizer.sep_id]
                                                  + tokenizer.encode(question + " beta")[-13:] + [tokenizer.sep_id])
    with pytest.raises(ValueError):
        R.convert_race_examples([ex], tokenizer, max_seq_length=3)


def test_metrics_and_score(tmp_path):
    m = R.race_metrics(np.array([0, 1, 2, 3]), np.array([0, 1, 0, 0]), np.array(["middle", "middle", "high", "high"]))
    assert (m["middle"], m["high"], m["all"]) == (1.0, 0.0, 0.5)
    logits = np.eye(4)[[0, 1, 2, 3]]
    assert R.race_metrics(logits, [0, 1, 2, 0], ["high"] * 4)["all"] == 0.75
    only_high = R.race_metrics([0], [0], ["high"])
    assert np.isnan(only_high["middle"]) and only_high["n_middle"] == 0

    examples = R.read_race(str(SAMPLE), "dev")
    preds = {e.example_id: R.ANSWER_LETTERS[e.label] for e in examples}
    wrong = examples[0]
    preds[wrong.example_id] = R.ANSWER_LETTERS[(wrong.label + 1) % 4]
    (tmp_path / "pred.json").write_text(json.dumps(preds))
    result = score("race", str(SAMPLE / "dev"), str(tmp_path / "pred.json"))
    assert result["all"] == pytest.approx(1 - 1 / len(examples))
    assert result["high"] == 1.0 and result["n_all"] == len(examples)
    del preds[wrong.example_id]
    (tmp_path / "pred.json").write_text(json.dumps(preds))
    with pytest.raises(ValueError, match="no prediction for 1 "):
        score("race", str(SAMPLE / "dev"), str(tmp_path / "pred.json"))


@pytest.mark.parametrize("split,count,middle", [("dev", 4887, 1436), ("test", 4934, 1436)])
def test_full_race_counts(split, count, middle, shared_data):
    FULL = shared_data("race", "RACE")
    examples = R.read_race(str(FULL), split)
    assert len(examples) == count
    assert sum(e.level == "middle" for e in examples) == middle
