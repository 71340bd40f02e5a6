"""Every tick of a schedule does the right work (issues 46 and 47), locally: four runs of one configuration on one
data layout, each after ``plan`` predicted exactly what it then ran. The configuration continues its last blessed
model (``train.init_from=latest_blessed``), as a schedule that grows one model does, and as the compiled spec's
rehearsed ticks do (tests/test_install_check.py).

The layout: the sample Wikipedia dump as span 1 of ``wiki/span-{SPAN}`` (the corpus's location is the pattern), and
an unpatterned copy of the GLUE sample. The configuration is tests/test_change_impact.py's small DAG less RACE
(one benchmark is enough to show which ticks rerun the benchmarks; tests/test_install_check.py rehearses the same
ticks, and each task there costs a process start of TFX's entrypoint).

1. span 1 (the sample dump), no blessed model yet: every node runs, the Trainer from scratch; version 1;
2. nothing new: no node before the Blesser runs (its one re-decision after the first blessing: docs/release.md),
   nothing is pushed, although the latest blessed model changed since tick 1 (the Trainer's base resolves to what
   tick 1's Trainer started from: the same parameters, a cache hit);
3. span 2 lands (the dump less its last article): the Wikipedia Importer registers it, CorpusGen and everything
   downstream run; the benchmark data's Importers reuse their artifacts; the Trainer continues version 1 for
   ``train.num_train_steps`` more steps, the Blesser compares the result with it, and version 2's card says
   "continued from version 1";
4. one file of the unpatterned GLUE folder changes in place: only the GLUE benchmark, the report and the release run.
"""
from __future__ import annotations

import json
import os
import shutil

import pytest

from tests.conftest import REPO
from tests.test_change_impact import BASE, EXAMPLES, GATE, IMPORTERS, RELEASE, RESOLVERS, _last_run

SAMPLE = os.path.join(REPO, "data", "sample")
CORPUS_DOWN = {"CorpusGen", "VocabGen", "PretrainingDataGen", "Trainer", "GlueBenchmark", "BenchmarkReport"} | RELEASE \
    | GATE | EXAMPLES
# Span 2 is span 1 less an article, so 18 of its 19 documents repeat span 1's: the data gate stops such a span
# (tests/test_data_gate.py). These ticks are about what reruns, so they let it through.
RESENT_SPAN = ["gate.max_previous_exact_duplicate_share=1", "gate.max_previous_near_duplicate_share=1"]


def _config(root):
    from pipeline.settings.configs import build_config
    from pipeline.settings.resolve import resolve_config

    return resolve_config(build_config("sample", output_dir=str(root / "out"), overrides=BASE + RESENT_SPAN + [
        f"corpus.wikipedia_dir={root / 'data' / 'wiki' / 'span-{SPAN}'}", "train.init_from=latest_blessed",
        f"benchmarks.glue_dir={root / 'data' / 'glue'}", "benchmarks.race_dir=null"]), local=True)


def _tick(root):
    """(config, plan's WILL RUN nodes, plan's importer lines, the nodes the run then executed (Importers aside),
    the Importers' artifact ids, the versions pushed, plan's costs, what the run's report says it read)."""
    from pipeline.local.local_runner import run_local
    from pipeline.local.plan import plan

    config = _config(root)
    rows = plan(config)
    predicted = {r.node for r in rows if r.status == "WILL RUN"} - IMPORTERS - RESOLVERS
    lines = {r.node: r.reasons[0] for r in rows if r.node in IMPORTERS and r.reasons}
    run_local(config)
    states, imported = _last_run(config.metadata_path)
    executed = {n for n, s in states.items() if s == "EXECUTED"} - IMPORTERS
    costs = {r.node: r.last_seconds for r in rows if r.status == "WILL RUN" and r.node not in IMPORTERS}
    read = _newest_results(config)["summary"]["data_read"]
    return config, predicted, lines, executed, imported, _versions(config), costs, read


def data_layout(root):
    """Span 1 of ``wiki/span-{SPAN}`` (the sample dump) and an unpatterned copy of the GLUE sample."""
    shutil.copytree(os.path.join(SAMPLE, "wikipedia"), root / "data" / "wiki" / "span-1")
    shutil.copytree(os.path.join(SAMPLE, "glue"), root / "data" / "glue")


def add_span_2(root):
    """Span 2: the sample dump less its last article, so new data makes another corpus and another model."""
    import bz2

    name = "enwiki-sample-pages-articles.xml.bz2"
    text = bz2.decompress((root / "data" / "wiki" / "span-1" / name).read_bytes()).decode("utf-8")
    start = text.rindex("<page>")
    end = text.index("</page>", start) + len("</page>")
    (root / "data" / "wiki" / "span-2").mkdir()
    (root / "data" / "wiki" / "span-2" / name).write_bytes(bz2.compress((text[:start] + text[end:]).encode()))


