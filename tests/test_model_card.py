"""The card's metadata tells the truth about a run: its language, each task under its own benchmark family, dataset
and task type, every metric named by what it is; and Hugging Face's own parser reads it (``huggingface_hub``, from
the test-only folder the parity tests use). Three runs, from result records of the shapes the benchmark nodes write
(``results.json`` of the report: the GLUE node's classification tasks, the SQuAD node's, the RACE node's): an
English run, a Chinese run (CLUE's tasks, CMRC2018, C3) and a run of tasks by spec with a cross-lingual task.
tests/test_eval_cross_lingual.py does the same with the record a real cross-lingual fine-tuning wrote."""
import pytest

from components.release import model_card
from components.release.blessing import task_scores
from components.release.package import _score_metric
from benchmarks import hf_packages

# The tasks' records as the benchmark nodes write them (the keys of metrics.json's "tasks"; other keys elided).
ENGLISH = {
    "glue": {"CoLA": {"mcc": 12.5, "accuracy": 69.0, "score": 12.5, "selection_metric": "mcc"},
             "MRPC": {"f1": 80.25, "accuracy": 70.0, "score": 75.125, "selection_metric": "accuracy"},
             "STS-B": {"pearson": 20.0, "spearman": 18.0, "score": 19.0, "selection_metric": "pearson"},
             "MNLI-m": {"accuracy": 61.0, "score": 61.0, "selection_metric": "accuracy"},
             "MNLI-mm": {"accuracy": 62.0, "score": 62.0, "selection_metric": "accuracy"}},
    "squad": {"SQuAD1.1": {"f1": 10.5, "exact_match": 4.0, "score": 7.25, "selection_metric": "f1"}},
    "race": {"RACE": {"middle": 40.0, "high": 35.0, "all": 38.71, "score": 38.71, "selection_metric": "accuracy"}},
}
CHINESE = {
    "glue": {"AFQMC": {"accuracy": 71.5, "score": 71.5, "selection_metric": "accuracy"},
             "TNEWS": {"accuracy": 55.25, "score": 55.25, "selection_metric": "accuracy"}},
    "squad": {"CMRC2018": {"f1": 62.0, "exact_match": 58.0, "score": 60.0, "selection_metric": "f1"}},
    "race": {"C3": {"d": 50.0, "m": 66.0, "all": 58.5, "score": 58.5, "selection_metric": "accuracy"}},
}


def _language(code):
    return {"accuracy": {"en": 75.0, "de": 62.5, "zh": 50.0}[code], "score": {"en": 75.0, "de": 62.5, "zh": 50.0}[code],
            "selection_metric": "accuracy",
            "cross_lingual": {"task": "PAWS-X", "language": code, "train_language": "en"}}


SPEC = {"glue": {"YNAT": {"macro_f1": 40.0, "accuracy": 50.0, "score": 45.0, "selection_metric": "macro_f1"},
                 **{f"PAWS-X-{c}": _language(c) for c in ("en", "de", "zh")},
                 "PAWS-X": {"accuracy": 62.5, "score": 62.5, "selection_metric": "accuracy",
                            "languages": ["en", "de", "zh"], "train_language": "en",
                            "language_results": ["PAWS-X-en", "PAWS-X-de", "PAWS-X-zh"]}}}


def _facts(tasks_by_node, language):
    """The facts of a run as the Pusher gathers them (components/release/package.py card_facts: ``scores`` and
    ``metrics``; the release node adds ``tasks``), less what the card's metadata does not read."""
    results = {"results": {node: {"tasks": tasks} for node, tasks in tasks_by_node.items()}}
    scores = task_scores(results)
    return {"license": "apache-2.0", "name": f"albert-tfx-{language}", "language": language,
            "corpus": {"sources": {"books": 2}},
            "benchmarks": {"scores": scores, "metrics": {t: _score_metric(t) for t in scores},
                           "tasks": model_card.task_records(results)}}


def _filed(facts):
    return {r["dataset"]["name"]: (r["task"]["type"], r["dataset"]["type"], r["dataset"].get("config"),
                                   [(m["type"], m["value"], m["name"]) for m in r["metrics"]])
            for r in model_card.header(facts)["model-index"][0]["results"]}


