"""Model outputs → answer text and null odds per question, and the prediction files (the decoding stage).

**v1.1** (:func:`postprocess_squad`): raw start/end logits of the official v1 head, decoded as
``accumulate_predictions_v1`` / ``write_predictions_v1`` do; see the function.

**v2.0** (:func:`postprocess_squad_v2`, :func:`evaluate_squad_v2`): the beam outputs of
:class:`components.evaluation.heads.SquadV2Model` per window (feature row):
``start_top_log_probs`` / ``start_top_index`` [N, k_s], ``end_top_log_probs`` / ``end_top_index`` [N, k_s·k_e]
and ``cls_logits`` [N]. What ``squad_utils.accumulate_predictions_v2`` / ``write_predictions_v2`` /
``evaluate_v2`` do, restated:

* **Candidates.** For every window and beam pair (i, j): start ``s = start_top_index[i]``, end
  ``e = end_top_index[i·k_e + j]``; kept when s and e are context pieces of the window, s is "max context"
  there, s <= e and e - s + 1 <= ``max_answer_length``. Its score is the pair's log-probabilities,
  ``start_log_prob + end_log_prob``. A span is keyed by (window, s, e): windows are not merged.
* **Averaging.** Each (window, s, e) and each question's null score hold a *list* of values, one per
  accumulated evaluation; their means are used. One evaluation (the official ``get_result``) gives lists of
  length one; passing several output dicts (e.g. checkpoints) averages them as the official accumulators do.
* **Null score** of a question: the minimum over its windows of ``cls_logits`` (higher = unanswerable); this
  is the ``null_odds`` file's value.
* **Answer**: candidates sorted by score (stable, highest first), deduplicated by answer text, at most
  ``n_best_size``; the first is the best non-null answer ("" with scores -1e6 if none). It is answered when
  ``null_odds < threshold`` (no threshold: always), otherwise "".
* **Threshold on dev** (``evaluate_v2``): decode without a threshold, find the best-F1 threshold with the
  official ``find_best_thresh`` sweep, decode again with it, and score those predictions with the official
  metrics at ``na_prob_thresh`` 1.0 (both steps as officially, including the strict ``<`` of the decoder).
"""
from __future__ import annotations

import collections
import json
import os
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from components.evaluation.squad.squad_features import FeatureMeta
from components.evaluation.squad.reading import SquadExample, load_squad_json
from components.evaluation.squad.scoring import squad_v2_metrics

__all__ = ["postprocess_squad", "apply_null_threshold", "V2_OUTPUT_KEYS", "postprocess_squad_v2",
           "evaluate_squad_v2", "write_squad_predictions", "write_null_odds"]


# ---------------------------------------------------------------------------------------------
# v1.1

_NO_CANDIDATE_SCORE = -1e9  # "best non-null score" when no valid span exists (keeps JSON finite)


def postprocess_squad(examples: Sequence[SquadExample], metas: Sequence[FeatureMeta], start_logits,
                      end_logits, n_best_size: int = 20, max_answer_length: int = 30,
                      version_2: bool = False, null_threshold: float = 0.0
                      ) -> Tuple[Dict[str, str], Dict[str, float]]:
    """Best answer text per question, and its null odds.

    The official v1 decoding (``accumulate_predictions_v1`` / ``write_predictions_v1``): per window, s among
    the row's ``n_best_size`` highest start logits and e among its highest end logits (over *all* positions,
    so question or padding positions can take slots and are then dropped), kept when both are context
    pieces of the window, s <= e, e - s + 1 <= ``max_answer_length`` and the window is the max-context
    window of s; score = start[s] + end[e], ties broken by window, then start rank, then end rank. The
    no-answer score of a question is the minimum over its windows of start[0] + end[0];
    ``null_odds = null_score - best_non_null_score``. With ``version_2`` the
    prediction is "" when ``null_odds > null_threshold``; otherwise it is always the best span
    (what :func:`components.evaluation.squad.scoring.best_null_threshold` needs).
    """
    start_logits = np.asarray(start_logits, dtype=np.float64)
    end_logits = np.asarray(end_logits, dtype=np.float64)
    if start_logits.shape != end_logits.shape or start_logits.shape[0] != len(metas):
        raise ValueError(f"logit shapes {start_logits.shape}/{end_logits.shape} do not match "
                         f"{len(metas)} features")
    by_example: Dict[int, List[int]] = collections.defaultdict(list)
    for f_i, meta in enumerate(metas):
        by_example[meta.example_index].append(f_i)

    predictions: Dict[str, str] = {}
    null_odds: Dict[str, float] = {}
    for ex_i, ex in enumerate(examples):
        best_score, best_span = _NO_CANDIDATE_SCORE, None
        null_score = None
        for f_i in by_example.get(ex_i, []):
            meta = metas[f_i]
            s_log, e_log = start_logits[f_i], end_logits[f_i]
            feature_null = s_log[0] + e_log[0]
            null_score = feature_null if null_score is None else min(null_score, feature_null)
            lo, hi = meta.doc_offset, meta.doc_offset + meta.doc_length
            if hi > s_log.shape[0]:
                raise ValueError(f"window of {meta.qid} extends past the logits' length {s_log.shape[0]}")
            if meta.doc_length == 0:
                continue
            top_s = [int(i) - lo for i in np.argsort(-s_log, kind="stable")[:n_best_size] if lo <= i < hi]
            top_e = [int(i) - lo for i in np.argsort(-e_log, kind="stable")[:n_best_size] if lo <= i < hi]
            doc_s, doc_e = s_log[lo:hi], e_log[lo:hi]
            for s in top_s:
                if not meta.max_context[s]:
                    continue
                for e in top_e:
                    if e < s or e - s + 1 > max_answer_length:
                        continue
                    score = doc_s[s] + doc_e[e]
                    if score > best_score:
                        best_score = score
                        best_span = (int(meta.char_spans[s, 0]), int(meta.char_spans[e, 1]))
        if null_score is None:
            null_score = 0.0
        text = ex.context[best_span[0]:best_span[1]].strip() if best_span else ""
        odds = float(null_score - best_score)
        null_odds[ex.qid] = odds
        predictions[ex.qid] = "" if (version_2 and odds > null_threshold) else text
    return predictions, null_odds


