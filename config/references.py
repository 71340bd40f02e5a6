"""Published ALBERT-base results a run is shown beside (``report.reference``), each with its source.

Defined here, with the setting that picks one, so the setting's choices and the numbers cannot drift apart; the
report (``components/report/report_lib.py``) only reads them. Dev-set percentages; SQuAD as F1 / exact match.
"""
from __future__ import annotations

__all__ = ["PAPER_ALBERT_BASE", "REFERENCE_ROWS"]

# Lan et al. 2020, Table 2, ALBERT base (dev, 125k steps). Avg as printed: the mean of the five columns, each
# SQuAD column first averaged over F1 and EM, is 80.05.
PAPER_ALBERT_BASE = {
    "SQuAD1.1": {"f1": 89.3, "exact_match": 82.3},
    "SQuAD2.0": {"f1": 80.0, "exact_match": 77.1},
    "MNLI": 81.6,
    "SST-2": 90.3,
    "RACE": 64.0,
    "Avg": 80.1,
}

REFERENCE_ROWS = {
    "albert-base-v1": {
        "label": "ALBERT base v1 — paper's Table 2 (125k steps, dropout 0.1; not produced by this run)",
        "source": "Lan et al. 2020, Table 2",
        "values": PAPER_ALBERT_BASE,
    },
    "albert-base-v2": {
        "label": "ALBERT base v2 — official release README (10M steps, extra data, no dropout; "
                 "not produced by this run)",
        "source": "google-research/albert README, V2 table",
        "values": {"SQuAD1.1": {"f1": 90.2, "exact_match": 83.2}, "SQuAD2.0": {"f1": 82.1, "exact_match": 79.3},
                   "MNLI": 84.6, "SST-2": 92.9, "RACE": 66.8, "Avg": 82.3},
    },
}
