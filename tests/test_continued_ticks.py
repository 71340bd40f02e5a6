"""A schedule that continues its last blessed model (issues 46 and 47): ``train.init_from=latest_blessed``, three
ticks of tests/test_schedule_ticks.py's layout and small DAG.

1. span 1, no blessed model yet: pretrains from scratch, is blessed and pushed as version 1;
2. nothing new: pretrains nothing and pushes nothing, although the latest blessed model changed since tick 1 (the
   Trainer's base resolves to what tick 1's Trainer started from: the same parameters, a cache hit);
3. span 2 lands: the Trainer continues tick 1's model (version 1) for ``train.num_train_steps`` more steps, the
   Blesser compares the result with that model, and the card of version 2 says "continued from version 1".
"""
from __future__ import annotations

import json
import os

import pytest

from tests.test_change_impact import BASE, IMPORTERS, RELEASE, RESOLVERS, _last_run
from tests.test_schedule_ticks import CORPUS_DOWN, RESENT_SPAN, add_span_2, data_layout


def _config(root):
    from pipeline.configs import build_config
    from pipeline.resolve import resolve_config

    return resolve_config(build_config("sample", output_dir=str(root / "out"), overrides=BASE + RESENT_SPAN + [
        f"corpus.wikipedia_dir={root / 'data' / 'wiki' / 'span-{SPAN}'}", "train.init_from=latest_blessed",
        f"benchmarks.glue_dir={root / 'data' / 'glue'}", "benchmarks.race_dir=null"]), local=True)


def _tick(root):
    from components.release.versions import list_versions
    from pipeline.local_runner import run_local
    from pipeline.plan import plan

    config = _config(root)
    predicted = {r.node for r in plan(config) if r.status == "WILL RUN"} - IMPORTERS - RESOLVERS
    run_local(config)
    states, _ = _last_run(config.metadata_path)
    executed = {n for n, s in states.items() if s == "EXECUTED"} - IMPORTERS
    return config, predicted, executed, list_versions(config.push_destination)


@pytest.fixture(scope="module")
def ticks(tmp_path_factory):
    root = tmp_path_factory.mktemp("continued")
    data_layout(root)
    out = [_tick(root), _tick(root)]
    add_span_2(root)
    out.append(_tick(root))
    return root, out


def _export_info(version):
    with open(os.path.join(version["path"], "checkpoint", "export_info.json")) as f:
        return json.load(f)


def test_tick_1_has_no_blessed_model_and_pretrains_from_scratch(ticks):
    _, out = ticks
    config, predicted, executed, versions = out[0]
    assert config.train.init_from == "scratch"
    assert predicted == executed == CORPUS_DOWN
    assert [v["version"] for v in versions] == [1]
    assert "init_from" not in _export_info(versions[0])


def test_tick_2_with_nothing_new_pretrains_nothing_and_pushes_nothing(ticks):
    _, out = ticks
    config, predicted, executed, versions = out[1]
    assert config.train.init_from == "scratch"  # what tick 1's Trainer started from: the same parameters
    assert predicted == executed == RELEASE
    assert [v["version"] for v in versions] == [1]


def test_tick_3_continues_version_1_on_the_new_span_and_is_compared_with_it(ticks):
    _, out = ticks
    config, predicted, executed, versions = out[2]
    v1 = out[0][3][0]
    assert config.train.init_from == v1["path"]
    assert predicted == executed == CORPUS_DOWN
    assert [v["version"] for v in versions] == [1, 2]  # no criteria: blessed, pushed
    v2 = versions[1]
    info = _export_info(v2)
    steps = config.train.num_train_steps
    assert info["init_from"] == {"location": v1["path"], "version": 1, "steps": steps, "restored": "weights"}
    assert (info["final_step"], info["total_steps"]) == (steps, 2 * steps)
    assert v2["baseline"]["version"] == 1  # compared with the model it continued
    with open(os.path.join(v2["path"], "model_card.md"), encoding="utf-8") as f:
        card = f.read()
    assert f"| continued from | version 1 at {v1['path']} ({steps} steps) |" in card
    assert f"| total steps (with the base's) | {2 * steps} |" in card
    import glob

    [results] = [p for p in glob.glob(os.path.join(config.pipeline_root, "BenchmarkReport", "report", "*",
                                                   "results.json"))
                 if json.load(open(p))["summary"]["continued_from"] is not None]
    with open(os.path.join(os.path.dirname(results), "report.md"), encoding="utf-8") as f:
        assert (f"Continued from version 1 at {v1['path']} ({steps} steps, weights restored); {2 * steps} steps "
                "in all.") in f.read()