def apply_null_threshold(predictions: Dict[str, str], null_odds: Dict[str, float],
                         threshold: float) -> Dict[str, str]:
    """v2 predictions: "" where ``null_odds > threshold``, else the span text."""
    return {q: ("" if null_odds.get(q, float("-inf")) > threshold else t) for q, t in predictions.items()}


# ---------------------------------------------------------------------------------------------
# v2.0

V2_OUTPUT_KEYS = ("start_top_log_probs", "start_top_index", "end_top_log_probs", "end_top_index", "cls_logits")
_NONCE_LOG_PROB = -1e6  # official score of the empty answer when no candidate is valid
_NULL_INIT = 1000000.0  # official initial null score ("large and positive")

Outputs = Mapping[str, np.ndarray]


def _as_list(outputs: Union[Outputs, Sequence[Outputs]]) -> List[Outputs]:
    return [outputs] if isinstance(outputs, Mapping) else list(outputs)


def _accumulate(examples: Sequence[SquadExample], metas: Sequence[FeatureMeta], runs: List[Outputs],
                max_answer_length: int):
    """Per example: {feature row: {(s, e): [(start_lp, end_lp), ...]}} (rows in order, spans in first-seen
    order within a row, as the official per-feature dictionaries), and the null scores."""
    by_example: Dict[int, List[int]] = collections.defaultdict(list)
    for f_i, meta in enumerate(metas):
        by_example[meta.example_index].append(f_i)
    spans: List[Dict[int, Dict[Tuple[int, int], List[Tuple[float, float]]]]] = [
        {f_i: {} for f_i in by_example.get(ex_i, [])} for ex_i in range(len(examples))]
    nulls: List[List[float]] = [[] for _ in examples]
    for out in runs:
        missing = [k for k in V2_OUTPUT_KEYS if k not in out]
        if missing:
            raise ValueError(f"SQuAD v2.0 outputs lack {missing}")
        s_lp, s_ix = np.asarray(out["start_top_log_probs"], np.float64), np.asarray(out["start_top_index"])
        e_lp, e_ix = np.asarray(out["end_top_log_probs"], np.float64), np.asarray(out["end_top_index"])
        cls = np.asarray(out["cls_logits"], np.float64).reshape(-1)
        if s_ix.shape[0] != len(metas) or cls.shape[0] != len(metas):
            raise ValueError(f"outputs have {s_ix.shape[0]} rows for {len(metas)} features")
        k_s = s_ix.shape[1]
        k_e = e_ix.shape[1] // k_s
        for ex_i in range(len(examples)):
            null = _NULL_INIT
            for f_i in by_example.get(ex_i, []):
                meta = metas[f_i]
                null = min(null, float(cls[f_i]))
                lo = meta.doc_offset
                for i in range(k_s):
                    s = int(s_ix[f_i, i]) - lo
                    if s < 0 or s >= meta.doc_length or not meta.max_context[s]:
                        continue
                    for j in range(k_e):
                        e = int(e_ix[f_i, i * k_e + j]) - lo
                        if e >= meta.doc_length or e < s or e - s + 1 > max_answer_length:
                            continue
                        spans[ex_i][f_i].setdefault((s, e), []).append(
                            (float(s_lp[f_i, i]), float(e_lp[f_i, i * k_e + j])))
            nulls[ex_i].append(null)
    return spans, nulls


