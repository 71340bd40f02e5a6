"""The data gate (issue 55): each tick's span is measured, compared with the last span that went through the gate,
and stopped before the expensive nodes when a check fails.

Real ticks on tests/test_schedule_ticks.py's layout (the sample Wikipedia dump as span 1 of ``wiki/span-{SPAN}``), on
tests/test_change_impact.py's small DAG with every benchmark off (the gate sits before them): span 1 passes and
trains; then a span of another language, a boilerplate span, a span of binary garbage and a span re-sending span 1
each stop the run with exit 2 and one line per failed check, record their result (``passed`` 0, the anomalies) in
MLMD, and run nothing after the gate; ``--set gate.accept=5`` lets the re-sent span through. An empty span stops at
CorpusGen already (no documents survived ingestion); the gate's own ``min_documents`` is checked by running the
node's shell (``datagate_beam.gate_documents``) on an empty documents folder, with contamination counted on the
bundled SQuAD and RACE dev sets.
"""
from __future__ import annotations

import json
import os
import shutil

import numpy as np
import pytest

from tests.conftest import REPO
from tests.test_change_impact import BASE

MULTILINGUAL = os.path.join(REPO, "tests", "fixtures", "multilingual")
GATE = {"DataGate", "DataGateCheck"}
AFTER_GATE = {"VocabGen", "PretrainingDataGen", "Trainer", "BenchmarkReport", "Blesser", "Pusher"}
BENCHMARKS_OFF = ["benchmarks.glue_dir=null", "benchmarks.race_dir=null", "benchmarks.squad_dir=null"]


# -- spans in WikiExtractor's format (``AA/wiki_00``: <doc> blocks, the title line, one paragraph per line) ----------

