"""Atomic outputs: a failed component publishes nothing a rerun or a downstream step could mistake for output.

Unit level: the staging helpers of ``components.node_shell``. Pipeline level (slow): the DAG on a
truncated Wikipedia dump fails naming the file; MLMD then holds no LIVE Documents artifact and no
downstream execution, the failed execution's URI holds no output files; after the dump is fixed the
same command succeeds.
"""
import os
import re
import shutil

import pytest

from tests.reliability import fixtures, mlmd


pytestmark = pytest.mark.longest_first(13)


def test_staged_output_is_removed_when_the_job_raises(tmp_path):
    from components.file_io import publish
    from components.node_shell import STAGING_PREFIX, staged

    uri = str(tmp_path / "documents" / "7")
    with pytest.raises(RuntimeError, match="worker died"):
        with staged(uri) as staging:
            fixtures.write(os.path.join(staging, "documents-00000-of-00002.txt"), "half a shard")
            raise RuntimeError("worker died")
    assert os.listdir(uri) == []  # nothing named like output, no staging left

    with staged(uri) as staging:
        fixtures.write(os.path.join(staging, "documents-00000-of-00001.txt"), "a\n\n")
        fixtures.write(os.path.join(staging, "Split-train", "data_tfrecord-00000-of-00001.gz"), b"x")
        fixtures.write(os.path.join(staging, ".datagen-spill", "spill-1"), b"y")
        assert os.listdir(uri) == [os.path.basename(staging)] and os.path.basename(staging).startswith(STAGING_PREFIX)
        publish(staging, uri, names=["documents-00000-of-00001.txt", "Split-train"])
    assert sorted(os.listdir(uri)) == ["Split-train", "documents-00000-of-00001.txt"]  # spill dropped
    assert open(os.path.join(uri, "Split-train", "data_tfrecord-00000-of-00001.gz"), "rb").read() == b"x"



def test_a_failure_while_publishing_removes_what_was_moved_and_the_staging(tmp_path, monkeypatch):
    """The TFX components publish with the function ``ingest`` uses (components/file_io.py): the completion marker
    last, and a move that fails after the first file leaves the URI as it was (empty), with no staging folder."""
    from apache_beam.io.localfilesystem import LocalFileSystem

    from components.file_io import PublishError, publish
    from components.node_shell import staged

    uri = str(tmp_path / "examples" / "9")
    moved = fixtures.fail_renames_after_the_first(monkeypatch, LocalFileSystem, "injected: disk full")
    with pytest.raises(PublishError) as info:
        with staged(uri) as staging:
            fixtures.write(os.path.join(staging, "Split-train", "data_tfrecord-00000-of-00002.gz"), b"a")
            fixtures.write(os.path.join(staging, "Split-train", "data_tfrecord-00001-of-00002.gz"), b"b")
            fixtures.write(os.path.join(staging, "examples_info.json"), "{}")
            publish(staging, uri, names=["Split-train", "examples_info.json"], last=["examples_info.json"])
    assert moved == [os.path.join(uri, "Split-train", "data_tfrecord-00000-of-00002.gz")]  # the marker comes last
    assert str(info.value) == (f"publishing {uri} failed after moving 1 of 3 files from {staging} (they were removed "
                               "again: nothing is published; the staging folder was removed): OSError: injected: disk "
                               "full")
    assert os.listdir(uri) == []  # nor the Split-train folder the move created
    monkeypatch.undo()
    with staged(uri) as staging:  # and a second try publishes the whole output, the marker last
        fixtures.write(os.path.join(staging, "examples_info.json"), "{}")
        publish(staging, uri, last=["examples_info.json"])
    assert os.listdir(uri) == ["examples_info.json"]


SMALL = ["corpus.books_dir=none", "benchmarks.glue_dir=none", "benchmarks.squad_dir=none",
         "benchmarks.race_dir=none", "vocab.vocab_size=1000", "datagen.dupe_factor=1", "train.num_train_steps=2",
         "train.num_warmup_steps=0", "train.eval_steps=1", "train.eval_every=0", "train.checkpoint_every=0",
         "train.train_batch_size=8", "train.eval_batch_size=8", "release.raw_text_serving=false"]


@pytest.mark.slow
def test_failed_corpus_run_publishes_nothing_and_rerun_after_fix_succeeds(tmp_path):
    from pipeline.settings.configs import build_config
    from pipeline.local.local_runner import run_local
    from pipeline.settings.resolve import resolve_config

    wiki = tmp_path / "wiki"
    bad = fixtures.truncated_bz2(wiki)
    config = resolve_config(build_config("sample", overrides=SMALL + [f"corpus.wikipedia_dir={wiki}"],
                                         output_dir=str(tmp_path / "out")), local=True)

    # The executor's error, re-raised by Beam as a RuntimeError holding the original's text.
    with pytest.raises(RuntimeError, match=rf"CorruptInputError: \S+/{re.escape(os.path.basename(bad))}: truncated "
                                           r"bz2 data: the file ends at compressed byte 133426, inside stream 1 "):
        run_local(config, runner="beam")

    store = mlmd.open_store(config.metadata_path)
    states = mlmd.states_by_node(store)
    assert states.get("CorpusGen") and "COMPLETE" not in states["CorpusGen"], states
    assert not {"VocabGen", "PretrainingDataGen", "Trainer", "BenchmarkReport"} & set(states), states
    assert "albert_tfx.Documents" not in mlmd.live_artifacts(store)
    docs_root = os.path.join(config.pipeline_root, "CorpusGen", "documents")
    leftovers = [os.path.join(r, f) for r, _, fs in os.walk(docs_root) for f in fs] if os.path.exists(docs_root) else []
    assert leftovers == [], leftovers  # the failed execution's URI holds no shard, no counts, no staging
    failed_ids = {e["id"] for e in mlmd.executions(store)}
    del store

    # Fix the input (same folder, as an operator would) and rerun the same command.
    os.remove(bad)
    shutil.copy(fixtures.WIKI_DUMP, wiki / os.path.basename(fixtures.WIKI_DUMP))
    run_local(config, runner="beam")
    store = mlmd.open_store(config.metadata_path)
    new = {e["node"]: e["state"] for e in mlmd.executions(store) if e["id"] not in failed_ids}
    for node in ("CorpusGen", "VocabGen", "PretrainingDataGen", "Trainer", "BenchmarkReport"):
        assert new.get(node) == "COMPLETE", new
    live = mlmd.live_artifacts(store)
    assert len(live["albert_tfx.Documents"]) == 1
    uri = live["albert_tfx.Documents"][0].uri
    assert sorted(os.listdir(uri)) == ["counts.json", "documents-00000-of-00002.txt", "documents-00001-of-00002.txt"]
    props = live["albert_tfx.Documents"][0].custom_properties
    assert props["wikipedia_documents"].int_value > 10 and "wikipedia_short_documents" in props
