"""The data gate's results in the report and the model card (issue 55, items 5 and 6): pure, on small hand-made gate
results.

A result is made the way the DataGate node makes it (``datagate_result.summarize`` of the checks, the statistics
and the contamination), from two tiny spans measured by the core; the report and the card must show its verdict,
its statistics beside the baseline's, every check with value, limit and margin, and the contamination per
benchmark, this span's and in total. Without a gate they say there was none. The real run's numbers:
tests/test_pipeline_e2e.py (the sample run) and tests/test_data_gate.py (ticks through the gate).
"""
import json
import os

import pytest

from components.datagate import datagate_result
from components.report import report_lib
from components.datagate.checks import GateLimits, check_span
from components.datagate.contamination import ContaminationCombiner, DevNgrams
from components.datagate.document_stats import SpanStatsCombiner
from components.release import model_card, package
from components.report import data_gate as gate_text
from components.report.sections import data_gate_section
from components.text.documents import Document
from pipeline.settings.configs import sample_config

WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau".split()


def _doc(doc_id, text):
    return Document(doc_id=doc_id, source="corpus", title=doc_id, sentences=[text])


def _span(span, docs):
    return SpanStatsCombiner(span).compute(docs)


PASSAGES = [("squad:dev.json:0:0", " ".join(WORDS[:15])),  # in span 2 (its first document)
            ("squad:dev.json:0:1", " ".join(reversed(WORDS))),  # in span 1 only: carried into the total
            ("squad:dev.json:0:2", "too short to have a thirteen gram"),
            ("race:high/1", " ".join(WORDS[3:18]) + " and more"),  # in span 2
            ("race:high/2", "nothing of the corpus is in this passage of twenty words at all , not one single "
                            "thirteen gram of it")]


@pytest.fixture(scope="module")
def gate():
    """Span 2, accepted knowingly (gate.accept=2) though it fails a limit, against span 1."""
    baseline = _span(1, [_doc("b1", " ".join(reversed(WORDS)) + " ."), _doc("b2", "one two three four five " * 20)])
    docs = [_doc("a1", " ".join(WORDS) + " ."), _doc("a2", " ".join(WORDS[3:18]) + " and more words here ."),
            _doc("a3", "another plain document of its own with words " * 12)]
    stats = _span(2, docs)
    earlier = ContaminationCombiner(DevNgrams(PASSAGES)).compute([_doc("b1", " ".join(reversed(WORDS)) + " .")])
    assert earlier.contaminated == ("squad:dev.json:0:1",)  # span 1's, which span 2's total carries
    contamination = ContaminationCombiner(DevNgrams(PASSAGES), earlier.total_contaminated).compute(docs)
    # Tiny documents: loose limits but one, which span 2 fails (1.27 times the baseline's characters).
    limits = GateLimits(max_short_share=1.0, max_top_ngrams_share=1.0, max_duplicate_ngrams_share=1.0,
                        max_unigram_jsd=1.0, max_language_mix_distance=1.0, max_volume_ratio=1.2)
    results = check_span(stats, baseline, limits, contamination)
    total = stats.total().counts
    return datagate_result.summarize(
        2, results, documents=total["documents"], characters=total["characters"], accept=2, baseline_span=1,
        contamination=contamination, statistics=stats.summary(), baseline_statistics=baseline.summary(),
        earlier_spans=[1])


def test_the_contamination_is_per_benchmark_and_its_total_carries_the_baselines(gate):
    c = gate["contamination"]
    assert (c["passages"], c["short"], c["contaminated"], c["total"], c["total_spans"]) == (
        4, 1, ["race:high/1", "squad:dev.json:0:0"], ["race:high/1", "squad:dev.json:0:0", "squad:dev.json:0:1"],
        [1, 2])
    assert c["benchmarks"] == {
        "race": {"passages": 2, "short": 0, "contaminated": ["race:high/1"], "share": 0.5, "total": ["race:high/1"],
                 "total_share": 0.5},
        "squad": {"passages": 2, "short": 1, "contaminated": ["squad:dev.json:0:0"], "share": 0.5,
                  "total": ["squad:dev.json:0:0", "squad:dev.json:0:1"], "total_share": 1.0}}
    # What the next span's result carries forward: the total, and the spans it covers.
    assert datagate_result.carried_contamination(gate) == (c["total"], [1, 2])
    assert datagate_result.carried_contamination(None) == ([], [])
    # An earlier id the current dev sets no longer have is dropped from the total.
    again = ContaminationCombiner(DevNgrams(PASSAGES[2:]), c["total"]).compute([])
    assert (again.contaminated, again.total) == ((), ("race:high/1",))