def write_extracted(folder, docs):
    """``docs``: (title, paragraphs) → ``folder/AA/wiki_00``."""
    lines = []
    for i, (title, paragraphs) in enumerate(docs, 1):
        lines += [f'<doc id="{i}" url="https://example.org/?curid={i}" title="{title}">', title, ""]
        lines += list(paragraphs) + ["</doc>"]
    os.makedirs(os.path.join(folder, "AA"))
    with open(os.path.join(folder, "AA", "wiki_00"), "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


def other_language_docs():
    """The Chinese, Japanese and Korean fixtures, one document per paragraph block of a few lines."""
    docs = []
    for name in ("zh-debian-faq.txt", "zh-tang-poems.txt", "ja-debian-faq.txt", "ko-constitution.txt"):
        with open(os.path.join(MULTILINGUAL, name), encoding="utf-8") as f:
            blocks = ["".join(line.strip() for line in block.splitlines()) for block in f.read().split("\n\n")]
        blocks = [b for b in blocks if b]
        for i in range(0, len(blocks), 6):
            docs.append((f"{name}-{i}", blocks[i:i + 6]))
    return docs


def boilerplate_docs():
    """Pages that are mostly a site's navigation, repeated, with one line of their own."""
    page = ["Home | About us | Contact | Subscribe to our newsletter | Follow us | Privacy policy",
            "### Latest news ### Top stories ### Most read ### Editor's picks ###",
            "Click here to read more about our great offers today and save big on every order you place with us",
            "Copyright all rights reserved by the site owner and its partners worldwide, no reuse allowed"]
    return [(f"Page {i}", page * 20 + [f"Article {i} has a few words of its own about topic number {i} here"])
            for i in range(12)]


def garbage_docs():
    """Random bytes read as Latin-1 (what a binary file mistaken for text becomes), without markup characters."""
    rng = np.random.default_rng(55)
    docs = []
    for i in range(6):
        text = bytes(rng.integers(32, 256, 6000, dtype=np.uint8)).decode("latin-1")
        text = "".join(c for c in text if c not in "<>&\x7f")
        docs.append((f"Blob {i}", [text[j:j + 600] for j in range(0, len(text), 600)]))
    return docs


def empty_docs():
    """An export that lost its text: articles with a title and nothing else."""
    return [(f"Empty {i}", []) for i in range(3)]


SPANS = {2: other_language_docs, 3: boilerplate_docs, 4: garbage_docs}


# -- the ticks -------------------------------------------------------------------------------------------------

def _cli(argv, log_dir):
    """``albert-pipeline ARGV`` in this process (as tests/conftest.py's ``cli`` fixture, for a module fixture):
    (exit code, stderr)."""
    import contextlib
    import io
    import logging

    from pipeline import cli as cli_module
    from pipeline import logs

    root, err = logging.getLogger(), io.StringIO()
    level, old = root.level, os.environ.get(logs.LOG_DIR_VAR)
    os.environ[logs.LOG_DIR_VAR] = str(log_dir)
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            code = cli_module.run_cli([str(a) for a in argv])
    finally:
        for handler in [h for h in root.handlers if getattr(h, "_albert_tfx", False)]:
            root.removeHandler(handler)
            handler.close()
        root.setLevel(level)
        logging.captureWarnings(False)
        if old is None:
            os.environ.pop(logs.LOG_DIR_VAR)
        else:
            os.environ[logs.LOG_DIR_VAR] = old
    return code, err.getvalue()


def _overrides(root, extra=()):
    return BASE + BENCHMARKS_OFF + [f"corpus.wikipedia_dir={root / 'data' / 'wiki' / 'span-{SPAN}'}", *extra]


def _newest_run(metadata_path):
    """(node id → state of its execution in the newest pipeline run, the DataGateResult that run's DataGate
    published or reused: its custom properties and URI)."""
    from ml_metadata.proto import metadata_store_pb2 as pb

    from pipeline import mlmd
    from tests.reliability.mlmd import open_store

    store = open_store(metadata_path)
    newest = max(store.get_contexts_by_type("pipeline_run"), key=lambda c: (c.create_time_since_epoch, c.id))
    types = {t.id: t.name for t in store.get_context_types()}
    states, result = {}, None
    for execution in store.get_executions_by_context(newest.id):
        node = [c.name.split(".", 1)[1] for c in store.get_contexts_by_execution(execution.id)
                if types[c.type_id] == "node"][0]
        states[node] = pb.Execution.State.Name(execution.last_known_state)
        if node == "DataGate":
            [out] = [e.artifact_id for e in store.get_events_by_execution_ids([execution.id])
                     if e.type == pb.Event.OUTPUT]
            [artifact] = store.get_artifacts_by_id([out])
            result = {"uri": artifact.uri, "state": pb.Artifact.State.Name(artifact.state),
                      **{k: mlmd.value(v) for k, v in artifact.custom_properties.items()
                         if k in ("span", "passed", "accepted", "baseline_span", "failed")}}
    return states, result


@pytest.fixture(scope="module")
def ticks(tmp_path_factory):
    """Tick → (exit code, stderr, node states of its run, its gate result, plan's rows before it)."""
    from pipeline.configs import build_config
    from pipeline.plan import plan
    from pipeline.resolve import resolve_config
    from tests.test_schedule_ticks import data_layout

    root = tmp_path_factory.mktemp("gate")
    data_layout(root)
    out = {}

    def tick(name, extra=()):
        overrides = _overrides(root, extra)
        rows = plan(resolve_config(build_config("sample", output_dir=str(root / "out"), overrides=overrides),
                                   local=True))
        argv = ["run", "--preset", "sample", "--output-dir", root / "out"]
        code, stderr = _cli(argv + [a for o in overrides for a in ("--set", o)], root / "logs")
        out[name] = (code, stderr, *_newest_run(str(root / "out" / "metadata.sqlite")), rows)

    tick("span 1")
    for span, docs in SPANS.items():
        write_extracted(root / "data" / "wiki" / f"span-{span}", docs())
        tick(f"span {span}")
    shutil.copytree(root / "data" / "wiki" / "span-1", root / "data" / "wiki" / "span-5")  # span 1 sent again
    tick("span 5")
    tick("span 5 accepted", ["gate.accept=5"])
    write_extracted(root / "data" / "wiki" / "span-6", empty_docs())
    tick("span 6")
    return root, out
