"""SQuAD reader, alignment, windows, decoding and EM/F1 (hand-worked + official scripts when staged)."""
import copy
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from components.evaluation.squad.alignment import SPIECE_UNDERLINE, normalize_with_offsets, piece_char_spans
from components.evaluation.squad.decoding import (apply_null_threshold, postprocess_squad, write_null_odds,
                                                  write_squad_predictions)
from components.evaluation.squad.squad_features import convert_squad_examples
from components.evaluation.squad.reading import SquadFormatError, read_squad
from components.evaluation.squad.scoring import (best_null_threshold, exact_match, f1_score, normalize_answer,
                                                 squad_v1_metrics, squad_v2_metrics)
from components.evaluation.score import score

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "data" / "sample" / "squad" / "dev-v1.1-sample.json"
SPM_MODEL = REPO / "data" / "sample" / "vocab" / "30k-clean.model"
# Official evaluate-v1.1.py / evaluate-v2.0.py are looked for in $ALBERT_TFX_DATA_DIR/squad/eval.


@pytest.fixture(scope="module")
def tokenizer():
    if not SPM_MODEL.exists():
        pytest.skip(f"{SPM_MODEL} not present")
    from components.text.tokenization import AlbertTokenizer
    return AlbertTokenizer(str(SPM_MODEL))


def _dataset(paragraphs, title="T", version="1.1"):
    return {"version": version, "data": [{"title": title, "paragraphs": paragraphs}]}


def _qa(qid, question, answers=(), impossible=None):
    qa = {"id": qid, "question": question, "answers": list(answers)}
    if impossible is not None:
        qa["is_impossible"] = impossible
    return qa


def _ans(context, text, nth=0):
    start = -1
    for _ in range(nth + 1):
        start = context.index(text, start + 1)
    return {"text": text, "answer_start": start}


# --- metrics ------------------------------------------------------------------------------------


PURE = ("squad.reading", "squad.alignment", "squad.squad_features", "squad.decoding", "squad.scoring", "glue.glue_data",
        "glue.clue", "glue.task_spec", "glue.task_spec_reader", "metrics",
        "race.race_data", "score")


