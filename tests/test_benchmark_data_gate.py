"""``benchmarks/data_gate.py``'s own pieces, tiny: the gate's step in its own process, measured by the script's
launcher, on a hand-written span of CorpusGen's format; and the measured sample's rate from the shards' bytes
(``components/datagate/datagate_beam.py``). The nodes' work itself is tested in tests/test_data_gate.py and
tests/test_datagate_core.py; the numbers are in benchmarks/results/data_gate/README.md."""
import json
import os

SENTENCES = [f"This is sentence number {i} of a small document about nothing in particular." for i in range(60)]


def _span(folder):
    """Two documents in one CorpusGen shard (one sentence per line, a blank line between documents)."""
    os.makedirs(folder)
    path = os.path.join(folder, "documents-00000-of-00001.txt")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(SENTENCES[:30]) + "\n\n" + "\n".join(SENTENCES[30:]) + "\n")
    return path


def test_the_gate_step_runs_in_its_own_process_and_is_measured(tmp_path):
    from benchmarks.data_gate import gate_command, measure
    from components.datagate.datagate_beam import read_statistics

    documents = str(tmp_path / "documents")
    _span(documents)
    usage = measure(gate_command(documents, str(tmp_path / "gate"), {}), str(tmp_path / "log.txt"))
    assert sorted(usage) == ["cpu_s", "load_1min", "peak_rss_mib", "wall_s"]
    assert usage["cpu_s"] > 0 and usage["peak_rss_mib"] > 50 and usage["wall_s"] >= usage["cpu_s"] / 2
    with open(tmp_path / "gate" / "gate.json") as f:
        assert json.load(f)["documents"] == 2
    stats = read_statistics(str(tmp_path / "gate"))
    assert (stats.sample_rate, stats.read_counts(), stats.total().counts["documents"]) == (
        1.0, {"documents": 2, "characters": 4_490}, 2)


def test_the_measured_share_is_the_budget_over_the_shards_bytes(tmp_path):
    from components.datagate.datagate_beam import measured_rate

    shard = _span(str(tmp_path / "documents"))
    size = os.path.getsize(shard)
    assert size == 4_551
    assert measured_rate([shard], measured_characters=1_517) == 1 / 3
    assert measured_rate([shard], measured_characters=size) == 1.0
    assert measured_rate([shard]) == 1.0  # the default budget: 4 M characters
    assert measured_rate([]) == 1.0
