"""The blessing decision: does this run's model replace the last blessed one? Pure: numbers in, decision out.

Every criterion is named by its ``release.*`` setting and, when on, checked with its measured value and threshold:

* ``min_scores``: a floor per task (a task with no score fails its floor);
* ``min_tasks_beating_arm``: at least K tasks beat the baseline arm (``random_init``) beyond the seed spread, i.e.
  the worst pretrained seed above the arm's best seed (``compare_arms``' ``beyond_spread``, undefined below two
  seeds, which fails the task);
* ``max_regression``: against the latest blessed model of the pipeline (its scores as its pushed version recorded
  them), no task lower by more than δ and the average over the tasks both have not lower. It is skipped, and the
  decision says why, when there is no blessed model yet (the first run), when that model is this one, or when no
  pushed version records its scores.

No criterion on: blessed, reason "no criteria". ``force_bless``: blessed whatever the verdicts, which are still
computed and recorded, and ``forced`` says so. The decision is plain JSON (``BLESSING_FILE``) written by the
``Blesser`` node beside TFX's ``BLESSED`` / ``NOT_BLESSED`` marker file.
"""
from __future__ import annotations

import math
from typing import Any, Dict, List, Mapping, Optional

from trainer.formatting import number_text

__all__ = ["BLESSING_FILE", "task_scores", "arm_comparisons", "decide"]

BLESSING_FILE = "blessing.json"


def _two(value: Any) -> str:
    return number_text(value, 2)


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def task_scores(results: Mapping[str, Any]) -> Dict[str, float]:
    """{task: score} from a report's ``results.json`` (each benchmark's tasks; scores that are not numbers are
    left out, so a floor on such a task fails as "no score")."""
    scores: Dict[str, float] = {}
    for _, result in sorted((results.get("results") or {}).items()):
        for task, metrics in ((result or {}).get("tasks") or {}).items():
            if _finite((metrics or {}).get("score")):
                scores[task] = float(metrics["score"])
    return scores


def arm_comparisons(results: Mapping[str, Any], arm: str) -> Dict[str, Dict[str, Any]]:
    """{task: comparison with ``arm``} from a report's ``results.json`` (``summary.baselines``)."""
    return dict(((results.get("summary") or {}).get("baselines") or {}).get(arm) or {})


def _check(name: str, passed: bool, measured: Any, threshold: Any, detail: str) -> Dict[str, Any]:
    return {"criterion": name, "passed": bool(passed), "measured": measured, "threshold": threshold,
            "detail": detail}


def decide(settings: Mapping[str, Any], scores: Mapping[str, float], arms: Mapping[str, Mapping[str, Any]],
           baseline: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
    """The decision for a model with ``scores`` ({task: score}) and ``arms`` ({task: comparison with
    ``settings['baseline_arm']``}). ``baseline``: the latest blessed model (``model``, ``scores`` or None,
    ``version``, ``same_model``), or None when the pipeline has none. Returns ``blessed``, ``forced``, ``reason`` (one line),
    ``checks`` (one per criterion, each with ``passed``, ``measured``, ``threshold`` and ``detail``),
    ``skipped`` (criteria on but not applicable, with why), ``scores`` and ``baseline``."""
    checks: List[Dict[str, Any]] = []
    skipped: List[Dict[str, str]] = []
    for task, floor in sorted((settings.get("min_scores") or {}).items()):
        score = scores.get(task)
        checks.append(_check(f"min_scores.{task}", score is not None and score >= floor, score, floor,
                             f"{task} scored {_two(score)}, floor {_two(floor)}" if score is not None
                             else f"{task} has no score in this run's report"))
    k = int(settings.get("min_tasks_beating_arm") or 0)
    if k:
        arm = settings.get("baseline_arm") or "random_init"
        beating = sorted(t for t, c in arms.items() if c.get("beyond_spread") is True)
        undefined = sorted(t for t, c in arms.items() if c.get("beyond_spread") is None)
        detail = (f"{len(beating)} of {len(arms)} tasks beat {arm} beyond the seed spread"
                  + (f" ({', '.join(beating)})" if beating else "")
                  + (f"; undefined with fewer than 2 seeds: {', '.join(undefined)}" if undefined else ""))
        checks.append(_check("min_tasks_beating_arm", len(beating) >= k, len(beating), k, detail))
    delta = settings.get("max_regression")
    if delta is not None:
        if baseline is None:
            skipped.append({"criterion": "max_regression", "why": "no blessed model in this pipeline yet"})
        elif baseline.get("same_model"):
            skipped.append({"criterion": "max_regression", "why": "the latest blessed model is this model"})
        elif baseline.get("scores") is None:
            skipped.append({"criterion": "max_regression", "why": "no pushed version records the latest blessed "
                                                                  "model's scores"})
        else:
            base_scores = baseline.get("scores") or {}
            common = sorted(set(base_scores) & set(scores))
            for task in common:
                drop = base_scores[task] - scores[task]
                checks.append(_check(f"max_regression.{task}", drop <= delta, scores[task],
                                     base_scores[task] - delta,
                                     f"{task} {_two(scores[task])} vs {_two(base_scores[task])} of the baseline "
                                     f"(allowed drop {_two(delta)})"))
            if common:
                mean = sum(scores[t] for t in common) / len(common)
                base_mean = sum(base_scores[t] for t in common) / len(common)
                checks.append(_check("max_regression.average", mean >= base_mean, mean, base_mean,
                                     f"average over {len(common)} tasks {_two(mean)} vs {_two(base_mean)} "
                                     f"of the baseline"))
            else:
                skipped.append({"criterion": "max_regression", "why": "no task scored by both this model and "
                                                                      "the baseline"})
    failed = [c for c in checks if not c["passed"]]
    forced = bool(settings.get("force_bless"))
    if not checks:
        passed, reason = True, "no criteria" + (" applicable" if skipped else "")
    elif failed:
        passed = False
        reason = "failed: " + "; ".join(f"{c['criterion']} ({c['detail']})" for c in failed)
    else:
        passed, reason = True, f"passed all {len(checks)} checks"
    if forced:
        reason = f"forced by release.force_bless ({'criteria ' + reason if checks else reason})"
    return {"blessed": passed or forced, "forced": forced, "criteria_passed": passed, "reason": reason,
            "checks": checks, "skipped": skipped, "scores": dict(sorted(scores.items())),
            "baseline": None if baseline is None else {k: baseline.get(k) for k in ("model", "scores", "version")},
            "settings": dict(settings)}
