"""The official SQuAD 2.0 model (``heads.SquadV2Model``) and its decoding/evaluation (``squad.decoding``).

Post-processing is compared with an independent, loop-for-loop NumPy restatement of google-research/albert
``squad_utils.accumulate_predictions_v2`` / ``write_predictions_v2`` / ``evaluate_v2`` (and the official v2.0
scoring functions) written below, on real featurised SQuAD questions and fixed beam outputs: same predictions,
same null odds, same best threshold, same final scores. The model is checked for shapes and masking on the
same real examples with a tiny random encoder.
"""
import collections
import copy
import re
import string

import numpy as np
import pytest

from tests.conftest import squad_v2_from_v1

from components.evaluation.squad.decoding import evaluate_squad_v2, postprocess_squad_v2
from components.evaluation.squad.squad_features import convert_squad_examples
from components.evaluation.squad.reading import read_squad

MAX_SEQ, STRIDE, MAX_QUERY, N_TOP = 96, 32, 24, 5


@pytest.fixture(scope="module")
def dev(sample_dir, tok):
    """40 real dev questions (every third made unanswerable, v2-style), in several windows each."""
    data = squad_v2_from_v1(f"{sample_dir}/squad/dev-v1.1-sample.json")
    examples = read_squad(data)[:40]
    keep = {e.qid for e in examples}
    articles = []
    for a in data["data"]:
        ps = [dict(p, qas=[q for q in p["qas"] if q["id"] in keep]) for p in a["paragraphs"]]
        ps = [p for p in ps if p["qas"]]
        if ps:
            articles.append(dict(a, paragraphs=ps))
    arrays, metas = convert_squad_examples(examples, tok, MAX_SEQ, STRIDE, MAX_QUERY, is_training=False)
    assert len(metas) > 2 * len(examples)  # several windows per question: max-context and min-over-windows matter
    return articles, examples, arrays, metas


def _fixed_outputs(arrays, metas, seed):
    """Beam outputs shaped like the model's: mostly context positions, some question/[SEP]/padding ones
    (which decoding must drop), ties in the answerability logits (threshold edge)."""
    rng = np.random.default_rng(seed)
    n, length = arrays["input_ids"].shape
    s_ix = np.zeros((n, N_TOP), np.int32)
    e_ix = np.zeros((n, N_TOP * N_TOP), np.int32)
    for r, m in enumerate(metas):
        ctx = np.arange(m.doc_offset, m.doc_offset + m.doc_length)
        pool = np.where(rng.random(length) < 0.85, rng.choice(ctx, length), rng.integers(0, length, length))
        s_ix[r] = rng.choice(np.unique(pool), N_TOP, replace=False)
        for i in range(N_TOP):
            near = (s_ix[r, i] + rng.integers(-3, 12, 40)) % length
            e_ix[r, i * N_TOP:(i + 1) * N_TOP] = rng.choice(np.unique(near), N_TOP, replace=False)
    s_lp = -np.sort(rng.exponential(1.5, (n, N_TOP)), axis=1)
    e_lp = -np.sort(rng.exponential(1.5, (n, N_TOP, N_TOP)), axis=2).reshape(n, -1)
    cls = np.round(rng.normal(0.0, 2.0, n), 1)  # one decimal: equal null odds across questions happen
    return {"start_top_log_probs": s_lp.astype(np.float32), "start_top_index": s_ix,
            "end_top_log_probs": e_lp.astype(np.float32), "end_top_index": e_ix,
            "cls_logits": cls.astype(np.float32)}


# --- the official algorithm, restated independently -------------------------------------------------------------

