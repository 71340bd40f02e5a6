"""The ``sample-multi`` preset (issue 63): one model for English, Chinese, Japanese, Korean and German.

Its data stages through the product's own code, without TFX: CorpusGen's Beam code (``ingest``) tags the five
bundled books by the language identifier and writes one documents file per language, VocabGen's code learns one
SentencePiece vocabulary for the mix, and PretrainingDataGen's code (``make-pretraining-data``) writes the examples,
masking each file by its language's word starts. Then the whole DAG, ``albert-pipeline run --preset sample-multi``:
pretrained, PAWS-X fine-tuned once in English and scored in each of the run's languages, reported, carded with the
run's languages and pushed, its task model serving raw text in every language as the benchmark predicted."""
import csv
import glob
import json
import os

import numpy as np
import pytest
import sentencepiece as spm
import yaml

from components.corpus.ingest_tool import ingest
from components.datagen.datagen_tool import make_pretraining_data
from components.vocab.vocab_lib import build_vocab
from pipeline.settings import sample_multi
from pipeline.settings.configs import build_config
from tests.conftest import REPO, preset_run_in_process

LANGUAGES = ["en", "zh", "ja", "ko", "de"]
PAWS_X_LANGUAGES = ["en", "de", "zh", "ja", "ko"]  # PAWS-X's order; its fr rows are not a language of the run


def test_sample_multi_tags_splits_learns_one_vocabulary_and_writes_examples(tmp_path):
    config = build_config("sample-multi")
    assert config.language == LANGUAGES and config.corpus.languages == LANGUAGES
    docs = tmp_path / "documents"
    counts = ingest(None, config.corpus.books_dir, str(docs), config.corpus)
    assert {c: v["documents"] for c, v in counts["per_language"].items()} == dict.fromkeys(LANGUAGES, 1)
    assert counts["unlisted_languages"] == {} and counts["documents"] == 5
    assert sorted(os.listdir(docs)) == ["counts.json"] + [f"documents-{c}-00000-of-00001.txt"
                                                          for c in sorted(LANGUAGES)]
    vocab = tmp_path / "vocab"
    vocab.mkdir()
    size, origin = build_vocab(config.vocab, config.seed, str(docs), str(vocab))
    assert (size, origin) == (1500, "trained")
    with open(vocab / "tokenizer.json") as f:
        assert json.load(f)["normalization"] == "nfkc"
    sp = spm.SentencePieceProcessor(model_file=str(vocab / "spm.model"))
    pieces = [sp.id_to_piece(i) for i in range(sp.get_piece_size())]

    def has(lo, hi):
        return any(any(lo <= ord(c) <= hi for c in p) for p in pieces)

    # Every script of the mix has pieces: Hangul syllables, kana, Han, German umlauts beside English.
    assert has(0xAC00, 0xD7A3) and has(0x3040, 0x30FF) and has(0x4E00, 0x9FFF) and any("ü" in p for p in pieces)
    out = tmp_path / "examples"
    stats = make_pretraining_data([str(docs)], str(vocab / "spm.model"), str(out), config)
    train = stats["splits"]["train"]
    assert train["instances"] > 0 and sorted(os.listdir(out / "vocab")) == ["spm.model", "tokenizer.json"]
    # One vocabulary writes every language: the share of [UNK] pieces per language's documents file.
    from components.text.tokenizers import TokenizerSpec, load_tokenizer

    tokenizer = load_tokenizer((vocab / "spm.model").read_bytes(), TokenizerSpec.from_json(
        (vocab / "tokenizer.json").read_text()), "spm.model")
    unk_share = {}
    for code in LANGUAGES:
        lines = (docs / f"documents-{code}-00000-of-00001.txt").read_text(encoding="utf-8").split("\n")
        ids = np.concatenate([np.asarray(tokenizer.encode(line), dtype=np.int64) for line in lines if line])
        unk_share[code] = round(float(np.mean(ids == sp.unk_id())), 4)
    # Korean's few: Hangul syllables seen once fall outside the 0.9995 coverage of the mix.
    assert unk_share == {"en": 0.0, "zh": 0.0, "ja": 0.0, "ko": 0.0032, "de": 0.0}


def test_the_presets_cross_lingual_task_is_the_english_samples_but_for_its_languages():
    """PAWS-X is defined for the English sample in data/sample/cross-lingual.yaml (a user's config file) and for this
    preset in Python: the same spec and fine-tuning settings, scored on the languages the run pretrains on."""
    with open(os.path.join(REPO, "data", "sample", "cross-lingual.yaml"), encoding="utf-8") as f:
        english = yaml.safe_load(f)["benchmarks"]
    config = build_config("sample-multi").benchmarks
    assert config.glue_tasks == ["PAWS-X"] and config.tasks == {"PAWS-X": sample_multi.PAWS_X}
    assert {**english["tasks"]["PAWS-X"], "languages": PAWS_X_LANGUAGES} == sample_multi.PAWS_X
    assert english["hparams"]["PAWS-X"] == config.hparams["PAWS-X"].to_dict()