def change_glue_in_place(root):
    rte = root / "data" / "glue" / "RTE" / "dev.tsv"
    stat = os.stat(rte)
    os.utime(rte, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))  # rewritten in place, same name


# What each tick runs, Importers and the resolver aside (tests/test_install_check.py expects the same of the
# compiled spec's tasks). A GLUE folder changed in place reruns the data gate too: it measures the contamination of
# every benchmark's dev sets (docs/data.md); its check passes, so nothing else before the benchmarks runs.
TICK_RUNS = [CORPUS_DOWN, RELEASE, CORPUS_DOWN, {"GlueBenchmark", "BenchmarkReport"} | RELEASE | GATE]


@pytest.fixture(scope="module")
def ticks(tmp_path_factory):
    root = tmp_path_factory.mktemp("ticks")
    data_layout(root)
    out = [_tick(root)]
    out.append(_tick(root))
    add_span_2(root)
    out.append(_tick(root))
    change_glue_in_place(root)
    out.append(_tick(root))
    return root, out


def _newest_results_path(config):
    import glob

    paths = glob.glob(os.path.join(config.pipeline_root, "BenchmarkReport", "report", "*", "results.json"))
    return max(paths, key=lambda p: int(p.split(os.sep)[-2]))


def _newest_results(config):
    with open(_newest_results_path(config)) as f:
        return json.load(f)


def _version(config, number):
    from components.release.versions import list_versions

    (found,) = [v for v in list_versions(config.push_destination) if v["version"] == number]
    return found


def _export_info(version):
    with open(os.path.join(version["path"], "checkpoint", "export_info.json")) as f:
        return json.load(f)


def _versions(config):
    from components.release.versions import list_versions

    return [v["version"] for v in list_versions(config.push_destination)]


def test_tick_1_reads_span_1_and_runs_every_node(ticks):
    root, out = ticks
    config, predicted, lines, executed, _, versions, costs, _ = out[0]
    assert predicted == executed == TICK_RUNS[0]
    assert set(costs.values()) == {None}  # nothing ran before
    assert config.data_snapshots["wikipedia"]["uri"] == str(root / "data" / "wiki" / "span-1")
    assert config.data_snapshots["wikipedia"]["properties"]["span"] == 1
    assert lines["WikipediaImporter"] == "wikipedia: first read (span 1)"
    assert versions == [1]
    assert config.train.init_from == "scratch"  # nothing blessed yet
    assert "init_from" not in _export_info(_version(config, 1))


def test_tick_2_with_nothing_new_runs_nothing_before_the_blesser_and_pushes_nothing(ticks):
    _, out = ticks
    config, predicted, lines, executed, imported, versions, costs, _ = out[1]
    assert predicted == executed == TICK_RUNS[1]
    assert all(costs[node] is not None and costs[node] >= 0 for node in RELEASE), costs  # the last time, from MLMD
    assert lines == {"WikipediaImporter": "wikipedia: unchanged", "GlueDataImporter": "glue: unchanged"}
    assert imported == out[0][4]  # the same artifacts: the Importers reused them
    assert versions == [1]
    assert config.train.init_from == "scratch"  # what tick 1's Trainer started from: the same parameters


def test_tick_3_reads_the_new_span_and_reruns_the_corpus_and_everything_downstream(ticks):
    root, out = ticks
    config, predicted, lines, executed, imported, versions, costs, read = out[2]
    assert predicted == executed == TICK_RUNS[2]
    assert all(costs[node] is not None for node in CORPUS_DOWN) and costs["Trainer"] > 1, costs
    assert lines["WikipediaImporter"] == "wikipedia: new span 2 (last run read 1)"
    assert lines["GlueDataImporter"] == "glue: unchanged"
    assert config.data_snapshots["wikipedia"]["uri"] == str(root / "data" / "wiki" / "span-2")
    assert imported["WikipediaImporter"] != out[1][4]["WikipediaImporter"]
    assert imported["GlueDataImporter"] == out[1][4]["GlueDataImporter"]
    # The report and the card say what was read: span 2 of the pattern, and the benchmark folders.
    summaries = {key: snap["summary"] for key, snap in config.data_snapshots.items()}
    assert read == summaries and read["wikipedia"]["spans"] == [2] and sorted(read) == ["glue", "wikipedia"]
    assert versions == [1, 2]
    with open(os.path.join(config.push_destination, "2", "model_card.json")) as f:
        assert json.load(f)["data_read"] == summaries
    with open(os.path.join(config.push_destination, "2", "model_card.md")) as f:
        card = f.read()
    assert f"| read: wikipedia | span 2 of {root / 'data' / 'wiki' / 'span-{SPAN}'} (1 files," in card
    # The Trainer continued version 1 on the new span, and the Blesser compared the result with it.
    v1, v2 = _version(config, 1), _version(config, 2)
    assert config.train.init_from == v1["path"]
    steps = config.train.num_train_steps
    info = _export_info(v2)
    assert info["init_from"] == {"location": v1["path"], "version": 1, "steps": steps, "restored": "weights"}
    assert (info["final_step"], info["total_steps"]) == (steps, 2 * steps)
    assert v2["baseline"]["version"] == 1
    assert f"| continued from | version 1 at {v1['path']} ({steps} steps) |" in card
    assert f"| total steps (with the base's) | {2 * steps} |" in card
    report = os.path.join(os.path.dirname(_newest_results_path(config)), "report.md")
    with open(report, encoding="utf-8") as f:
        assert (f"Continued from version 1 at {v1['path']} ({steps} steps, weights restored); {2 * steps} steps "
                "in all.") in f.read()


