"""Change impact: a one-setting change re-executes exactly the nodes downstream of it (issue 13).

One run of the smallest DAG that has every kind of node (the sample Wikipedia dump alone → a 1000-piece vocab →
datagen → 4 Trainer steps → GLUE (RTE only), one seed, no baseline arm → report → release; run twice, as
the second run's release decides once more against the model the first blessed), then, for each single
override in ``CHANGES``, ``plan`` predicts and a real run records in MLMD which nodes execute and which come from
the cache. Every change is applied to the same base config, so each run's cache hits are against the base run's
executions. The first check, a rerun of the base config, is the suite's check that an unchanged rerun executes
nothing (the sample DAG's own cached rerun is tests/test_cli_run.py's `make sample`). RACE is left out (the
other tests that share ``BASE`` keep it): its node is the same BenchmarkEval component as GLUE's, which nodes a
benchmark's settings reach is tests/test_node_parameters.py's, and the sample run executes it.
"""
from __future__ import annotations

import os

import pytest

RELEASE = {"Blesser", "Pusher"}
GATE = {"DataGate", "DataGateCheck"}  # the data gate (tests/test_data_gate.py): its corpus's span is checked
EXAMPLES = {"ExamplesGate"}  # the gate's second stage: after PretrainingDataGen, before the Trainer
ALL = {"CorpusGen", "VocabGen", "PretrainingDataGen", "Trainer", "GlueBenchmark", "BenchmarkReport"} | RELEASE | GATE \
    | EXAMPLES
BENCH = {"GlueBenchmark", "BenchmarkReport"} | RELEASE
FROM_TRAINER = {"Trainer"} | BENCH
IMPORTERS = {"WikipediaImporter", "GlueDataImporter", "RaceDataImporter"}
RESOLVER = "LatestBlessedModel"  # records an execution in every run: it looks artifacts up, it computes nothing
RESOLVERS = {RESOLVER, "DataGateBaseline"}  # the latter: the data gate's baseline, looked up the same way

# override → the nodes that must execute (all others must be CACHED).
CHANGES = {
    "benchmarks.hparams.RTE.learning_rate=0.0002": {"GlueBenchmark", "BenchmarkReport"} | RELEASE,
    "benchmarks.seeds=2": BENCH,
    "report.title=Another title": {"BenchmarkReport"} | RELEASE,
    "release.license=mit": {"Pusher"},
    # A data-gate limit: the gate decides again; its check passes, so nothing after it runs but the report, which
    # shows the gate's new result (its "Data gate" section), and the release, which reads the report. Before the
    # changes that train another model: once one is blessed, every later run's release decides again against it.
    "gate.max_unigram_jsd=0.4": GATE | {"BenchmarkReport"} | RELEASE,
    "train.num_train_steps=6": FROM_TRAINER,
    "datagen.dupe_factor=2": {"PretrainingDataGen"} | EXAMPLES | FROM_TRAINER,
    "vocab.vocab_size=900": ALL - {"CorpusGen"} - GATE,
    "corpus.min_doc_chars=300": ALL,
}
# Not a variant here: `seed`, which reaches the same nodes as `vocab.vocab_size` (VocabGen and everything after
# it); which nodes each setting reaches is tests/test_node_parameters.py's, and that a changed parameter of those
# nodes executes exactly them and their descendants is what the variants above show.

BASE = [
    "corpus.books_dir=null", "vocab.vocab_size=1000", "benchmarks.baselines=[]",
    "benchmarks.squad_dir=null", "benchmarks.glue_tasks=RTE", "benchmarks.export_serving_model=false",
    "benchmarks.tfma=false", "benchmarks.max_eval_examples=16",
    "benchmarks.hparams.RTE.train_steps=3", "benchmarks.hparams.RTE.warmup_steps=1",
    "benchmarks.hparams.RACE.train_steps=2", "benchmarks.hparams.RACE.warmup_steps=1",
    "benchmarks.hparams.RACE.batch_size=2",
    "datagen.dupe_factor=1", "train.num_train_steps=4", "train.num_warmup_steps=1", "train.checkpoint_every=2",
    "train.eval_every=4", "train.eval_steps=1", "train.log_every=2", "train.train_batch_size=8",
    "train.eval_batch_size=8", "train.shuffle_buffer=64",
    # The raw-text folders are pushed and served in tests/test_release_raw_text.py, tests/test_sample_zh.py and the
    # image's ticks (tests/test_install_check.py); the small DAG's pushes leave them out (docs/release.md).
    "release.raw_text_serving=false",
]


NO_RACE = ["benchmarks.race_dir=null"]  # see the module docstring


pytestmark = [pytest.mark.slow, pytest.mark.longest_first(4)]


