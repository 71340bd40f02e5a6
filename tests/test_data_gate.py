"""The data gate (issue 55): each tick's span is measured, compared with the last span that went through the gate,
and stopped before the expensive nodes when a check fails.

Real ticks on tests/test_schedule_ticks.py's layout (the sample Wikipedia dump as span 1 of ``wiki/span-{SPAN}``), on
tests/test_change_impact.py's small DAG with every benchmark off (the gate sits before them): span 1 passes and
trains; then a span of another language, a boilerplate span, a span of binary garbage and a span re-sending span 1
each stop the run with exit 2 and one line per failed check, record their result (``passed`` 0, the anomalies) in
MLMD, and run nothing after the gate; ``--set gate.accept=5`` lets the re-sent span through, and the next tick,
without the setting, keeps it accepted (nothing reruns but the gate). An empty span stops at
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

from tests.conftest import REPO, cli_in_process
from tests.test_change_impact import BASE

MULTILINGUAL = os.path.join(REPO, "tests", "fixtures", "multilingual")
GATE = {"DataGate", "DataGateCheck"}
AFTER_GATE = {"VocabGen", "PretrainingDataGen", "ExamplesGate", "Trainer", "BenchmarkReport", "Blesser", "Pusher"}
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

def _overrides(root, extra=()):
    return BASE + BENCHMARKS_OFF + [f"corpus.wikipedia_dir={root / 'data' / 'wiki' / 'span-{SPAN}'}", *extra]


def _newest_run(metadata_path):
    """(node id → state of its execution in the newest pipeline run, the DataGateResult that run's DataGate
    published or reused: its custom properties and URI)."""
    from ml_metadata.proto import metadata_store_pb2 as pb

    from pipeline.local import mlmd
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
    from pipeline.settings.configs import build_config
    from pipeline.local.plan import plan
    from pipeline.settings.resolve import resolve_config
    from tests.test_schedule_ticks import data_layout

    root = tmp_path_factory.mktemp("gate")
    data_layout(root)
    out = {}

    def tick(name, extra=()):
        overrides = _overrides(root, extra)
        rows = plan(resolve_config(build_config("sample", output_dir=str(root / "out"), overrides=overrides),
                                   local=True))
        argv = ["run", "--preset", "sample", "--output-dir", root / "out"]
        done = cli_in_process(argv + [a for o in overrides for a in ("--set", o)], root / "logs")
        code, stderr = done.returncode, done.stderr
        out[name] = (code, stderr, *_newest_run(str(root / "out" / "metadata.sqlite")), rows)

    tick("span 1")
    for span, docs in SPANS.items():
        write_extracted(root / "data" / "wiki" / f"span-{span}", docs())
        tick(f"span {span}")
    shutil.copytree(root / "data" / "wiki" / "span-1", root / "data" / "wiki" / "span-5")  # span 1 sent again
    tick("span 5")
    # Span 5 is span 1's data: trained as long, its model would be span 1's (the same model key), which the release
    # does not push twice; one more step makes it a version of its own, with its own card.
    tick("span 5 accepted", ["gate.accept=5", "train.num_train_steps=5"])
    tick("span 5 again", ["train.num_train_steps=5"])  # the next tick, the setting gone: span 5 stays accepted
    write_extracted(root / "data" / "wiki" / "span-6", empty_docs())
    tick("span 6")
    return root, out


# -- what the ticks did ----------------------------------------------------------------------------------------

def _ran(states):
    return {node for node, state in states.items() if state != "CACHED"} - {"WikipediaImporter", "LatestBlessedModel",
                                                                           "DataGateBaseline"}


def _predicted(rows):
    return {r.node for r in rows if r.status == "WILL RUN"} - {"WikipediaImporter", "LatestBlessedModel",
                                                               "DataGateBaseline"}


def _files(result):
    from tensorflow_metadata.proto.v0 import anomalies_pb2, schema_pb2, statistics_pb2

    def read(name, proto):
        with open(os.path.join(result["uri"], name), "rb") as f:
            return proto.FromString(f.read())

    with open(os.path.join(result["uri"], "gate.json")) as f:
        summary = json.load(f)
    return (summary, read("statistics.pb", statistics_pb2.DatasetFeatureStatisticsList),
            read("schema.pb", schema_pb2.Schema), read("anomalies.pb", anomalies_pb2.Anomalies))


def test_span_1_is_checked_against_the_absolute_limits_alone_passes_and_trains(ticks):
    from components.datagate.checks import CHECKS, GateLimits
    from components.datagate.protos import limits_to_schema

    _, out = ticks
    code, stderr, states, result, rows = out["span 1"]
    assert code == 0, stderr[-3000:]
    assert _ran(states) == _predicted(rows) == {"CorpusGen"} | GATE | AFTER_GATE
    assert set(states.values()) == {"COMPLETE"}
    assert (result["span"], result["passed"], result["accepted"], result["state"]) == (1, 1, 0, "LIVE")
    assert "baseline_span" not in result
    assert ("albert-pipeline: data gate: span 1 passed all 10 checks (no baseline: first span through the gate, so "
            "only the absolute limits apply)") in stderr.splitlines()
    summary, statistics, schema, anomalies = _files(result)
    assert [c["name"] for c in summary["checks"]] == [c.limit for c in CHECKS if c.kind == "absolute"]
    assert summary["checks"][0]["message"] == ("span 1: check min_documents = 19, limit >= 1: passed (absolute; "
                                               "first span: no baseline, drift not checked)")
    assert (summary["baseline"], summary["documents"], summary["characters"]) == (None, 19, 234715)
    assert [d.name for d in statistics.datasets] == ["span-1", "span-1/wikipedia/en"]  # its location recorded
    assert statistics.datasets[0].num_examples == 19
    assert schema == limits_to_schema(GateLimits())
    assert anomalies.baseline == schema and not anomalies.anomaly_info  # the limits checked against; nothing failed
    assert not anomalies.HasField("dataset_anomaly_info") and not anomalies.data_missing


# span → the checks it fails, in CHECKS order; every one compared with span 1, the last span that went through.
BAD_SPANS = {
    "span 2": ["max_word_length_share", "min_volume_ratio", "max_unigram_jsd", "max_language_mix_distance"],
    "span 3": ["max_symbols_share", "max_duplicate_lines_share", "max_duplicate_ngrams_share", "max_unigram_jsd"],
    "span 4": ["max_word_length_share", "max_symbols_share", "max_few_letters_share", "min_volume_ratio",
               "max_unigram_jsd", "max_language_mix_distance"],
    "span 5": ["max_previous_exact_duplicate_share", "max_previous_near_duplicate_share"],
}


@pytest.mark.parametrize("tick", sorted(BAD_SPANS))
def test_a_bad_span_stops_before_the_vocabulary_with_a_line_per_failed_check(ticks, tick):
    from components.datagate.protos import failures_from_anomalies

    _, out = ticks
    code, stderr, states, result, rows = out[tick]
    span, failed = int(tick.split()[1]), BAD_SPANS[tick]
    assert code == 2, stderr[-3000:]
    # Nothing after the gate ran; the check failed; the result is published (LIVE) with the anomalies.
    assert states == {"WikipediaImporter": "COMPLETE", "LatestBlessedModel": "COMPLETE", "CorpusGen": "COMPLETE",
                      "DataGateBaseline": "COMPLETE", "DataGate": "COMPLETE", "DataGateCheck": "FAILED"}
    assert _predicted(rows) == {"CorpusGen"} | GATE | AFTER_GATE  # plan cannot know the verdict
    assert result == {"uri": result["uri"], "state": "LIVE", "span": span, "passed": 0, "accepted": 0,
                      "baseline_span": 1, "failed": ",".join(failed)}
    summary, _, _, anomalies = _files(result)
    assert [name for name, _ in failures_from_anomalies(anomalies)] == failed == summary["failed"]
    # The CLI: the error line, then exactly one line per failed check naming the span, the check, value and limit.
    lines = stderr.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("albert-pipeline run: error: "))
    assert lines[start].startswith(
        f"albert-pipeline run: error: the data gate stopped span {span} before the vocabulary, pretraining data and "
        f"Trainer: {len(failed)} of 17 checks failed; anomalies in {result['uri']}; --set gate.accept={span} lets it "
        "through knowingly (full traceback: ")
    checks = {c["name"]: c for c in summary["checks"]}
    # A moved language mix names the language that moved most: English, all of it away in span 2 (Chinese, Japanese
    # and Korean), about half in span 4 (garbage).
    moved = {"max_language_mix_distance": {2: "; en 1 -> 0 of the characters",
                                           4: "; en 1 -> 0.5177 of the characters"}.get(span)}
    assert lines[start + 1:] == [
        f"span {span}: check {name} = {checks[name]['value']:.4g}, limit {'>=' if name.startswith('min_') else '<='} "
        f"{checks[name]['limit']:.4g}: FAILED ({'absolute' if checks[name]['kind'] == 'absolute' else 'drift against span 1'}"
        f"{moved.get(name) or ''})"
        for name in failed]


def test_the_failed_checks_name_the_values_and_limits(ticks):
    _, out = ticks
    lines = {tick: out[tick][1].splitlines()[-len(failed):] for tick, failed in BAD_SPANS.items()}
    assert lines["span 5"] == [
        "span 5: check max_previous_exact_duplicate_share = 1, limit <= 0.05: FAILED (drift against span 1)",
        "span 5: check max_previous_near_duplicate_share = 1, limit <= 0.1: FAILED (drift against span 1)"]
    assert ("span 2: check max_language_mix_distance = 1, limit <= 0.25: FAILED (drift against span 1; en 1 -> 0 of "
            "the characters)") in lines["span 2"]
    assert "span 3: check max_duplicate_lines_share = 1, limit <= 0.1: FAILED (absolute)" in lines["span 3"]
    assert "span 4: check max_few_letters_share = 1, limit <= 0.05: FAILED (absolute)" in lines["span 4"]


def test_gate_accept_lets_a_span_through_knowingly_and_it_stays_accepted(ticks):
    root, out = ticks
    code, stderr, states, result, rows = out["span 5 accepted"]
    assert code == 0, stderr[-3000:]
    # CorpusGen's output for span 5 is the failed tick's (cached); the gate decides again, everything after it runs.
    assert _ran(states) == _predicted(rows) == GATE | AFTER_GATE
    assert states["CorpusGen"] == "CACHED"
    gate_row = next(r for r in rows if r.node == "DataGate")
    assert "setting gate.accept: None → 5" in gate_row.reasons
    assert (result["passed"], result["accepted"]) == (0, 1)
    summary, _, _, _ = _files(result)
    assert (summary["accepted_by"], summary["failed"]) == ("gate.accept=5", BAD_SPANS["span 5"])
    assert ("albert-pipeline: warning: data gate: span 5 failed 2 of 17 checks and goes through, accepted with "
            "gate.accept=5: span 5: check max_previous_exact_duplicate_share = 1") in stderr
    # The report and the card of the model trained on it (pushed as version 2; span 1's is version 1) say so, with
    # the failed checks' values and limits. The benchmarks are off here: no contamination was measured.
    verdict = ("Span 5 FAILED 2 of 17 checks of the data gate (max_previous_exact_duplicate_share, "
               "max_previous_near_duplicate_share) and was accepted knowingly with gate.accept=5: the model was "
               "pretrained on a span the gate did not pass (drift checked against span 1, the last span that went "
               "through the gate).")
    not_measured = "Benchmark contamination: not measured (no reading benchmark's data, SQuAD or RACE, in this run)."
    card = (root / "out" / "pipeline_root" / "releases" / "2" / "model_card.md").read_text(encoding="utf-8")
    assert card.split("\n## Data gate\n\n", 1)[1].split("\n## ", 1)[0] == (
        f"{verdict}\n\n| failed check | value | limit | margin |\n|---|---|---|---|\n"
        "| max_previous_exact_duplicate_share | 1 | <= 0.05 | -0.95 |\n"
        f"| max_previous_near_duplicate_share | 1 | <= 0.1 | -0.9 |\n\n{not_measured}\n")
    reports = [r.read_text(encoding="utf-8").split("\n## Data gate\n\n", 1)[1].split("\n## ", 1)[0]
               for r in (root / "out" / "pipeline_root" / "BenchmarkReport" / "report").glob("*/report.md")]
    [section] = [r for r in reports if r.startswith(verdict)]
    assert section.startswith(f"{verdict}\n\n| statistic | span 5 | span 1 (baseline) |\n")
    assert "| max_previous_exact_duplicate_share | drift | 1 | <= 0.05 | -0.95 | FAILED, accepted |" in section
    assert section.endswith(f"\n\n{not_measured}\n")
    # The next tick without the setting: the earlier acceptance of the same data is DataGate's input; the gate
    # decides once more (accepted), the report shows its new result, and everything else after it is a cache hit,
    # the release aside (it decides once more against the model the last tick blessed: docs/release.md).
    code, stderr, states, again, rows = out["span 5 again"]
    assert code == 0, stderr[-3000:]
    assert _ran(states) == _predicted(rows) == GATE | {"BenchmarkReport", "Blesser", "Pusher"}
    assert len([r for r in reports if r.startswith(
        "Span 5 FAILED 2 of 17 checks of the data gate (max_previous_exact_duplicate_share, "
        "max_previous_near_duplicate_share) and was accepted knowingly with gate.accept=5 in an earlier run (its "
        f"result: {result['uri']}): the model was pretrained on a span the gate did not pass")]) == 1
    assert (again["passed"], again["accepted"]) == (0, 1) and again["uri"] != result["uri"]
    assert _files(again)[0]["accepted_by"] == f"gate.accept=5 in an earlier run (its result: {result['uri']})"
    baseline_row = next(r for r in rows if r.node == "DataGateBaseline")
    assert baseline_row.reasons[0].startswith("span 5: baseline span 1 (artifact ")
    assert "; accepted in an earlier run (artifact " in baseline_row.reasons[0]


def test_an_empty_span_stops_at_corpus_gen(ticks):
    root, out = ticks
    code, stderr, states, result, _ = out["span 6"]
    assert code == 2 and result is None
    assert states == {"WikipediaImporter": "COMPLETE", "LatestBlessedModel": "COMPLETE", "CorpusGen": "FAILED"}
    assert "no documents survived ingestion (inputs empty or all too short; skipped: {\"wikipedia\": " \
           "{\"duplicate_documents\": 0, \"empty_files\": 0, \"short_documents\": 3}})" in stderr


# -- the shell, directly ---------------------------------------------------------------------------------------

def _documents_folder(folder, docs):
    """A CorpusGen-shaped folder (one shard) holding ``docs``."""
    from components.text.documents import to_text_block

    os.makedirs(folder)
    with open(os.path.join(folder, "documents-00000-of-00001.txt"), "w", encoding="utf-8") as f:
        f.write("".join(to_text_block(d) for d in docs))
    return str(folder)


def test_the_gate_stops_an_empty_span_on_min_documents(tmp_path):
    from tensorflow_metadata.proto.v0 import anomalies_pb2

    from components.datagate import datagate_beam
    from components.datagate import datagate_result

    summary = datagate_beam.gate_documents(_documents_folder(tmp_path / "docs", []), str(tmp_path / "r"), span=7)
    assert (summary["documents"], summary["failed"], summary["passed"]) == (0, ["min_documents"], False)
    with open(tmp_path / "r" / "anomalies.pb", "rb") as f:
        assert anomalies_pb2.Anomalies.FromString(f.read()).data_missing
    with pytest.raises(datagate_result.DataGateError) as info:
        datagate_result.verdict(summary, str(tmp_path / "r"))
    assert str(info.value).splitlines()[1:] == [
        "span 7: check min_documents = 0, limit >= 1: FAILED (absolute; first span: no baseline, drift not checked)"]


def test_contamination_counts_the_reading_dev_passages_found_in_the_span(tmp_path):
    from components.datagate import datagate_beam
    from components.evaluation.squad.reading import load_squad_json
    from components.text.documents import make_document

    squad = os.path.join(REPO, "data", "sample", "squad", "dev-v1.1-sample.json")
    passages = datagate_beam.dev_passages([squad], os.path.join(REPO, "data", "sample", "race"))
    context = load_squad_json(squad)[0]["paragraphs"][1]["context"]
    docs = [make_document("a", "corpus", "a", ["Some words of our own before the copied paragraph.", context]),
            make_document("b", "corpus", "b", ["An unrelated document about the weather in spring. " * 5])]
    summary = datagate_beam.gate_documents(_documents_folder(tmp_path / "docs", docs), str(tmp_path / "r"), span=1,
                                           passages=passages)
    n_squad = sum(len(a["paragraphs"]) for a in load_squad_json(squad))
    n_race = sum(p[0].startswith("race:") for p in passages)
    assert len(passages) == n_squad + n_race and n_race > 0
    found = ["squad:dev-v1.1-sample.json:0:1"]
    assert summary["contamination"] == {
        "passages": len(passages), "short": 0, "contaminated": found, "share": 1 / len(passages),
        "total": found, "total_share": 1 / len(passages), "total_spans": [1],  # no baseline: this span's alone
        "benchmarks": {"race": {"passages": n_race, "short": 0, "contaminated": [], "share": 0.0, "total": [],
                                "total_share": 0.0},
                       "squad": {"passages": n_squad, "short": 0, "contaminated": found, "share": 1 / n_squad,
                                 "total": found, "total_share": 1 / n_squad}}}
    check = summary["checks"][-1]
    assert (check["name"], check["value"], check["limit"], check["passed"]) == (
        "max_contaminated_share", 1 / len(passages), 1.0, True)  # measured and reported: the default limit is 1


def test_contamination_combine_fn_pickles_the_passage_files_not_their_texts(tmp_path, monkeypatch):
    """Beam pickles the CombineFn several times (bz2): it carries the dev sets' files and the passages' digest, and a
    process that did not build the pipeline reads the files again, to the same result; changed files are an error."""
    import pickle

    from components.datagate import datagate_beam
    from components.datagate.contamination import ContaminationCombiner, DevNgrams
    from components.evaluation.squad.reading import load_squad_json
    from components.text.documents import make_document

    squad = str(tmp_path / "dev-v1.1.json")
    shutil.copy(os.path.join(REPO, "data", "sample", "squad", "dev-v1.1-sample.json"), squad)
    passages = datagate_beam.dev_passages([squad], os.path.join(REPO, "data", "sample", "race"))
    context = load_squad_json(squad)[0]["paragraphs"][1]["context"]
    docs = [make_document("a", "corpus", "a", ["Words of our own.", context]),
            make_document("b", "corpus", "b", ["An unrelated document about the weather in spring. " * 5])]
    expected = ContaminationCombiner(DevNgrams(passages), ["race:x"]).compute(docs)
    assert expected.contaminated == ("squad:dev-v1.1.json:0:1",)

    def in_a_new_process(fn):  # unpickled where neither the passages nor their n-grams were seen
        monkeypatch.setattr(datagate_beam, "_PASSAGES", {})
        monkeypatch.setattr(datagate_beam, "_DEV_NGRAMS", {})
        return pickle.loads(pickle.dumps(fn))

    fn = datagate_beam._ContaminationFn(passages, ["race:x"])
    data = pickle.dumps(fn)
    assert len(data) < 4096 and context[:40].encode() not in data
    assert pickle.loads(data)._get().compute(docs) == expected  # this process: the passages it was given
    assert in_a_new_process(fn)._get().compute(docs) == expected  # another: read from the files
    plain = datagate_beam._ContaminationFn(list(passages), ["race:x"])  # no files: the texts travel
    assert context[:40].encode() in pickle.dumps(plain)
    assert in_a_new_process(plain)._get().compute(docs) == expected
    articles = load_squad_json(squad)
    articles[0]["paragraphs"][0]["context"] += " One more sentence."
    with open(squad, "w") as f:
        json.dump({"data": articles}, f)
    with pytest.raises(ValueError, match="dev passages changed"):
        in_a_new_process(fn)._get()


# -- configuration and cache keys ------------------------------------------------------------------------------

def test_the_gate_section_holds_gate_limits_under_the_same_names_and_defaults():
    import dataclasses

    from components.datagate.checks import GateLimits
    from components.datagate.gate_config import GateConfig

    assert GateConfig().limits() == dataclasses.asdict(GateLimits())
    assert GateConfig(accept=3).params() == {**dataclasses.asdict(GateLimits()), "accept": 3}


def test_the_gate_moves_no_other_nodes_cache_key():
    """The DAG with the gate and without (``gate.enabled=false``: the DAG as before the gate): every other node's
    compiled IR is the same but for its list of upstream / downstream nodes, which no cache key reads (VocabGen
    waits for DataGateCheck, the Trainer for ExamplesGate), and the report's one more input, the gate's result (its "Data gate" section); so a
    store made before the gate serves every node but the gate's and the report's from its cache (and without the
    gate, the report's too: its optional input left out, its IR and executor are as before)."""
    from tfx.dsl.compiler import compiler

    from pipeline.settings.configs import build_config
    from pipeline.pipeline import create_pipeline

    def nodes(overrides):
        ir = compiler.Compiler().compile(create_pipeline(build_config("sample", overrides=overrides)))
        return ir, {n.pipeline_node.node_info.id: n.pipeline_node for n in ir.nodes}

    (on_ir, on), (off_ir, off) = nodes([]), nodes(["gate.enabled=false"])
    assert set(on) - set(off) == {"DataGateBaseline", "DataGate", "DataGateCheck", "ExamplesGate"}
    assert set(off) <= set(on)
    assert on_ir.pipeline_info == off_ir.pipeline_info
    assert list(on["VocabGen"].upstream_nodes) == ["CorpusGen", "DataGateCheck"]
    assert sorted(on["Trainer"].upstream_nodes) == ["ExamplesGate", "PretrainingDataGen"]
    assert on["BenchmarkReport"].inputs.inputs["data_gate"].channels[0].producer_node_query.id == "DataGate"
    assert "data_gate" not in off["BenchmarkReport"].inputs.inputs
    for node_id, node in off.items():
        with_gate = type(node)()
        with_gate.CopyFrom(on[node_id])
        if node_id == "BenchmarkReport":
            del with_gate.inputs.inputs["data_gate"]
        for pn in (with_gate, node):
            del pn.upstream_nodes[:]
            del pn.downstream_nodes[:]
        assert with_gate == node, node_id
    on_specs, off_specs = _executor_specs(on_ir), _executor_specs(off_ir)  # the executor spec is in the key too
    assert set(on_specs) - set(off_specs) == {"DataGate", "DataGateCheck", "ExamplesGate"}
    assert all(on_specs[k] == spec for k, spec in off_specs.items())


def _executor_specs(ir):
    from tfx.orchestration.local import runner_utils

    return dict(runner_utils.extract_local_deployment_config(ir).executor_specs)


def test_the_baseline_is_the_newest_lower_span_through_the_gate_and_an_acceptance_is_of_the_same_data():
    from components.datagate.datagate_result import data_fingerprint, gate_span, select_inputs

    def snapshot(span, fingerprint):
        return json.dumps({"wikipedia": {"spans": [span], "fingerprint": fingerprint}, "books": {"spans": []}})

    results = [{"id": 3, "span": 1, "passed": 1, "accepted": 0},
               {"id": 5, "span": 2, "passed": 0, "accepted": 0},  # failed: never a baseline
               {"id": 7, "span": 2, "passed": 0, "accepted": 1, "data_fingerprint": data_fingerprint(snapshot(2, "b"))},
               {"id": 9, "span": 4, "passed": 1, "accepted": 0},  # a later span (a backfill of 3 runs after it)
               {"id": 11, "span": 0, "passed": 1, "accepted": 0}]  # an unpatterned read: no order
    assert gate_span(snapshot(3, "c")) == 3 and gate_span(None) == 0
    assert select_inputs(snapshot(3, "c"), results) == {"span": 3, "baseline": 7, "acceptance": None}
    assert select_inputs(snapshot(2, "b"), results) == {"span": 2, "baseline": 3, "acceptance": 7}
    assert select_inputs(snapshot(2, "b2"), results) == {"span": 2, "baseline": 3, "acceptance": None}  # re-export
    assert select_inputs(snapshot(1, "a"), results) == {"span": 1, "baseline": None, "acceptance": None}
    unpatterned = json.dumps({"wikipedia": {"spans": [], "fingerprint": "x"}})
    assert select_inputs(unpatterned, results) == {"span": 0, "baseline": None, "acceptance": None}


def test_contamination_counts_every_dev_example_of_the_glue_nodes_tasks():
    """Issue 63: GLUE's (and CLUE's, and task specs') dev examples are passages too, one per example, read with the
    GLUE node's readers; most GLUE sentences are short (no 13-gram). An RTE dev sentence in the corpus is found."""
    from components.datagate import datagate_beam
    from components.datagate.contamination import ContaminationCombiner, DevNgrams
    from components.text.documents import make_document

    glue = os.path.join(REPO, "data", "sample", "glue")
    passages = datagate_beam.dev_passages(glue_dir=glue)
    assert len(passages) == 400 and passages.files[3] == glue
    assert passages[0] == ("glue:CoLA:dev:dev-0", "The sailors rode the breeze clear of the rocks.")
    rte = dict(passages)["glue:RTE:dev:dev-0"]
    assert rte.startswith("Dana Reeve, the widow of the actor Christopher Reeve, has died of lung cancer")
    corpus = [make_document("d0", "books", "d0", ["Some news first.", rte.split(" Christopher Reeve had")[0]])]
    result = ContaminationCombiner(DevNgrams(passages)).compute(corpus)
    assert (result.passages, result.short, result.contaminated) == (283, 117, ("glue:RTE:dev:dev-0",))
    assert [name for name, _ in result.benchmarks] == ["glue"]
