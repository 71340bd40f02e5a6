"""trainer/formatting.py: the ETA and seed-spread strings shared by the logs, the report and the write-ups."""
import math

from trainer.formatting import beyond_spread_text, eta_text, number_text, spread_text


def test_eta_text():
    assert eta_text(900, 2.0) == "ETA 0:07:30"
    assert eta_text((3 * 3600 + 61) * 7, 7.0) == "ETA 3:01:01"
    assert eta_text(5, 0.0) == "ETA 0:00:00"  # no rate yet


def test_number_and_spread_text():
    assert number_text(82.349) == "82.3" and number_text(2.0, signed=True) == "+2.0"
    assert number_text(-0.1234, 3) == "-0.123"
    assert [number_text(v) for v in (None, math.nan, math.inf, True, "x")] == ["—"] * 5
    assert spread_text({"median": 55.0, "min": 50.0, "max": 60.0, "n": 3}) == "55.0 [50.0 – 60.0]"
    assert spread_text({"median": 2.5, "min": -1.6, "max": 2.5}, signed=True) == "+2.5 [-1.6 – +2.5]"
    assert spread_text({"median": None, "min": None, "max": None, "n": 0}) == "—" and spread_text(None) == "—"


def test_beyond_spread_text_needs_two_seeds_per_arm():
    two = {"n": 2}
    assert beyond_spread_text({"pretrained": two, "baseline": two, "beyond_spread": True}) == "yes"
    assert beyond_spread_text({"pretrained": two, "baseline": two, "beyond_spread": False}) == "no"
    for pre, base in ((1, 1), (1, 3), (3, 1)):
        gain = {"pretrained": {"n": pre}, "baseline": {"n": base}, "beyond_spread": True}
        assert beyond_spread_text(gain) == "cannot tell (1 seed)"
    assert beyond_spread_text({"pretrained": {"n": 0}, "baseline": {"n": 0}, "beyond_spread": None}) == "—"
    # Records without seed counts (benchmark write-ups) keep their flag.
    assert beyond_spread_text({"pretrained": {}, "baseline": {}, "beyond_spread": False}) == "no"


def test_finetune_progress_line():
    import pytest

    pytest.importorskip("tensorflow")
    from components.evaluation.finetune import finetune_progress

    line = finetune_progress("RTE pretrained seed 1", 60, 600, [0.5] * 5 + [0.7] * 10, 20.0)
    assert line == "RTE pretrained seed 1: step 60/600 loss 0.7000 3.0 steps/s ETA 0:03:00"
