"""The official SQuAD metrics: v1.1 EM/F1, v2.0 EM/F1 with HasAns/NoAns splits and the best-threshold sweep.

Restated from the official ``evaluate-v1.1.py`` / ``evaluate-v2.0.py``; every function reads the dataset JSON
itself (:func:`components.evaluation.squad.reading.load_squad_json`), so a question the reader skipped still
counts. Scores are percentages, like the official scripts' output.
"""
from __future__ import annotations

import collections
import re
import string
from typing import Dict, Iterable, List, Optional, Tuple

from components.evaluation.squad.reading import load_squad_json

__all__ = ["normalize_answer", "exact_match", "f1_score", "squad_v1_metrics", "squad_v2_metrics",
           "best_null_threshold"]

_PUNCT = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)


def normalize_answer(s: str) -> str:
    """Lowercase, drop ASCII punctuation, replace articles a/an/the by a space, collapse spaces."""
    s = s.lower()
    s = "".join(ch for ch in s if ch not in _PUNCT)
    s = _ARTICLES.sub(" ", s)
    return " ".join(s.split())


def exact_match(prediction: str, gold: str) -> int:
    return int(normalize_answer(prediction) == normalize_answer(gold))


def f1_score(prediction: str, gold: str, empty_matches_empty: bool = True) -> float:
    """Token-overlap F1 of normalised answers. With ``empty_matches_empty`` (v2.0 rule) two empty
    answers score 1 and an empty vs non-empty pair 0; v1.1 scores any empty side 0."""
    p_toks = normalize_answer(prediction).split() if prediction else []
    g_toks = normalize_answer(gold).split() if gold else []
    if empty_matches_empty and (not p_toks or not g_toks):
        return float(p_toks == g_toks)
    common = collections.Counter(p_toks) & collections.Counter(g_toks)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision, recall = same / len(p_toks), same / len(g_toks)
    return 2 * precision * recall / (precision + recall)


def _iter_qas(articles: List[Dict]) -> Iterable[Dict]:
    for article in articles:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                yield qa


def squad_v1_metrics(dataset, predictions: Dict[str, str]) -> Dict[str, float]:
    """Official v1.1 EM/F1 (max over gold answers; unanswered questions score 0)."""
    articles = load_squad_json(dataset)
    em = f1 = 0.0
    total = missing = 0
    for qa in _iter_qas(articles):
        total += 1
        if qa["id"] not in predictions:
            missing += 1
            continue
        pred = predictions[qa["id"]]
        golds = [a["text"] for a in qa["answers"]]
        if not golds:
            continue  # an unanswerable (v2) question has no v1.1 gold answer: 0
        em += max(exact_match(pred, g) for g in golds)
        f1 += max(f1_score(pred, g, empty_matches_empty=False) for g in golds)
    if total == 0:
        return {"exact_match": float("nan"), "f1": float("nan"), "total": 0, "missing": 0}
    return {"exact_match": 100.0 * em / total, "f1": 100.0 * f1 / total, "total": total, "missing": missing}


def _v2_raw_scores(articles, predictions):
    has_ans: Dict[str, bool] = {}
    exact: Dict[str, float] = {}
    f1: Dict[str, float] = {}
    for qa in _iter_qas(articles):
        qid = qa["id"]
        has_ans[qid] = bool(qa["answers"])
        golds = [a["text"] for a in qa["answers"] if normalize_answer(a["text"])] or [""]
        if qid not in predictions:
            continue
        pred = predictions[qid]
        exact[qid] = max(exact_match(pred, g) for g in golds)
        f1[qid] = max(f1_score(pred, g) for g in golds)
    return has_ans, exact, f1


def _best_threshold(predictions, scores, na_probs, has_ans) -> Tuple[float, float]:
    """Sweep thresholds in increasing na-prob order (the official ``find_best_thresh``)."""
    score = best = float(sum(1 for v in has_ans.values() if not v))
    best_thresh = 0.0
    for qid in sorted(na_probs, key=lambda q: na_probs[q]):
        if qid not in scores:
            continue
        if has_ans[qid]:
            diff = scores[qid]
        else:
            diff = -1 if predictions[qid] else 0
        score += diff
        if score > best:
            best, best_thresh = score, na_probs[qid]
    return 100.0 * best / max(len(scores), 1), float(best_thresh)


def squad_v2_metrics(dataset, predictions: Dict[str, str], null_odds: Optional[Dict[str, float]] = None,
                     null_threshold: float = 1.0) -> Dict[str, float]:
    """Official v2.0 metrics: exact/f1/total, HasAns_* and NoAns_* splits and, when ``null_odds``
    (the na-prob file) is given, best_exact/best_f1 and their thresholds. A question whose null
    odds exceed ``null_threshold`` (the official ``--na-prob-thresh``, default 1.0) counts as
    predicted unanswerable. Missing predictions are left out of every total (as officially)."""
    articles = load_squad_json(dataset)
    has_ans, exact_raw, f1_raw = _v2_raw_scores(articles, predictions)
    na = null_odds if null_odds is not None else {q: 0.0 for q in predictions}

    def thresholded(raw):
        return {q: (float(not has_ans[q]) if na[q] > null_threshold else s) for q, s in raw.items()}

    exact_t, f1_t = thresholded(exact_raw), thresholded(f1_raw)

    def block(qids):
        qids = [q for q in qids if q in exact_t]
        n = len(qids)
        if n == 0:
            return {"exact": float("nan"), "f1": float("nan"), "total": 0}
        return {"exact": 100.0 * sum(exact_t[q] for q in qids) / n,
                "f1": 100.0 * sum(f1_t[q] for q in qids) / n, "total": n}

    out: Dict[str, float] = dict(block(list(exact_t)))
    has_qids = [q for q, v in has_ans.items() if v]
    no_qids = [q for q, v in has_ans.items() if not v]
    if has_qids:
        out.update({f"HasAns_{k}": v for k, v in block(has_qids).items()})
    if no_qids:
        out.update({f"NoAns_{k}": v for k, v in block(no_qids).items()})
    if null_odds is not None:
        out["best_exact"], out["best_exact_thresh"] = _best_threshold(predictions, exact_raw, na, has_ans)
        out["best_f1"], out["best_f1_thresh"] = _best_threshold(predictions, f1_raw, na, has_ans)
    missing = sum(1 for q in has_ans if q not in predictions)
    if missing:
        out["missing"] = missing
    return out


def best_null_threshold(dataset, predictions: Dict[str, str], null_odds: Dict[str, float]
                        ) -> Tuple[float, float]:
    """(threshold, best F1) over the dev set: answer "" when ``null_odds > threshold``.

    ``predictions`` must be the best *non-null* spans (``postprocess_squad(..., version_2=False)``).
    """
    articles = load_squad_json(dataset)
    has_ans, _, f1_raw = _v2_raw_scores(articles, predictions)
    best_f1, thresh = _best_threshold(predictions, f1_raw, null_odds, has_ans)
    return thresh, best_f1
