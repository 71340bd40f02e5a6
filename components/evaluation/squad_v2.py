"""SQuAD v2.0 decoding and dev evaluation of the official ALBERT release (pure NumPy).

Inputs are the beam outputs of :class:`components.evaluation.heads.SquadV2Model` per window (feature row):
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
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from components.evaluation.squad import FeatureMeta, SquadExample, load_squad_json, squad_v2_metrics

__all__ = ["V2_OUTPUT_KEYS", "postprocess_squad_v2", "evaluate_squad_v2"]

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
