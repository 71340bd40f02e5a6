"""How numbers read in progress lines and reports: time left, and a score's spread over seeds.

One place for these strings so the training log, the fine-tuning log, the run report and the benchmark
write-ups say the same thing the same way. Plain Python (no NumPy, no TensorFlow): light modules use it.
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Optional

__all__ = ["NONE_TEXT", "number", "number_text", "eta_text", "spread_text", "beyond_spread_text"]

NONE_TEXT = "—"  # what a table shows for a value that does not exist (never a made-up number)


def number(value) -> Optional[float]:
    """``value`` as a finite float, else None (None, bools, NaN/inf and non-numbers have no number to show)."""
    if value is None or isinstance(value, bool):
        return None
    try:
        v = float(value)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def number_text(value, digits: int = 1, signed: bool = False) -> str:
    """``82.3`` (``+1.4`` when ``signed``), or ``—`` when there is no finite number."""
    v = number(value)
    if v is None:
        return NONE_TEXT
    return f"{v:+.{digits}f}" if signed else f"{v:.{digits}f}"


def eta_text(steps_left: float, steps_per_sec: float) -> str:
    """``ETA H:MM:SS`` for ``steps_left`` at ``steps_per_sec`` (``ETA 0:00:00`` while no rate is known)."""
    left = int(steps_left / steps_per_sec) if steps_per_sec > 0 else 0
    return f"ETA {left // 3600}:{left % 3600 // 60:02d}:{left % 60:02d}"


def spread_text(spread: Optional[Mapping[str, Any]], signed: bool = False) -> str:
    """``median [min – max]`` of a spread over seeds (``{"median", "min", "max", "n"}``), or ``—``."""
    if not spread or number(spread.get("median")) is None:
        return NONE_TEXT
    return (f"{number_text(spread['median'], signed=signed)} "
            f"[{number_text(spread['min'], signed=signed)} – {number_text(spread['max'], signed=signed)}]")


def beyond_spread_text(gain: Mapping[str, Any]) -> str:
    """Whether the worst pretrained seed beats the best baseline seed (``compare_arms``' ``beyond_spread``):
    ``yes`` / ``no``; ``cannot tell (1 seed)`` when an arm has a single seed, which has no spread to be beyond."""
    seeds = [int(n) for n in ((gain.get(arm) or {}).get("n") for arm in ("pretrained", "baseline")) if n is not None]
    if seeds and min(seeds) == 1:
        return "cannot tell (1 seed)"
    beyond = gain.get("beyond_spread")
    return NONE_TEXT if beyond is None else ("yes" if beyond else "no")