def test_tick_4_reads_a_benchmark_folder_changed_in_place_and_reruns_its_benchmark_the_gate_and_the_release(ticks):
    _, out = ticks
    config, predicted, lines, executed, imported, versions, costs, read = out[3]
    assert predicted == executed == TICK_RUNS[3]
    assert lines["GlueDataImporter"] == "glue: 1 file changed since the last run"
    assert lines["WikipediaImporter"] == "wikipedia: unchanged"
    assert imported["GlueDataImporter"] != out[2][4]["GlueDataImporter"]
    assert read["glue"]["fingerprint"] != out[2][7]["glue"]["fingerprint"]  # the report names the new data
    assert read["wikipedia"] == out[2][7]["wikipedia"]
    assert versions == [1, 2]  # the Trainer's model is tick 3's, already version 2: not pushed again (docs/release.md)
    assert config.train.init_from == _version(config, 1)["path"]  # the corpus v2 was trained on: v2's own base


def test_a_fixed_span_reads_that_span_and_a_missing_one_names_those_there_are(ticks):
    from config import UserError
    from pipeline.settings.configs import build_config
    from pipeline.settings.resolve import resolve_config

    root, _ = ticks
    overrides = [f"corpus.wikipedia_dir={root / 'data' / 'wiki' / 'span-{SPAN}'}"]

    def local(extra):
        return resolve_config(build_config("sample", overrides=overrides + extra, output_dir=str(root / "o")),
                              local=True)

    config = local(["data.span=1"])
    assert config.data_snapshots["wikipedia"]["uri"] == str(root / "data" / "wiki" / "span-1")
    window = local(["data.span_window=2"])
    assert window.data_snapshots["wikipedia"]["uri"] == str(root / "data" / "wiki")
    assert window.data_snapshots["wikipedia"]["properties"]["folders"] == '["span-1", "span-2"]'
    with pytest.raises(UserError, match=r"no span 7 \(data.span\); there are spans 1, 2"):
        local(["data.span=7"])


# ------------------------------------------------------------------------------------------------ the ticks on gs://
def _snapshot_task_parameters(config, span=0):
    """The DataSnapshot task's input parameters for ``config``, as :func:`pipeline.tasks.snapshot_task.wire` compiles
    them (each location a pipeline parameter ``<key>_dir``) and a run of the spec passes them."""
    from pipeline.tasks import snapshot_task
    from pipeline.settings.configs import CORPUS_KEYS, IMPORTERS

    locations = config.data_inputs()
    settings = {"window": config.data.span_window, "corpus_keys": list(CORPUS_KEYS),
                "consumers": config.data_consumers(),
                "locations": {key: {"parameter": f"{key}_dir", "setting": IMPORTERS[key][1]} for key in locations}}
    return {**{f"{key}_dir": location for key, location in locations.items()}, snapshot_task.SPAN_PARAMETER: span,
            snapshot_task.SETTINGS_PARAMETER: json.dumps(settings, sort_keys=True)}