def test_pure_cores_import_neither_tensorflow_beam_nor_tfx():
    """The SQuAD stages and the other NumPy cores of components/evaluation load no framework (a fresh interpreter,
    so nothing another test imported counts)."""
    code = ("import importlib, sys\n"
            f"for name in {PURE!r}:\n"
            "    importlib.import_module('components.evaluation.' + name)\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('tensorflow', 'apache_beam', 'tfx', 'keras',"
            " 'tf_keras')))\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_normalize_answer():
    assert normalize_answer("The  Cat's hat!") == "cats hat"
    assert normalize_answer("An apple, a day.") == "apple day"
    assert normalize_answer("Theater THE  end") == "theater end"   # whole words only
    assert normalize_answer("  A  ") == ""
    assert normalize_answer("U.S.A.") == "usa"


def test_em_f1_hand_cases():
    assert exact_match("the Broncos!", "Broncos") == 1
    assert f1_score("the big red dog", "red dog") == pytest.approx(0.8)  # P 2/3, R 1
    assert f1_score("in 1990", "1990") == pytest.approx(2 / 3)
    assert f1_score("dog dog", "dog") == pytest.approx(2 / 3)            # counts are clipped
    assert f1_score("", "") == 1.0 and f1_score("", "x") == 0.0        # v2.0 rule
    assert f1_score("", "", empty_matches_empty=False) == 0.0           # v1.1 rule


def test_v1_metrics_multiple_gold_and_missing():
    ctx = "The Denver Broncos won in 1990 at the stadium."
    data = _dataset([{"context": ctx, "qas": [
        _qa("q1", "Who won?", [_ans(ctx, "Denver Broncos"), _ans(ctx, "Broncos")]),
        _qa("q2", "When?", [_ans(ctx, "1990")]),
        _qa("q3", "Where?", [_ans(ctx, "the stadium")]),
    ]}])
    out = squad_v1_metrics(data, {"q1": "the Broncos!", "q2": "in 1990"})
    assert out["exact_match"] == pytest.approx(100 / 3)
    assert out["f1"] == pytest.approx(100 * (1 + 2 / 3) / 3)
    assert out["total"] == 3 and out["missing"] == 1


def _v2_hand():
    c1 = "Paris is the capital of France."
    c2 = "The blue whale is the largest animal."
    data = _dataset([
        {"context": c1, "qas": [_qa("q1", "Capital?", [_ans(c1, "Paris")], False),
                                _qa("q2", "Capital of Mars?", [], True)]},
        {"context": c2, "qas": [_qa("q3", "Largest plant?", [], True),
                                _qa("q4", "Largest animal?", [_ans(c2, "blue whale")], False)]},
    ], version="v2.0")
    preds = {"q1": "Paris", "q2": "", "q3": "London", "q4": "whale"}
    odds = {"q1": -2.0, "q2": 3.0, "q3": 0.5, "q4": 0.8}
    return data, preds, odds


def test_v2_metrics_hand_worked():
    data, preds, odds = _v2_hand()
    out = squad_v2_metrics(data, preds, odds)
    # Threshold 1.0: only q2 (odds 3) is forced to no-answer (correct: it has none).
    assert out["exact"] == pytest.approx(50.0)
    assert out["f1"] == pytest.approx(100 * (1 + 1 + 0 + 2 / 3) / 4)
    assert (out["HasAns_exact"], out["HasAns_total"]) == (pytest.approx(50.0), 2)
    assert out["HasAns_f1"] == pytest.approx(100 * (1 + 2 / 3) / 2)
    assert (out["NoAns_exact"], out["NoAns_f1"], out["NoAns_total"]) == (50.0, 50.0, 2)  # q3 answered "London"
    # Sweep: answering only q1 (threshold -2) gives 3 of 4 right.
    assert (out["best_exact"], out["best_exact_thresh"]) == (pytest.approx(75.0), -2.0)
    assert (out["best_f1"], out["best_f1_thresh"]) == (pytest.approx(75.0), -2.0)
    assert best_null_threshold(data, preds, odds) == (-2.0, pytest.approx(75.0))
    assert apply_null_threshold(preds, odds, -2.0) == {"q1": "Paris", "q2": "", "q3": "", "q4": ""}
    no_odds = squad_v2_metrics(data, preds)
    assert "best_f1" not in no_odds and no_odds["NoAns_exact"] == pytest.approx(50.0)


# --- reading ------------------------------------------------------------------------------------


def test_read_sample_and_bad_answers(tmp_path):
    examples = read_squad(str(SAMPLE))
    assert len(examples) == 139
    assert {e.title for e in examples} == {"Super_Bowl_50", "Warsaw", "Normans"}
    assert all(not e.is_impossible and e.context[e.start_char:e.end_char] == e.answer_text for e in examples)
    ctx = "Alpha beta gamma."
    bad = _dataset([{"context": ctx, "qas": [_qa("ok", "q?", [_ans(ctx, "beta")]),
                                             _qa("bad-1", "q?", [{"text": "gamma", "answer_start": 2}])]}],
                   title="Greek_letters")
    with pytest.raises(SquadFormatError, match=r"Greek_letters.*bad-1.*answer_start 2"):
        read_squad(bad)
    skipped = []
    kept = read_squad(bad, on_bad_answer="skip", skipped=skipped)
    assert [e.qid for e in kept] == ["ok"] and [s[:2] for s in skipped] == [("Greek_letters", "bad-1")]
    v2 = _dataset([{"context": ctx, "qas": [_qa("n", "q?", [], True)]}])
    (ex,) = read_squad(v2)
    assert ex.is_impossible and ex.answer_text is None


def test_read_full_dev_v11(shared_data):
    examples = read_squad(shared_data("squad", "dev-v1.1.json"))
    assert len(examples) == 10570
    assert len({e.qid for e in examples}) == 10570


# --- alignment ----------------------------------------------------------------------------------


@pytest.mark.parametrize("text", [
    "  Le  CAFÉ   de Flore   opened in 1887, in PARIS.  ",
    "Ça  coûte 1,000,000, or ``quoted'' ﬁne text\twith\nnewlines ½ and ΣΟΦΟΣ.",
    "naïve résumé — Zoë's \u00a0 piñata",
])
def test_piece_spans_follow_the_tokenizer(tokenizer, text):
    pieces, spans = piece_char_spans(text, tokenizer)
    assert pieces == tokenizer.tokenize(text)
    assert spans.shape == (len(pieces), 2)
    for piece, (s, e) in zip(pieces, spans):
        visible = piece.replace(SPIECE_UNDERLINE, "")
        if visible and visible.isascii() and visible.isalnum():
            # The piece's text is its original characters, normalised (a character that expands,
            # like "½" → "1⁄2", is shared by the pieces it expands into).
            assert visible in tokenizer.normalize(text[s:e])
        assert 0 <= s <= e <= len(text)


def test_normalize_with_offsets_matches_preprocess(tokenizer):
    text = "  Ünïcode  ``x''  SPACES\t\tand İ ﬁ "
    norm, offsets = normalize_with_offsets(text)
    assert norm == tokenizer.normalize(text)
    assert len(offsets) == len(norm)
    assert text[offsets[norm.index("unicode")]] == "Ü"


def _features(tokenizer, context, answer, nth=0, **kw):
    data = _dataset([{"context": context, "qas": [_qa("q", "What is it?", [_ans(context, answer, nth)])]}])
    examples = read_squad(data)
    arrays, metas = convert_squad_examples(examples, tokenizer, is_training=True, **kw)
    return data, examples, arrays, metas


@pytest.mark.parametrize("answer", ["CAFÉ   de Flore", "PARIS", "1887", "Zoë"])
def test_answer_alignment_with_accents_case_spaces(tokenizer, answer):
    context = "  Le  CAFÉ   de Flore   opened in 1887, in PARIS by  Zoë.  "
    data, examples, arrays, metas = _features(tokenizer, context, answer, max_seq_length=64)
    assert len(metas) == 1 and arrays["is_impossible"][0] == 0
    s, e = arrays["start_positions"][0], arrays["end_positions"][0]
    assert 0 < s <= e
    got_ids = arrays["input_ids"][0, s:e + 1].tolist()
    assert got_ids == tokenizer.encode(answer)
    # Decoding the gold positions gives back the original characters (case, accents, spacing).
    L = arrays["input_ids"].shape[1]
    start, end = np.full((1, L), -5.0), np.full((1, L), -5.0)
    start[0, s], end[0, e] = 5.0, 5.0
    preds, odds = postprocess_squad(examples, metas, start, end)
    assert preds["q"] == answer
    assert odds["q"] == pytest.approx(-20.0)  # null (-10) minus best (10)


def _long_context():
    sents = [f"Sentence number {i} talks about topic {i * 7}." for i in range(40)]
    sents[33] = "The secret ingredient is Grandmother's Saffron Rice."
    return " ".join(sents)


def test_sliding_windows_and_decode(tokenizer):
    context = _long_context()
    answer = "Grandmother's Saffron Rice"
    data, examples, arrays, metas = _features(tokenizer, context, answer, max_seq_length=64, doc_stride=24,
                                              max_query_length=16)
    n = len(metas)
    assert n > 3 and arrays["input_ids"].shape == (n, 64)
    assert all(a.dtype == np.int32 for a in arrays.values())
    assert [m.window_index for m in metas] == list(range(n))
    q_len = len(tokenizer.encode("What is it?"))
    has = arrays["is_impossible"] == 0
    assert 1 <= has.sum() < n
    # Windows without the answer point at [CLS]; the others at the answer's pieces.
    assert not arrays["start_positions"][~has].any() and not arrays["end_positions"][~has].any()
    for i in np.flatnonzero(has):
        s, e = arrays["start_positions"][i], arrays["end_positions"][i]
        assert arrays["input_ids"][i, s:e + 1].tolist() == tokenizer.encode(answer)
        assert arrays["segment_ids"][i, s] == 1 and metas[i].doc_offset == q_len + 2
    # Layout: [CLS] q [SEP] doc [SEP], the windows cover the context with stride 24.
    assert arrays["input_ids"][0, 0] == tokenizer.cls_id and arrays["input_ids"][0, q_len + 1] == tokenizer.sep_id
    assert [m.doc_start for m in metas[:3]] == [0, 24, 48]
    total_pieces = len(tokenizer.tokenize(context))
    assert metas[-1].doc_start + metas[-1].doc_length == total_pieces
    # Each piece is "max context" in exactly one window.
    counts = np.zeros(total_pieces, int)
    for m in metas:
        counts[m.doc_start:m.doc_start + m.doc_length] += m.max_context
    assert (counts == 1).all()

    # Peaked logits at the gold span (in every window holding it, plus noise) decode to the gold text.
    rng = np.random.default_rng(0)
    start = rng.normal(scale=0.1, size=arrays["input_ids"].shape)
    end = rng.normal(scale=0.1, size=arrays["input_ids"].shape)
    for i in np.flatnonzero(has):
        start[i, arrays["start_positions"][i]] += 8
        end[i, arrays["end_positions"][i]] += 8
    preds, odds = postprocess_squad(examples, metas, start, end)
    assert preds["q"] == answer and odds["q"] < 0
    # max_answer_length shorter than the gold span: that span can no longer be chosen.
    short, _ = postprocess_squad(examples, metas, start, end, max_answer_length=1)
    assert short["q"] != answer


def test_unanswerable_training_rows_and_v2_decode(tokenizer):
    ctx = "The museum opened in 1901 and closed in 1999."
    data = _dataset([{"context": ctx, "qas": [_qa("a", "When did it open?", [_ans(ctx, "1901")], False),
                                              _qa("n", "Who painted it?", [], True)]}], version="v2.0")
    examples = read_squad(data)
    arrays, metas = convert_squad_examples(examples, tokenizer, max_seq_length=48, is_training=True)
    assert arrays["is_impossible"].tolist() == [0, 1]
    assert arrays["start_positions"][1] == arrays["end_positions"][1] == 0
    L = 48
    start, end = np.zeros((2, L)), np.zeros((2, L))
    start[0, arrays["start_positions"][0]] = end[0, arrays["end_positions"][0]] = 6.0
    start[1, 0] = end[1, 0] = 6.0           # [CLS] wins for the unanswerable one
    start[1, metas[1].doc_offset] = end[1, metas[1].doc_offset] = 1.0
    preds, odds = postprocess_squad(examples, metas, start, end, version_2=True)
    assert preds == {"a": "1901", "n": ""}
    assert odds["a"] == pytest.approx(0 - 12.0) and odds["n"] == pytest.approx(12.0 - 2.0)
    non_null, _ = postprocess_squad(examples, metas, start, end, version_2=False)
    assert non_null["n"] == "The"
    thresh, best_f1 = best_null_threshold(data, non_null, odds)
    assert best_f1 == pytest.approx(100.0) and odds["a"] <= thresh < odds["n"]
    assert apply_null_threshold(non_null, odds, thresh) == {"a": "1901", "n": ""}
    # Evaluation featurization: positions 0, is_impossible = the example's flag.
    eval_arrays, _ = convert_squad_examples(examples, tokenizer, max_seq_length=48, is_training=False)
    assert eval_arrays["is_impossible"].tolist() == [0, 1] and not eval_arrays["start_positions"].any()


def test_write_and_score_files(tmp_path):
    data, preds, odds = _v2_hand()
    (tmp_path / "data.json").write_text(json.dumps(data))
    write_squad_predictions(preds, str(tmp_path / "preds.json"))
    write_null_odds(odds, str(tmp_path / "odds.json"))
    assert json.loads((tmp_path / "preds.json").read_text()) == preds
    out = score("squad2", str(tmp_path / "data.json"), str(tmp_path / "preds.json"),
                na_prob_path=str(tmp_path / "odds.json"))
    assert out["best_f1"] == pytest.approx(75.0) and out["benchmark"] == "squad2"
    v1 = score("squad", str(SAMPLE), str(tmp_path / "preds.json"))
    assert v1["exact_match"] == 0.0 and v1["total"] == 139


# --- agreement with the official scripts ----------------------------------------------------------


def _mixed_predictions(examples, rng, allow_missing=True):
    preds = {}
    for e in examples:
        r = rng.random()
        if r < 0.05 and allow_missing:
            continue  # missing (v1.1 scores it 0; the v2.0 script cannot handle missing ids)
        words = (e.answer_text or "").split()
        if e.is_impossible:
            preds[e.qid] = "" if r < 0.6 else e.context.split()[int(rng.integers(len(e.context.split())))]
        elif r < 0.45:
            preds[e.qid] = e.answer_text
        elif r < 0.6:
            preds[e.qid] = "The " + e.answer_text + "."
        elif r < 0.8 and len(words) > 1:
            preds[e.qid] = " ".join(words[: len(words) // 2])
        elif r < 0.9:
            preds[e.qid] = ""
        else:
            preds[e.qid] = " ".join(e.context.split()[:3])
    return preds


def _run_official(script, *args, cwd):
    proc = subprocess.run([sys.executable, str(script), *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_agrees_with_official_scripts(tmp_path, shared_data):
    EVAL_DIR = Path(shared_data("squad", "eval"))
    shared_data("squad", "eval", "evaluate-v1.1.py"), shared_data("squad", "eval", "evaluate-v2.0.py")
    rng = np.random.default_rng(7)
    data = json.loads(SAMPLE.read_text())
    examples = read_squad(data)
    preds = _mixed_predictions(examples, rng)
    (tmp_path / "pred.json").write_text(json.dumps(preds))
    official = json.loads(_run_official(EVAL_DIR / "evaluate-v1.1.py", SAMPLE, tmp_path / "pred.json", cwd=tmp_path)
                          .strip().splitlines()[-1])
    ours = squad_v1_metrics(data, preds)
    assert ours["exact_match"] == pytest.approx(official["exact_match"], abs=1e-9)
    assert ours["f1"] == pytest.approx(official["f1"], abs=1e-9)

    # A v2-style dataset: every third question made unanswerable.
    v2 = copy.deepcopy(data)
    v2["version"] = "v2.0"
    k = 0
    for article in v2["data"]:
        for p in article["paragraphs"]:
            for qa in p["qas"]:
                qa["is_impossible"] = k % 3 == 0
                if qa["is_impossible"]:
                    qa["plausible_answers"], qa["answers"] = qa["answers"][:1], []
                k += 1
    v2_examples = read_squad(v2)
    preds2 = _mixed_predictions(v2_examples, rng, allow_missing=False)
    odds = {q: float(np.round(rng.normal(), 1)) for q in preds2}  # rounded → ties in the sweep
    for name, obj in (("v2.json", v2), ("pred2.json", preds2), ("odds.json", odds)):
        (tmp_path / name).write_text(json.dumps(obj))
    for with_odds in (True, False):
        extra = ["-n", tmp_path / "odds.json"] if with_odds else []
        _run_official(EVAL_DIR / "evaluate-v2.0.py", tmp_path / "v2.json", tmp_path / "pred2.json", *extra,
                      "-o", tmp_path / "eval.json", cwd=tmp_path)
        official = json.loads((tmp_path / "eval.json").read_text())
        ours = squad_v2_metrics(v2, preds2, odds if with_odds else None)
        ours.pop("missing", None)
        assert set(ours) == set(official)
        for key, value in official.items():
            assert ours[key] == pytest.approx(value, abs=1e-9), key
