"""Proof of where fine-tuning starts: the encoder at step 0 against the exported pretrained checkpoint.

The worst silent failure of a pretraining pipeline is a fine-tuning job that does not really start from the
pretrained weights (renamed variables, a partial restore): it still produces plausible numbers. So, before the
first step of every run, every encoder variable (all of them, read back through a checkpoint the live encoder
writes, so the variable → key mapping is TensorFlow's own and independent of the restore code) is compared with
``<albert_dir>/encoder/ckpt``:

* ``pretrained`` arm: every key of either side must exist on the other and every value must be equal, else
  :class:`EncoderInitError` names the offending variables;
* ``random_init`` arm: same keys (same architecture), and no *informative* variable may equal the checkpoint.
  Informative = not a constant tensor: biases and LayerNorm weights start as zeros/ones in any model, so their
  equality with an untrained checkpoint proves nothing.

The returned record (variables compared, max abs difference, ...) goes into ``metrics.json``.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from typing import Any, Dict, List


import numpy as np
import tensorflow as tf

from components.evaluation.benchmark_config import BASELINES
from trainer.files import ENCODER_CKPT

__all__ = ["EncoderInitError", "check_encoder_init", "summarize_checks", "ARMS"]

ARMS = ("pretrained", *BASELINES)
_GRAPH_KEY = "_CHECKPOINTABLE_OBJECT_GRAPH"
_MAX_NAMED = 12  # variables named in an error message (the count is always given)


class EncoderInitError(RuntimeError):
    """The encoder about to be fine-tuned is not what its arm claims (not the pretrained weights, or them)."""


def _values(reader) -> Dict[str, np.ndarray]:
    return {k: reader.get_tensor(k) for k in reader.get_variable_to_shape_map() if k != _GRAPH_KEY}


def _names(keys: List[str]) -> str:
    short = [k.replace("/.ATTRIBUTES/VARIABLE_VALUE", "") for k in keys[:_MAX_NAMED]]
    more = f" (+{len(keys) - _MAX_NAMED} more)" if len(keys) > _MAX_NAMED else ""
    return ", ".join(short) + more


def check_encoder_init(encoder: tf.Module, albert_dir: str, arm: str = "pretrained") -> Dict[str, Any]:
    """Compare every variable of ``encoder`` (an ``AlbertModel``) with ``<albert_dir>/encoder/ckpt``.

    Raises :class:`EncoderInitError` naming the variables when ``arm`` is ``pretrained`` and anything differs
    or is missing, or when ``arm`` is ``random_init`` and an informative variable equals the checkpoint.
    """
    if arm not in ARMS:
        raise ValueError(f"arm must be one of {ARMS}, got {arm!r}")
    ckpt = os.path.join(albert_dir, ENCODER_CKPT)
    expected = _values(tf.train.load_checkpoint(ckpt))
    scratch = tempfile.mkdtemp(prefix="albert_init_check_")
    try:
        path = tf.train.Checkpoint(encoder=encoder).write(os.path.join(scratch, "ckpt"))
        live = _values(tf.train.load_checkpoint(path))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    n_vars = len({id(v) for v in encoder.variables})
    if len(live) != n_vars:  # every live variable must be reachable by the checkpoint, or the check is partial
        raise EncoderInitError(f"the encoder has {n_vars} variables but only {len(live)} are checkpointed")
    missing = sorted(set(live) - set(expected))  # in the model, not in the pretrained checkpoint
    unused = sorted(set(expected) - set(live))  # pretrained weights the model does not hold
    if missing or unused:
        parts = []
        if missing:
            parts.append(f"{len(missing)} encoder variable(s) absent from {ckpt}: {_names(missing)}")
        if unused:
            parts.append(f"{len(unused)} checkpoint variable(s) absent from the encoder: {_names(unused)}")
        raise EncoderInitError(f"{arm} arm: encoder and pretrained checkpoint disagree on variables; "
                               + "; ".join(parts))
    diffs: Dict[str, float] = {}
    shape_mismatch: List[str] = []
    for key, value in live.items():
        ref = expected[key]
        if value.shape != ref.shape:
            shape_mismatch.append(key)
            continue
        diffs[key] = float(np.max(np.abs(value.astype(np.float64) - ref.astype(np.float64)))) if value.size else 0.0
    if shape_mismatch:
        raise EncoderInitError(f"{arm} arm: {len(shape_mismatch)} encoder variable(s) have another shape than in "
                               f"{ckpt}: {_names(sorted(shape_mismatch))}")
    informative = sorted(k for k, ref in expected.items() if ref.size > 1 and np.ptp(ref) > 0)
    record: Dict[str, Any] = {
        "arm": arm,
        "encoder_checkpoint": ckpt,
        "variables_compared": len(diffs),
        "values_compared": int(sum(v.size for v in live.values())),
        "max_abs_diff": max(diffs.values()) if diffs else 0.0,
        "informative_variables": len(informative),
        "equal_variables": sum(d == 0.0 for d in diffs.values()),
        "equal_informative_variables": sum(diffs[k] == 0.0 for k in informative),
        "min_abs_diff_informative": min((diffs[k] for k in informative), default=None),
    }
    if arm == "pretrained":
        differ = sorted(k for k, d in diffs.items() if d != 0.0)
        if differ:
            worst = max(differ, key=lambda k: diffs[k])
            raise EncoderInitError(
                f"fine-tuning would not start from the pretrained encoder: {len(differ)} of {len(diffs)} variables "
                f"differ from {ckpt} at step 0 (max abs diff {diffs[worst]:.3g} in "
                f"{worst.replace('/.ATTRIBUTES/VARIABLE_VALUE', '')}): {_names(differ)}")
    else:
        same = sorted(k for k in informative if diffs[k] == 0.0)
        if same:
            raise EncoderInitError(
                f"random_init arm starts from pretrained weights: {len(same)} of {len(informative)} informative "
                f"variables equal {ckpt} at step 0: {_names(same)}")
    record["passed"] = True
    return record


def summarize_checks(records: List[Dict[str, Any]]) -> Dict[str, Any]:
    """One arm's checks over its runs (every task and seed): what metrics.json keeps at the top level."""
    if not records:
        return {"runs_checked": 0}
    first = records[0]
    return {
        "arm": first["arm"],
        "encoder_checkpoint": first["encoder_checkpoint"],
        "runs_checked": len(records),
        "passed": all(r.get("passed") for r in records),
        "variables_compared": first["variables_compared"],
        "values_compared": first["values_compared"],
        "max_abs_diff": max(r["max_abs_diff"] for r in records),
        "informative_variables": first["informative_variables"],
        "equal_informative_variables_max": max(r["equal_informative_variables"] for r in records),
        "min_abs_diff_informative": min((r["min_abs_diff_informative"] for r in records
                                         if r["min_abs_diff_informative"] is not None), default=None),
    }