def test_on_gs_each_tick_resolves_the_latest_span_a_backfill_span_and_data_changed_in_place(gcs, tmp_path):
    """The deployed case: the locations on a bucket, resolved by the DataSnapshot task's own function
    (:func:`pipeline.tasks.snapshot_task.resolve`) through the ``gs://`` stand-in, over the ticks' layout."""
    from apache_beam.io.filesystems import FileSystems

    from config import UserError
    from pipeline.settings.configs import build_config
    from pipeline.tasks.snapshot_task import resolve

    data_layout(gcs / "bucket")  # the objects gs://bucket/data/wiki/span-1/… and gs://bucket/data/glue/…
    wiki, glue = "gs://bucket/data/wiki/span-{SPAN}", "gs://bucket/data/glue"
    config = build_config("sample", output_dir=str(tmp_path / "out"), overrides=BASE + [
        f"corpus.wikipedia_dir={wiki}", f"benchmarks.glue_dir={glue}", "benchmarks.race_dir=null"])
    assert config.data_inputs() == {"wikipedia": wiki, "glue": glue}
    name = "enwiki-sample-pages-articles.xml.bz2"
    dump = os.path.join(SAMPLE, "wikipedia", name)

    def tick(span=0):
        out = resolve(_snapshot_task_parameters(config, span))
        return out, {key: json.loads(out[f"{key}_snapshot"]) for key in ("wikipedia", "glue")}

    # Tick 1: span 1, the only one.
    first, snap = tick()
    assert sorted(first) == ["CorpusGen_data", "GlueBenchmark_data", "glue_snapshot", "glue_uri", "wikipedia_snapshot",
                             "wikipedia_uri"]
    assert first["wikipedia_uri"] == "gs://bucket/data/wiki/span-1" and first["glue_uri"] == glue
    wikipedia = snap["wikipedia"]
    assert (wikipedia["location"], wikipedia["spans"], wikipedia["folders"]) == (wiki, [1], [""])
    assert (snap["wikipedia"]["files"], snap["wikipedia"]["bytes"]) == (1, os.path.getsize(dump))
    glue_files = sorted(os.path.relpath(os.path.join(d, n), os.path.join(SAMPLE, "glue"))
                        for d, _, names in os.walk(os.path.join(SAMPLE, "glue")) for n in names)
    assert snap["glue"]["files"] == len(glue_files) and snap["glue"]["spans"] == []
    assert json.loads(first["CorpusGen_data"]) == {"wikipedia": snap["wikipedia"]}
    assert json.loads(first["GlueBenchmark_data"]) == {"dataset": snap["glue"]}
    # Tick 2: nothing new, the same values (every task downstream a cache hit).
    assert tick()[0] == first
    # Tick 3: span 2 lands; an empty local folder is no span (an object store has no empty folders).
    add_span_2(gcs / "bucket")
    (gcs / "bucket" / "data" / "wiki" / "span-9").mkdir()
    third, snap3 = tick()
    assert third["wikipedia_uri"] == "gs://bucket/data/wiki/span-2" and snap3["wikipedia"]["spans"] == [2]
    assert snap3["wikipedia"]["fingerprint"] != snap["wikipedia"]["fingerprint"]
    assert third["CorpusGen_data"] != first["CorpusGen_data"]
    assert third["glue_snapshot"] == first["glue_snapshot"]
    assert third["GlueBenchmark_data"] == first["GlueBenchmark_data"]
    # A backfill of span 1 reads what tick 1 read, to the fingerprint; a span that is not there names those there are.
    assert tick(span=1)[0] == first
    with pytest.raises(UserError, match=r"^config corpus\.wikipedia_dir='gs://bucket/data/wiki/span-\{SPAN\}': no span "
                                        r"7 \(data\.span\); there are spans 1, 2$"):
        tick(span=7)
    # Tick 4: one GLUE object's time changes (rewritten in place, same name): the GLUE values change, the corpus's not.
    change_glue_in_place(gcs / "bucket")
    fourth, snap4 = tick()
    assert snap4["glue"]["fingerprint"] != snap3["glue"]["fingerprint"]
    assert (snap4["glue"]["files"], snap4["glue"]["bytes"]) == (snap3["glue"]["files"], snap3["glue"]["bytes"])
    assert fourth["GlueBenchmark_data"] != third["GlueBenchmark_data"]
    assert (fourth["wikipedia_uri"], fourth["CorpusGen_data"]) == (third["wikipedia_uri"], third["CorpusGen_data"])
    # Tick 5: span 2's dump rewritten through the bucket's own writer, one byte shorter: a new fingerprint and size.
    path = f"gs://bucket/data/wiki/span-2/{name}"
    with FileSystems.open(path, compression_type="uncompressed") as f:
        data = f.read()
    with FileSystems.create(path, compression_type="uncompressed") as f:
        f.write(data[:-1])
    fifth, snap5 = tick()
    assert fifth["wikipedia_uri"] == "gs://bucket/data/wiki/span-2"
    assert snap5["wikipedia"]["bytes"] == snap4["wikipedia"]["bytes"] - 1
    assert snap5["wikipedia"]["fingerprint"] != snap4["wikipedia"]["fingerprint"]
    assert fifth["glue_snapshot"] == fourth["glue_snapshot"]
