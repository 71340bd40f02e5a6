"""``benchmarks/data_gate.py``'s own pieces, tiny: the gate's step in its own process, measured by the script's
launcher, on a hand-written span of CorpusGen's format; and the measured sample's rate from the shards' bytes
(``components/datagate/datagate_beam.py``). The nodes' work itself is tested in tests/test_data_gate.py and
tests/test_datagate_core.py; the numbers are in benchmarks/results/data_gate/README.md."""
import json
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SENTENCES = [f"This is sentence number {i} of a small document about nothing in particular." for i in range(60)]


def _span(folder):
    """Two documents in one CorpusGen shard (one sentence per line, a blank line between documents)."""
    os.makedirs(folder)
    path = os.path.join(folder, "documents-00000-of-00001.txt")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(SENTENCES[:30]) + "\n\n" + "\n".join(SENTENCES[30:]) + "\n")
    return path


def test_the_gate_step_runs_in_its_own_process_and_is_measured(tmp_path):
    """The gate step with contamination (``--squad``): the child process reads the span's three documents, one of
    them a copy of a bundled SQuAD dev paragraph, against the twelve paragraphs of the bundled dev file; what it
    printed (in the log), wrote (gate.json, the statistics) and the launcher measured must agree with that."""
    from benchmarks.data_gate import gate_command, measure
    from components.datagate.datagate_beam import read_statistics

    squad = os.path.join(ROOT, "data", "sample", "squad", "dev-v1.1-sample.json")
    with open(squad, encoding="utf-8") as f:
        articles = json.load(f)["data"]
    paragraphs = sum(len(a["paragraphs"]) for a in articles)
    copied = articles[0]["paragraphs"][1]["context"]  # one line: a document of one sentence
    documents = str(tmp_path / "documents")
    shard = _span(documents)
    with open(shard, "a", encoding="utf-8") as f:
        f.write("\n" + copied + "\n")
    log = str(tmp_path / "log.txt")
    usage = measure(gate_command(documents, str(tmp_path / "gate"), {"squad": squad}), log)
    with open(log, encoding="utf-8") as f:
        printed = [json.loads(line) for line in f if line.startswith("{")]
    with open(tmp_path / "gate" / "gate.json") as f:
        summary = json.load(f)
    assert printed == [{"documents": 3, "passed": summary["passed"], "passages": paragraphs}] and paragraphs == 12
    assert (summary["documents"], summary["characters"]) == (3, sum(map(len, SENTENCES)) + len(copied))
    assert summary["contamination"]["passages"] == paragraphs
    assert summary["contamination"]["contaminated"] == [f"squad:{os.path.basename(squad)}:0:1"]
    stats = read_statistics(str(tmp_path / "gate"))
    assert (stats.sample_rate, stats.read_counts(), stats.total().counts["documents"]) == (
        1.0, {"documents": 3, "characters": sum(map(len, SENTENCES)) + len(copied)}, 3)
    # The launcher measured the child (which imports Beam and runs a pipeline: seconds of CPU, 100s of MiB), not
    # itself (a few hundredths of a second, ~10 MiB); one process's CPU time fits in its wall time times the cores.
    assert sorted(usage) == ["cpu_s", "load_1min", "peak_rss_mib", "wall_s"]
    assert usage["cpu_s"] >= 1.0 and usage["peak_rss_mib"] > 100
    assert usage["cpu_s"] <= usage["wall_s"] * os.cpu_count() + 0.1


def test_the_launcher_reports_the_commands_own_cpu_wall_and_memory(tmp_path):
    """``measure`` on commands of known cost: a busy loop of 1.5 CPU seconds holding 300 MiB, then a sleep of 1.5 s.
    A mix-up of the fields (CPU for wall time, the launcher's usage for the command's, KiB for MiB) fails here."""
    import sys

    import pytest

    from benchmarks.data_gate import measure

    log = str(tmp_path / "log.txt")
    busy = ("import time\nx = bytearray(300 * 2**20)\nfor i in range(0, len(x), 4096): x[i] = 1\n"
            "while time.process_time() < 1.5: pass\nprint('done')")
    usage = measure([sys.executable, "-c", busy], log)
    assert 1.5 <= usage["cpu_s"] < 3.0 and usage["wall_s"] >= usage["cpu_s"] - 0.2  # one thread
    assert 300 <= usage["peak_rss_mib"] < 450
    usage = measure([sys.executable, "-c", "import time; time.sleep(1.5)"], log)
    assert usage["wall_s"] >= 1.5 and usage["cpu_s"] < 0.5 and usage["peak_rss_mib"] < 100
    with open(log) as f:
        assert f.read() == "done\n"
    with pytest.raises(SystemExit, match=f"failed with exit code 3; see {log}"):
        measure([sys.executable, "-c", "raise SystemExit(3)"], log)


def test_the_measured_share_is_the_budget_over_the_shards_bytes(tmp_path):
    from components.datagate.datagate_beam import measured_rate

    shard = _span(str(tmp_path / "documents"))
    size = os.path.getsize(shard)
    assert size == 4_551
    assert measured_rate([shard], measured_characters=1_517) == 1 / 3
    assert measured_rate([shard], measured_characters=size) == 1.0
    assert measured_rate([shard]) == 1.0  # the default budget: 4 M characters
    assert measured_rate([]) == 1.0