def test_an_english_run_files_glue_squad_and_race_with_their_own_metrics():
    assert _filed(_facts(ENGLISH, "en")) == {
        "GLUE CoLA": ("text-classification", "glue", "cola", [
            ("matthews_correlation", 12.5, "CoLA dev Matthews correlation * 100"),
            ("accuracy", 69.0, "CoLA dev accuracy")]),
        "GLUE MRPC": ("text-classification", "glue", "mrpc", [
            ("f1", 80.25, "MRPC dev F1 of label 1"), ("accuracy", 70.0, "MRPC dev accuracy")]),
        "GLUE STS-B": ("text-classification", "glue", "stsb", [
            ("pearsonr", 20.0, "STS-B dev Pearson correlation * 100"),
            ("spearmanr", 18.0, "STS-B dev Spearman correlation * 100")]),
        "GLUE MNLI-m": ("text-classification", "glue", "mnli_matched", [("accuracy", 61.0, "MNLI-m dev accuracy")]),
        "GLUE MNLI-mm": ("text-classification", "glue", "mnli_mismatched",
                         [("accuracy", 62.0, "MNLI-mm dev accuracy")]),
        "SQuAD v1.1": ("question-answering", "squad", None, [
            ("f1", 10.5, "SQuAD1.1 dev F1"), ("exact_match", 4.0, "SQuAD1.1 dev exact match")]),
        "RACE": ("multiple-choice", "race", "all", [("accuracy", 38.71, "RACE dev accuracy over all questions")]),
    }


def test_a_chinese_run_files_clue_with_its_real_metrics():
    facts = _facts(CHINESE, "zh")
    assert model_card.header(facts)["language"] == ["zh"]
    assert _filed(facts) == {
        "CLUE AFQMC": ("text-classification", "clue", "afqmc", [("accuracy", 71.5, "AFQMC dev accuracy")]),
        "CLUE TNEWS": ("text-classification", "clue", "tnews", [("accuracy", 55.25, "TNEWS dev accuracy")]),
        "CLUE CMRC2018": ("question-answering", "clue", "cmrc2018", [
            ("f1", 62.0, "CMRC2018 dev F1 (CMRC2018's character-level)"),
            ("exact_match", 58.0, "CMRC2018 dev exact match (CMRC2018's character-level)")]),
        "CLUE C3": ("multiple-choice", "clue", "c3", [("accuracy", 58.5, "C3 dev accuracy over all questions")]),
    }


def test_a_spec_run_files_each_language_of_a_cross_lingual_task_as_its_own_result():
    facts = _facts(SPEC, "en")
    assert _filed(facts) == {
        "YNAT": ("text-classification", "ynat", None, [("f1", 40.0, "YNAT dev macro-F1"),
                                                       ("accuracy", 50.0, "YNAT dev accuracy")]),
        "PAWS-X (en)": ("text-classification", "paws-x", "en", [("accuracy", 75.0, "PAWS-X-en dev accuracy")]),
        "PAWS-X (de)": ("text-classification", "paws-x", "de", [("accuracy", 62.5, "PAWS-X-de dev accuracy")]),
        "PAWS-X (zh)": ("text-classification", "paws-x", "zh", [("accuracy", 50.0, "PAWS-X-zh dev accuracy")]),
    }
    # The table keeps the mean over the languages and says what each score is.
    card = model_card.render({**facts, "parameters": 1, "albert_config": {}, "pipeline": "p", "version": 1,
                              "source": {"location": "m", "digest": "0" * 64}, "training": {},
                              "benchmarks": {**facts["benchmarks"], "gains": {}, "arm": "random_init",
                                             "protocol": "glue: seeds 1"},
                              "blessing": {"blessed": True, "forced": False, "reason": "no criteria", "checks": []},
                              "artifacts": {}, "limitations": []})
    assert "| PAWS-X | accuracy, the mean over 3 languages (en, de, zh) | 62.50 |" in card
    assert "| PAWS-X-de | accuracy on the de dev set (fine-tuned in en) | 62.50 |" in card
    assert "| YNAT | macro_f1 + accuracy (mean) | 45.00 |" in card


def test_without_task_records_each_task_keeps_its_headline_score():
    facts = _facts(CHINESE, "zh")
    del facts["benchmarks"]["tasks"]
    assert _filed(facts)["CLUE CMRC2018"] == ("question-answering", "clue", "cmrc2018", [
        ("score", 60.0, "CMRC2018 dev score (CMRC2018's character-level f1 + exact_match (mean))")])


@pytest.mark.parametrize("run,language", [(ENGLISH, "en"), (CHINESE, "zh"), (SPEC, "en")], ids=["en", "zh", "spec"])
def test_huggingface_hubs_parser_reads_the_evaluation_results(run, language):
    # huggingface_hub from the test-only folder of the Hugging Face peer (tests/conftest.py hf_peer), without
    # importing torch and transformers (13 s of CPU), which its parser does not need
    hf_packages.use()
    hub = pytest.importorskip("huggingface_hub", reason="the test-only Hugging Face packages are not installed: run "
                              "`TORCH_WHEELS=DIR make install-test` (see README, Two commands)")
    ModelCard = hub.ModelCard

    facts = _facts(run, language)
    card = ModelCard(model_card.front_matter(facts))  # what render() puts first
    assert card.data.language == [language]
    parsed = {(r.dataset_type, r.dataset_config, r.task_type, r.metric_type, r.metric_value, r.metric_name)
              for r in card.data.eval_results}
    expected = {(d, c, t, m, v, n) for name, (t, d, c, metrics) in _filed(facts).items() for m, v, n in metrics}
    assert parsed == expected and len(card.data.eval_results) == len(expected)