def _official_accumulate(result_dict, cls_dict, examples, metas, out, max_answer_length):
    features_of = collections.defaultdict(list)
    for uid, m in enumerate(metas):
        features_of[m.example_index].append(uid)
    for ex_i, _ in enumerate(examples):
        result_dict.setdefault(ex_i, {})
        score_null = 1000000
        for uid in features_of[ex_i]:
            m = metas[uid]
            result_dict[ex_i].setdefault(uid, {})
            score_null = min(score_null, float(out["cls_logits"][uid]))
            doc_offset = m.doc_offset
            max_context = {doc_offset + j: bool(m.max_context[j]) for j in range(m.doc_length)}
            for i in range(N_TOP):
                for j in range(N_TOP):
                    start_log_prob = float(out["start_top_log_probs"][uid][i])
                    start_index = int(out["start_top_index"][uid][i])
                    end_log_prob = float(out["end_top_log_probs"][uid][i * N_TOP + j])
                    end_index = int(out["end_top_index"][uid][i * N_TOP + j])
                    if start_index - doc_offset >= m.doc_length:
                        continue
                    if start_index - doc_offset < 0:
                        continue
                    if end_index - doc_offset >= m.doc_length:
                        continue
                    if not max_context.get(start_index, False):
                        continue
                    if end_index < start_index:
                        continue
                    if end_index - start_index + 1 > max_answer_length:
                        continue
                    key = (start_index - doc_offset, end_index - doc_offset)
                    result_dict[ex_i][uid].setdefault(key, []).append((start_log_prob, end_log_prob))
        cls_dict.setdefault(ex_i, []).append(score_null)


def _official_write(result_dict, cls_dict, examples, metas, n_best_size, threshold):
    features_of = collections.defaultdict(list)
    for uid, m in enumerate(metas):
        features_of[m.example_index].append(uid)
    predictions, scores_diff = {}, {}
    for ex_i, ex in enumerate(examples):
        prelim = []
        for uid in features_of[ex_i]:
            for (s, e), logprobs in result_dict[ex_i][uid].items():
                prelim.append((uid, s, e, sum(lp[0] for lp in logprobs) / len(logprobs),
                               sum(lp[1] for lp in logprobs) / len(logprobs)))
        prelim = sorted(prelim, key=lambda x: x[3] + x[4], reverse=True)
        seen, nbest = {}, []
        for uid, s, e, slp, elp in prelim:
            if len(nbest) >= n_best_size:
                break
            start_orig = int(metas[uid].char_spans[s, 0])
            end_orig = int(metas[uid].char_spans[e, 1]) - 1   # inclusive, as tok_end_to_orig_index
            text = ex.context[start_orig:end_orig + 1].strip()
            if text in seen:
                continue
            seen[text] = True
            nbest.append((text, slp, elp))
        if not nbest:
            nbest.append(("", -1e6, -1e6))
        score_diff = sum(cls_dict[ex_i]) / len(cls_dict[ex_i])
        scores_diff[ex.qid] = score_diff
        if threshold is None or score_diff < threshold:
            predictions[ex.qid] = nbest[0][0]
        else:
            predictions[ex.qid] = ""
    return predictions, scores_diff


def _norm(s):
    s = s.lower()
    s = "".join(ch for ch in s if ch not in set(string.punctuation))
    s = re.sub(re.compile(r"\b(a|an|the)\b", re.UNICODE), " ", s)
    return " ".join(s.split())


def _f1(gold, pred):
    g, p = (_norm(gold).split() if gold else []), (_norm(pred).split() if pred else [])
    if not g or not p:
        return int(g == p)
    same = sum((collections.Counter(g) & collections.Counter(p)).values())
    if same == 0:
        return 0
    prec, rec = same / len(p), same / len(g)
    return 2 * prec * rec / (prec + rec)


def _official_evaluate(articles, result_dict, cls_dict, examples, metas, n_best_size):
    has_ans = {qa["id"]: bool(qa["answers"]) for a in articles for p in a["paragraphs"] for qa in p["qas"]}

    def raw(preds):
        exact, f1 = {}, {}
        for a in articles:
            for p in a["paragraphs"]:
                for qa in p["qas"]:
                    golds = [x["text"] for x in qa["answers"] if _norm(x["text"])] or [""]
                    exact[qa["id"]] = max(int(_norm(g) == _norm(preds[qa["id"]])) for g in golds)
                    f1[qa["id"]] = max(_f1(g, preds[qa["id"]]) for g in golds)
        return exact, f1

    def thresholded(scores, na):
        return {q: (float(not has_ans[q]) if na[q] > 1.0 else s) for q, s in scores.items()}

    def best_thresh(preds, scores, na):
        cur = best = sum(1 for q in has_ans if not has_ans[q])
        thresh = 0.0
        for q in sorted(na, key=lambda k: na[k]):
            cur += scores[q] if has_ans[q] else (-1 if preds[q] else 0)
            if cur > best:
                best, thresh = cur, na[q]
        return 100.0 * best / len(scores), thresh

    preds, na = _official_write(result_dict, cls_dict, examples, metas, n_best_size, None)
    exact, f1 = raw(preds)
    best_f1, thresh = best_thresh(preds, f1, na)
    preds, na = _official_write(result_dict, cls_dict, examples, metas, n_best_size, thresh)
    exact, f1 = raw(preds)
    exact_t, f1_t = thresholded(exact, na), thresholded(f1, na)
    out = {"exact": 100.0 * sum(exact_t.values()) / len(exact_t), "f1": 100.0 * sum(f1_t.values()) / len(f1_t),
           "best_f1": best_f1, "null_threshold": thresh}
    return out, preds, na