def postprocess_squad_v2(examples: Sequence[SquadExample], metas: Sequence[FeatureMeta],
                         outputs: Union[Outputs, Sequence[Outputs]], n_best_size: int = 20,
                         max_answer_length: int = 30, null_threshold: Optional[float] = None,
                         return_nbest: bool = False):
    """(predictions, null_odds[, nbest]) per question id, decoded as described in the module docstring.

    ``outputs``: one dict of beam outputs for all feature rows, or a list of them (averaged). ``nbest``
    lists, per question, ``{"text", "start_log_prob", "end_log_prob"}`` best first.
    """
    runs = _as_list(outputs)
    spans, nulls = _accumulate(examples, metas, runs, max_answer_length)
    predictions: Dict[str, str] = {}
    null_odds: Dict[str, float] = {}
    nbests: Dict[str, List[Dict[str, Any]]] = {}
    for ex_i, ex in enumerate(examples):
        prelim = [(f_i, s, e, sum(v[0] for v in vals) / len(vals), sum(v[1] for v in vals) / len(vals))
                  for f_i, row in spans[ex_i].items() for (s, e), vals in row.items()]
        prelim.sort(key=lambda p: p[3] + p[4], reverse=True)  # stable: ties keep first-seen order
        seen = set()
        nbest: List[Dict[str, Any]] = []
        for f_i, s, e, slp, elp in prelim:
            if len(nbest) >= n_best_size:
                break
            spans_chars = metas[f_i].char_spans
            text = ex.context[int(spans_chars[s, 0]):int(spans_chars[e, 1])].strip()
            if text in seen:
                continue
            seen.add(text)
            nbest.append({"text": text, "start_log_prob": slp, "end_log_prob": elp})
        if not nbest:
            nbest.append({"text": "", "start_log_prob": _NONCE_LOG_PROB, "end_log_prob": _NONCE_LOG_PROB})
        odds = sum(nulls[ex_i]) / len(nulls[ex_i]) if nulls[ex_i] else _NULL_INIT
        null_odds[ex.qid] = float(odds)
        answer = null_threshold is None or odds < null_threshold
        predictions[ex.qid] = nbest[0]["text"] if answer else ""
        nbests[ex.qid] = nbest
    if return_nbest:
        return predictions, null_odds, nbests
    return predictions, null_odds


def evaluate_squad_v2(dataset, examples: Sequence[SquadExample], metas: Sequence[FeatureMeta],
                      outputs: Union[Outputs, Sequence[Outputs]], n_best_size: int = 20,
                      max_answer_length: int = 30, na_prob_thresh: float = 1.0
                      ) -> Tuple[Dict[str, float], Dict[str, str], Dict[str, float]]:
    """The official ``evaluate_v2``: (metrics, final predictions, null odds).

    metrics: ``exact``/``f1``/``total`` and the ``HasAns_*``/``NoAns_*`` splits of the thresholded predictions
    (scored at ``na_prob_thresh``), ``null_threshold`` (the tuned best-F1 threshold), and ``best_exact`` /
    ``best_f1`` (+ thresholds) of the sweep over the unthresholded predictions. Percentages.
    """
    articles = load_squad_json(dataset)
    raw, null_odds = postprocess_squad_v2(examples, metas, outputs, n_best_size, max_answer_length, None)
    sweep = squad_v2_metrics(articles, raw, null_odds, null_threshold=na_prob_thresh)
    threshold = float(sweep["best_f1_thresh"])
    final, _ = postprocess_squad_v2(examples, metas, outputs, n_best_size, max_answer_length, threshold)
    metrics = {k: v for k, v in squad_v2_metrics(articles, final, null_odds, null_threshold=na_prob_thresh).items()
               if not k.startswith("best_")}
    metrics.update({k: sweep[k] for k in ("best_exact", "best_exact_thresh", "best_f1", "best_f1_thresh")})
    metrics["null_threshold"] = threshold
    return metrics, final, null_odds


# ---------------------------------------------------------------------------------------------
# Files


def write_squad_predictions(predictions: Dict[str, str], path: str) -> None:
    """Official prediction file: a JSON object {question id: answer text} ("" = no answer)."""
    parent = os.path.dirname(path)
    if parent:
        os.makedirs(parent, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(predictions, f, indent=2, ensure_ascii=False)


def write_null_odds(null_odds: Dict[str, float], path: str) -> None:
    """The v2.0 ``--na-prob-file``: {question id: null odds} (higher = more likely unanswerable)."""
    parent = os.path.dirname(path)
    if parent:
        os.makedirs(parent, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump({k: float(v) for k, v in null_odds.items()}, f, indent=2)