@pytest.fixture(scope="module")
def multi_run(tmp_path_factory):
    """``albert-pipeline run --preset sample-multi``, in this process (tests/conftest.py's ``cli_in_process``)."""
    return preset_run_in_process(tmp_path_factory, "sample-multi")


def _section(markdown: str, title: str) -> str:
    """The body of the report's or card's ``## TITLE`` section, up to the next section."""
    return markdown.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def _glue_metrics(out):
    (path,) = glob.glob(str(out / "pipeline_root" / "GlueBenchmark" / "result" / "*" / "metrics.json"))
    with open(path, encoding="utf-8") as f:
        return os.path.dirname(path), json.load(f)["tasks"]


@pytest.mark.slow
def test_the_multilingual_sample_runs_every_node_and_scores_paws_x_in_each_language(multi_run):
    out, summary, stderr = multi_run
    assert summary["release"]["version"] == 1 and summary["release"]["blessed"] is True
    finished = [line.split(": ")[1] for line in stderr.splitlines() if line.endswith(" s") and ": finished in " in line]
    assert finished == ["CorpusGen", "DataGate", "DataGateCheck", "VocabGen", "PretrainingDataGen", "ExamplesGate",
                        "Trainer", "GlueBenchmark", "BenchmarkReport", "Blesser", "Pusher"]
    _, tasks = _glue_metrics(out)
    names = [f"PAWS-X-{c}" for c in PAWS_X_LANGUAGES]
    assert sorted(tasks) == sorted(["PAWS-X", *names])
    for code, name in zip(PAWS_X_LANGUAGES, names):
        assert tasks[name]["cross_lingual"] == {"task": "PAWS-X", "language": code, "train_language": "en"}
        assert (tasks[name]["num_train"], tasks[name]["num_dev"]) == (32, 16)
    mean = tasks["PAWS-X"]
    assert (mean["languages"], mean["num_dev"]) == (PAWS_X_LANGUAGES, 80)
    assert mean["accuracy"] == pytest.approx(sum(tasks[n]["accuracy"] for n in names) / 5)
    with open(summary["report"], encoding="utf-8") as f:
        report = f.read()
    rows = [line.split(" | ")[1] for line in _section(report, "Cross-lingual (dev)").splitlines()
            if line.startswith("| PAWS-X |")]
    assert rows == ["en (fine-tuned in)", "de", "zh", "ja", "ko", "mean of 5"]
    assert [line.split(" | ")[0][2:] for line in _section(report, "Languages").splitlines() if line.startswith("| ") and
            line[2:4] in LANGUAGES] == sorted(LANGUAGES)


@pytest.mark.slow
def test_the_card_names_the_runs_languages_and_files_each_paws_x_language(multi_run):
    """The card's ``language:`` is the run's list, its body the report's languages table, and its model-index has
    one PAWS-X result per language (the language its config), as huggingface_hub's parser reads it, each value the
    benchmark's."""
    from benchmarks import hf_packages

    out, summary, _ = multi_run
    _, tasks = _glue_metrics(out)
    hf_packages.use()
    hub = pytest.importorskip("huggingface_hub", reason="the test-only Hugging Face packages are not installed")
    with open(os.path.join(summary["release"]["path"], "model_card.md"), encoding="utf-8") as f:
        card = hub.ModelCard(f.read())
    assert card.data.language == LANGUAGES
    # The report's languages table, the same rows: documents, characters, target and realised shares, instances
    with open(summary["report"], encoding="utf-8") as f:
        report = f.read()
    table = _section(report, "Languages")
    assert table.count("\n| ") == 1 + len(LANGUAGES) and "\n## Languages\n" + table + "\n## " in card.text
    assert sorted((r.dataset_type, r.dataset_config, r.metric_type, r.metric_value)
                  for r in card.data.eval_results) == sorted(
        ("paws-x", code, "accuracy", tasks[f"PAWS-X-{code}"]["accuracy"]) for code in PAWS_X_LANGUAGES)


@pytest.mark.slow
def test_the_paws_x_model_serves_raw_text_in_every_language_as_the_benchmark_predicted(multi_run):
    """The task's raw-text serving model (its tokenizer inside the graph) labels each language's dev pairs as the
    benchmark's prediction files say, row for row: no client-side tokenizer, in any of the five languages."""
    import tensorflow as tf

    out, _, _ = multi_run
    result_dir, tasks = _glue_metrics(out)
    serve = tf.saved_model.load(os.path.join(result_dir, "PAWS-X", "serving_model")).signatures["serving_default"]
    for code in PAWS_X_LANGUAGES:
        with open(os.path.join(REPO, "data", "sample", "glue", "PAWS-X", code, "dev_2k.tsv"), encoding="utf-8") as f:
            rows = list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
        with open(os.path.join(result_dir, tasks[f"PAWS-X-{code}"]["predictions"]), encoding="utf-8") as f:
            predicted = [line.split("\t")[1] for line in f.read().splitlines()[1:]]
        served = serve(text_a=tf.constant([r["sentence1"] for r in rows]),
                       text_b=tf.constant([r["sentence2"] for r in rows]))["label"].numpy()
        assert [label.decode() for label in served] == predicted and len(predicted) == 16, code