def _config(root, extra=()):
    from pipeline.settings.configs import build_config
    from pipeline.settings.resolve import resolve_config

    return resolve_config(build_config("sample", overrides=BASE + NO_RACE + list(extra), output_dir=str(root)),
                          local=True)


def _last_run(metadata_path):
    """node id → 'EXECUTED' | 'CACHED' for the newest pipeline run in MLMD, plus importer output ids."""
    from ml_metadata.proto import metadata_store_pb2 as pb

    from tests.reliability.mlmd import open_store

    store = open_store(metadata_path)
    runs = store.get_contexts_by_type("pipeline_run")
    newest = max(runs, key=lambda c: (c.create_time_since_epoch, c.id))
    states, imported = {}, {}
    for execution in store.get_executions_by_context(newest.id):
        nodes = [c.name.split(".", 1)[1] for c in store.get_contexts_by_execution(execution.id)
                 if store.get_context_types_by_id([c.type_id])[0].name == "node"]
        node = nodes[0]
        if node in RESOLVERS:
            continue
        state = execution.last_known_state
        assert state in (pb.Execution.COMPLETE, pb.Execution.CACHED), (node, pb.Execution.State.Name(state))
        states[node] = "CACHED" if state == pb.Execution.CACHED else "EXECUTED"
        if node in IMPORTERS:
            out = [e.artifact_id for e in store.get_events_by_execution_ids([execution.id])
                   if e.type == pb.Event.OUTPUT]
            imported[node] = out
    return states, imported


@pytest.fixture(scope="module")
def base_run(tmp_path_factory):
    from pipeline.local.local_runner import run_local
    from pipeline.local.plan import plan

    root = tmp_path_factory.mktemp("impact")
    config = _config(root)
    run_local(config)
    states, imported = _last_run(config.metadata_path)
    assert {n for n, s in states.items() if n not in IMPORTERS} == ALL
    assert all(s == "EXECUTED" for n, s in states.items() if n not in IMPORTERS)
    # The second run decides again, once: its baseline (the latest blessed model) is the model the first run
    # blessed, where the first had none. `plan` predicts it; the model is not pushed twice.
    rows = plan(config)
    assert {r.node for r in rows if r.status == "WILL RUN"} == RELEASE
    run_local(config)
    states, again = _last_run(config.metadata_path)
    assert {n for n, s in states.items() if s == "EXECUTED"} - IMPORTERS == RELEASE and again == imported
    return root, imported


def test_rerun_of_the_same_config_is_fully_cached_and_planned_so(base_run):
    from pipeline.local.local_runner import run_local
    from pipeline.local.plan import plan

    root, imported = base_run
    config = _config(root)
    predicted = {r.node: r.status for r in plan(config)}
    assert [predicted.pop(r) for r in sorted(RESOLVERS)] == ["RESOLVED", "RESOLVED"]
    assert all(status == "CACHED" for status in predicted.values()), predicted
    run_local(config)
    states, again = _last_run(config.metadata_path)
    assert {n for n, s in states.items() if s == "EXECUTED"} <= IMPORTERS  # importers re-register...
    assert again == imported  # ...but hand on the same artifacts


@pytest.mark.parametrize("override", list(CHANGES))
def test_a_change_executes_exactly_what_is_downstream(base_run, override):
    from pipeline.local.local_runner import run_local
    from pipeline.local.plan import plan

    root, imported = base_run
    config = _config(root, [override])
    rows = plan(config)
    predicted = {r.node for r in rows if r.status == "WILL RUN"}
    assert predicted == CHANGES[override], {r.node: (r.status, r.reasons) for r in rows}
    key = override.split("=", 1)[0]
    # The plan names the changed setting (reasons are a diff against each node's newest execution).
    assert any(f"setting {key}:" in reason for r in rows for reason in r.reasons), [r.to_dict() for r in rows]

    run_local(config)
    states, again = _last_run(config.metadata_path)
    executed = {n for n, s in states.items() if s == "EXECUTED" and n not in IMPORTERS}
    assert executed == CHANGES[override]
    assert again == imported
    if override.startswith("train.num_train_steps"):
        _assert_trainer_resumed(config.metadata_path, from_step=4, to_step=6)


def _assert_trainer_resumed(metadata_path, from_step, to_step):
    """Raising the step count continues the base run's checkpoints (keyed by content, not by URI)."""
    from tests.reliability.mlmd import live_artifacts, open_store

    runs = live_artifacts(open_store(metadata_path))["ModelRun"]
    newest = max(runs, key=lambda a: a.id)
    assert newest.custom_properties["start_step"].double_value == from_step
    assert newest.custom_properties["final_step"].double_value == to_step
    assert os.path.isdir(newest.uri)