# --- decoding and evaluation vs the restatement --------------------------------------------------------------------

@pytest.mark.parametrize("seed", [0, 1, 2])
def test_postprocessing_matches_official_algorithm(dev, seed):
    articles, examples, arrays, metas = dev
    out = _fixed_outputs(arrays, metas, seed)
    rd, cd = {}, {}
    _official_accumulate(rd, cd, examples, metas, out, max_answer_length=30)
    want_preds, want_odds = _official_write(rd, cd, examples, metas, 20, None)
    preds, odds = postprocess_squad_v2(examples, metas, out, n_best_size=20, max_answer_length=30)
    assert preds == want_preds and odds == want_odds
    assert sum(p == "" for p in preds.values()) < len(preds)  # real spans were decoded
    # A threshold answers strictly below it, as the official decoder.
    t = sorted(odds.values())[len(odds) // 2]
    want_t, _ = _official_write(rd, cd, examples, metas, 20, t)
    assert postprocess_squad_v2(examples, metas, out, 20, 30, null_threshold=t)[0] == want_t

    want_metrics, want_final, want_na = _official_evaluate(articles, rd, cd, examples, metas, 20)
    metrics, final, na = evaluate_squad_v2(articles, examples, metas, out, 20, 30)
    assert final == want_final and na == want_na
    assert metrics["null_threshold"] == want_metrics["null_threshold"]
    for key in ("exact", "f1", "best_f1"):
        assert metrics[key] == pytest.approx(want_metrics[key], abs=1e-9), key


def test_averaging_over_accumulated_evaluations(dev):
    """Several output dicts (e.g. checkpoints) are averaged per (window, span) and per question's null score,
    as the official accumulators do across calls."""
    _, examples, arrays, metas = dev
    a, b = _fixed_outputs(arrays, metas, 5), copy.deepcopy(_fixed_outputs(arrays, metas, 5))
    b["start_top_log_probs"] = b["start_top_log_probs"] - 0.25
    b["cls_logits"] = np.round(b["cls_logits"] + np.linspace(-1, 1, len(metas)), 1).astype(np.float32)
    rd, cd = {}, {}
    for out in (a, b):
        _official_accumulate(rd, cd, examples, metas, out, 30)
    want = _official_write(rd, cd, examples, metas, 20, None)
    assert postprocess_squad_v2(examples, metas, [a, b], 20, 30) == want


def test_min_over_windows_and_no_valid_span(dev):
    _, examples, arrays, metas = dev
    out = _fixed_outputs(arrays, metas, 3)
    first = [i for i, m in enumerate(metas) if m.example_index == 0]
    out["cls_logits"][first] = np.arange(len(first), dtype=np.float32) + 4.0
    out["start_top_index"][first] = 1  # question positions only: no valid candidate
    preds, odds, nbest = postprocess_squad_v2(examples, metas, out, return_nbest=True)
    assert odds[examples[0].qid] == 4.0
    assert preds[examples[0].qid] == "" and nbest[examples[0].qid] == [
        {"text": "", "start_log_prob": -1e6, "end_log_prob": -1e6}]


def test_p_mask_layout(dev, tok):
    _, examples, arrays, metas = dev
    for r in (0, 1, len(metas) - 1):
        m, p, ids = metas[r], arrays["p_mask"][r], arrays["input_ids"][r]
        n_real = int(arrays["input_mask"][r].sum())
        assert p[0] == 0 and ids[0] == tok.cls_id
        assert p[1:m.doc_offset].all() and ids[m.doc_offset - 1] == tok.sep_id       # question + [SEP]
        assert not p[m.doc_offset:m.doc_offset + m.doc_length].any()                  # context
        assert p[m.doc_offset + m.doc_length] == 1 and ids[n_real - 1] == tok.sep_id  # final [SEP]
        assert p[n_real:].all()                                                       # padding


# --- the model ----------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def v2_model():
    tf = pytest.importorskip("tensorflow")
    import components  # noqa: F401
    from components.evaluation.heads import SquadV2Model
    from trainer.modeling_albert import AlbertConfig, AlbertModel

    import tf_keras

    tf_keras.utils.set_random_seed(3)  # Python, NumPy and TF: unseeded initializers draw from them
    encoder = AlbertModel(AlbertConfig.named("albert-tiny", vocab_size=30000))
    return tf, SquadV2Model(encoder, dropout=0.0, seed=11)


def test_model_shapes_and_masking(dev, v2_model):
    tf, model = v2_model
    _, _, arrays, metas = dev
    rows = slice(0, 12)
    feats = {k: arrays[k][rows] for k in ("input_ids", "input_mask", "segment_ids", "p_mask")}
    p_mask = feats["p_mask"]
    out = {k: v.numpy() for k, v in model(feats, training=False).items()}
    n = p_mask.shape[0]
    assert out["start_top_log_probs"].shape == out["start_top_index"].shape == (n, N_TOP)
    assert out["end_top_log_probs"].shape == out["end_top_index"].shape == (n, N_TOP * N_TOP)
    assert out["cls_logits"].shape == (n,)
    # Beam positions are never question, [SEP] or padding positions; log-probs are sorted and finite.
    assert not np.take_along_axis(p_mask, out["start_top_index"], 1).any()
    assert not np.take_along_axis(p_mask, out["end_top_index"], 1).any()
    assert (np.diff(out["start_top_log_probs"], axis=1) <= 0).all() and (out["start_top_log_probs"] > -1e3).all()
    assert (out["end_top_log_probs"] > -1e3).all()

    # Training path (gold start): masked positions get ~-1e30, the rest is a distribution.
    for i in range(N_TOP):
        train_out = model(dict(feats, start_positions=out["start_top_index"][:, i]), training=True)
        start_lp, end_lp = train_out["start_log_probs"].numpy(), train_out["end_log_probs"].numpy()
        assert (start_lp[p_mask == 1] < -1e29).all() and (end_lp[p_mask == 1] < -1e29).all()
        np.testing.assert_allclose(np.exp(start_lp).sum(1), 1.0, rtol=1e-5)
        # The beam's end log-probs for start i are the top-5 of the end distribution given that start.
        top = -np.sort(-end_lp, axis=1)[:, :N_TOP]
        np.testing.assert_allclose(out["end_top_log_probs"][:, i * N_TOP:(i + 1) * N_TOP], top, rtol=1e-4, atol=1e-4)
        # The answerability logit does not depend on the end (one value per window).
        np.testing.assert_allclose(train_out["cls_logits"].numpy(), out["cls_logits"], rtol=1e-4, atol=1e-5)
    # Conditioning is real: another start gives another end distribution.
    first = out["start_top_index"][:, 0]
    other = np.where(first == metas[0].doc_offset, first + 1, metas[0].doc_offset).astype(np.int32)
    a = model(dict(feats, start_positions=first), training=True)["end_log_probs"].numpy()
    b = model(dict(feats, start_positions=other), training=True)["end_log_probs"].numpy()
    assert np.abs(a - b)[p_mask == 0].max() > 1e-3


def test_model_loss_reaches_every_head_weight(dev, v2_model, tok):
    tf, model = v2_model
    from components.evaluation.heads import squad_v2_loss

    _, examples, _, _ = dev
    tok_arrays, _ = convert_squad_examples(examples[:8], tok, MAX_SEQ, STRIDE, MAX_QUERY, is_training=True)
    batch = {k: tf.constant(v) for k, v in tok_arrays.items()}
    with tf.GradientTape() as tape:
        loss = squad_v2_loss(model(batch, training=True), batch)
    encoder_vars = {id(v) for v in model.albert.trainable_variables}
    head = [v for v in model.trainable_variables if id(v) not in encoder_vars]
    grads = tape.gradient(loss, head)
    assert np.isfinite(float(loss)) and float(loss) > 0
    # start dense (kernel, bias), end dense_0 / LayerNorm / dense_1 (2 each), answer dense_0 (2), dense_1 (no bias)
    assert len(head) == 11
    assert all(g is not None and float(tf.reduce_sum(tf.abs(g))) > 0 for g in grads)