def test_the_report_shows_the_verdict_statistics_checks_and_contamination(gate, tmp_path):
    gate_dir = tmp_path / "gate"
    gate_dir.mkdir()
    (gate_dir / "gate.json").write_text(json.dumps(gate), encoding="utf-8")
    summary = report_lib.write_report(str(tmp_path / "out"), sample_config(), {}, None, None, None, None,
                                      gate_dir=str(gate_dir))
    md = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    section = md.split("## Data gate\n\n", 1)[1].split("\n## ", 1)[0]
    failed = gate["failed"]
    assert failed == ["max_volume_ratio"]
    assert section.startswith(
        "Span 2 FAILED 1 of 18 checks of the data gate (max_volume_ratio) and was accepted knowingly with "
        "gate.accept=2: the model was pretrained on a span the gate did not pass (drift checked against span 1, the "
        "last span that went through the gate).\n\n"
        "| statistic | span 2 | span 1 (baseline) |\n|---|---|---|\n"
        f"| documents | 3 | 2 |\n| characters | {gate['characters']:,} | "
        f"{gate['baseline']['statistics']['characters']:,} |\n")
    s, b = gate["statistics"], gate["baseline"]["statistics"]
    assert f"| mean_word_length | {s['ratios']['mean_word_length']:.4g} | {b['ratios']['mean_word_length']:.4g} |" \
        in section
    en, latin = s["characters_by_language"]["en"], s["characters_by_language"]["latin"]
    assert "latin" not in (en, latin) and set(b["characters_by_language"]) == {"latin"}
    assert (f"| characters_by_language.en | {100 * en / (en + latin):.2f}% | 0.00% |\n"
            f"| characters_by_language.latin | {100 * latin / (en + latin):.2f}% | 100.00% |\n") in section
    volume = next(c for c in gate["checks"] if c["name"] == "max_volume_ratio")
    row = f"| max_volume_ratio | drift | {volume['value']:.4g} | <= 1.2 | {volume['margin']:.4g} | FAILED, accepted |"
    assert row in section
    assert "| min_documents | absolute | 3 | >= 1 | 2 | passed |" in section
    assert ("| benchmark | dev passages (≥ 13 tokens) | too short | contaminated by span 2 | share | contaminated by "
            "spans 1, 2 (total) | share (total) |\n|---|---|---|---|---|---|---|\n"
            "| race | 2 | 0 | 1 | 50.00% | 1 | 50.00% |\n"
            "| squad | 2 | 1 | 1 | 50.00% | 2 | 100.00% |\n"
            "| all | 4 | 1 | 2 | 50.00% | 3 | 75.00% |\n") in section
    assert "![Data gate: document lengths and token frequencies, this span over its baseline](data_gate.png)" in section
    png = tmp_path / "out" / "data_gate.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and summary["files"]["data_gate_plot"] == "data_gate.png"
    assert "data:image/png;base64," in (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    # results.json keeps the result less the statistics; the model card reads it from there.
    brief = summary["data_gate"]
    assert brief == gate_text.brief(gate) and "statistics" not in brief and "statistics" not in brief["baseline"]
    assert {k: v for k, v in brief.items() if k not in ("baseline",)} == {
        k: v for k, v in gate.items() if k not in ("statistics", "baseline")}


def test_without_a_gate_the_report_says_there_was_none(tmp_path):
    summary = report_lib.write_report(str(tmp_path / "out"), sample_config(), {}, None, None, None, None)
    md = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    assert ("## Data gate\n\nNo data gate in this run: the gate is off (gate.enabled=false), so the pretraining data "
            "was neither measured nor checked, and the benchmarks' contamination was not measured.\n") in md
    assert summary["data_gate"] is None and summary["files"]["data_gate_plot"] is None
    assert not os.path.exists(tmp_path / "out" / "data_gate.png")
    assert data_gate_section(None, benchmark_only=True).blocks == [
        "No data gate in this run: a benchmark-only run (mode=benchmark) has no corpus, so the pretraining data was "
        "neither measured nor checked, and the benchmarks' contamination was not measured."]


def test_a_span_that_passed_and_a_result_without_contamination():
    text = ("The river rises in the northern hills, where shepherds once kept their flocks through long winters, "
            "and it runs south past three market towns before reaching the sea. Its valley was settled early; "
            "farmers drained the marshes, millers built weirs, and later engineers cut a canal beside it so that "
            "barges could carry coal, grain and timber inland without waiting for the spring floods to pass.")
    stats = _span(0, [_doc("a", text)])
    results = check_span(stats)
    gate = datagate_result.summarize(0, results, documents=1, characters=stats.total().counts["characters"],
                                     accept=None, statistics=stats.summary())
    blocks = gate_text.section_blocks(gate)
    assert blocks[0] == ("Span 0 passed all 10 checks of the data gate (no baseline: the corpus has no span pattern, "
                         "so only the absolute limits apply).")
    assert blocks[1].header == ["statistic", "span 0"]
    assert blocks[-1] == ("Benchmark contamination: not measured (no reading benchmark's data, SQuAD or RACE, in this "
                          "run).")
    assert gate_text.contamination_table(gate) is None and gate_text.accepted_failures_table(gate) is None


def _card(data_gate_brief):
    decision = {"blessed": True, "forced": False, "reason": "no criteria", "baseline": None, "checks": [],
                "settings": {"baseline_arm": "random_init"}, "scores": {}}
    results = {"summary": {"data_gate": data_gate_brief}} if data_gate_brief != "absent" else {"summary": {}}
    facts = package.card_facts(name="albert-tfx-test", license="apache-2.0", version=1, results=results,
                               export_info={}, run_config={}, decision=decision, documents={}, artifacts={},
                               arm="random_init", hf_note=None)
    return model_card.render(facts)


def test_the_model_card_says_the_span_was_accepted_knowingly_with_its_failed_checks_and_contamination(gate):
    card = _card(gate_text.brief(gate))
    section = card.split("## Data gate\n\n", 1)[1].split("\n## ", 1)[0]
    volume = next(c for c in gate["checks"] if c["name"] == "max_volume_ratio")
    assert section == (
        f"{gate_text.verdict(gate)}\n\n"
        "| failed check | value | limit | margin |\n|---|---|---|---|\n"
        f"| max_volume_ratio | {volume['value']:.4g} | <= 1.2 | {volume['margin']:.4g} |\n\n"
        "| benchmark | dev passages (≥ 13 tokens) | too short | contaminated by span 2 | share | contaminated by "
        "spans 1, 2 (total) | share (total) |\n|---|---|---|---|---|---|---|\n"
        "| race | 2 | 0 | 1 | 50.00% | 1 | 50.00% |\n"
        "| squad | 2 | 1 | 1 | 50.00% | 2 | 100.00% |\n"
        "| all | 4 | 1 | 2 | 50.00% | 3 | 75.00% |\n\n"
        f"{gate_text.contamination_text(gate)}\n")
    assert gate_text.verdict(gate).startswith("Span 2 FAILED 1 of 18 checks of the data gate (max_volume_ratio) and "
                                              "was accepted knowingly with gate.accept=2")
    assert "## Data gate\n\nNo data gate in this run: the gate is off (gate.enabled=false)" in _card(None)
    assert "## Data gate" not in _card("absent")  # a report written before it kept the gate's result
