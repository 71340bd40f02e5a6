"""The card's metadata tells the truth about a run: its language, each task under its own benchmark family and task
type, each score named by the metrics that make it; and Hugging Face's own parser reads it (``huggingface_hub``,
from the test-only folder the parity tests use)."""
from components.release import model_card
from components.release.package import _score_metric
from tests.conftest import hf_peer

SCORES = {"AFQMC": 71.5, "TNEWS": 55.25, "CMRC2018": 60.0, "C3": 58.5, "YNAT": 80.0, "RTE": 66.0, "RACE": 40.0,
          "SQuAD1.1": 75.0}


def _facts(language="zh"):
    return {"license": "apache-2.0", "name": "albert-tfx-sample-zh", "language": language,
            "corpus": {"sources": ["books"]},
            "benchmarks": {"scores": SCORES, "metrics": {t: _score_metric(t) for t in SCORES}}}


def test_each_task_is_filed_under_its_own_family_with_its_metric():
    header = model_card.header(_facts())
    assert header["language"] == ["zh"]
    filed = {r["dataset"]["name"]: (r["task"]["type"], r["dataset"]["type"], r["dataset"].get("config"),
                                    r["metrics"][0]["name"]) for r in header["model-index"][0]["results"]}
    assert filed == {
        "CLUE AFQMC": ("text-classification", "clue", "afqmc", "AFQMC dev score (accuracy)"),
        "CLUE TNEWS": ("text-classification", "clue", "tnews", "TNEWS dev score (accuracy)"),
        "CMRC2018": ("question-answering", "cmrc2018", None,
                     "CMRC2018 dev score (CMRC2018's character-level f1 + exact_match (mean))"),
        "C3": ("multiple-choice", "c3", None, "C3 dev score (accuracy)"),
        "YNAT": ("text-classification", "ynat", None, "YNAT dev score (the mean of benchmarks.tasks.YNAT.metrics)"),
        "GLUE RTE": ("text-classification", "glue", "rte", "RTE dev score (accuracy)"),
        "RACE": ("multiple-choice", "race", None, "RACE dev score (accuracy)"),
        "SQuAD v1.1": ("question-answering", "squad", None, "SQuAD1.1 dev score (f1 + exact_match (mean))"),
    }
    assert model_card.header(_facts("en"))["language"] == ["en"]


def test_huggingface_hubs_parser_reads_the_evaluation_results():
    hf_peer()  # skips, saying how to install the test-only folder, where it is not there
    from huggingface_hub import ModelCard

    card = ModelCard(model_card.front_matter(_facts()))  # what render() puts first
    results = card.data.eval_results
    assert card.data.language == ["zh"]
    assert {(r.dataset_type, r.task_type, r.metric_value) for r in results} == {
        ("clue", "text-classification", 71.5), ("clue", "text-classification", 55.25),
        ("cmrc2018", "question-answering", 60.0), ("c3", "multiple-choice", 58.5),
        ("ynat", "text-classification", 80.0), ("glue", "text-classification", 66.0),
        ("race", "multiple-choice", 40.0), ("squad", "question-answering", 75.0)}

