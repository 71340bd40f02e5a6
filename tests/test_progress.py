"""Beam counters (what Dataflow shows live) in ingestion and data generation agree with the files they summarise."""
import os

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions

from components.corpus import corpus_beam
from components.datagen.generate import tokenize_document
from components.datagen.datagen_beam import read_documents
from components.datagen.datagen_tool import beam_counters, make_pretraining_data
from components.text.tokenization import AlbertTokenizer
from pipeline.settings.configs import build_config

FIXTURE = os.path.join(os.path.dirname(__file__), "fixtures", "datagen_text.txt")


def test_ingestion_counters_match_counts_json(tmp_path, sample_dir):
    inputs = corpus_beam.list_inputs(os.path.join(sample_dir, "wikipedia"), "*pages-articles*.xml*",
                                     os.path.join(sample_dir, "books"), "**/*.txt")
    p = beam.Pipeline(options=PipelineOptions(["--runner=DirectRunner", "--direct_running_mode=in_memory"]))
    corpus_beam.build_corpus(p, inputs, str(tmp_path / "out"), num_shards=2, min_chars=200)
    result = p.run()
    result.wait_until_finish()
    counters = beam_counters(result, "albert.corpus")
    counts = corpus_beam.read_counts(str(tmp_path / "out"))
    for source, c in counts["per_source"].items():
        for key in ("documents", "sentences", "characters"):
            assert counters[f"{source}_{key}"] == c[key], (source, key)
        skipped = counts["skipped"][source]
        for key in corpus_beam.SKIP_KEYS:
            assert counters.get(f"{source}_skipped_{key}", 0) == skipped[key], (source, key)
    assert counters["wikipedia_files"] == 1 and counters["books_files"] == 2
    read = counters["wikipedia_documents_read"] + counters["books_documents_read"]
    assert read == counts["documents"] + sum(s["duplicate_documents"] for s in counts["skipped"].values())


def test_datagen_counters_match_stats_json(tmp_path, spm_model_path):
    config = build_config("sample", overrides=["datagen.max_seq_length=64", "datagen.max_predictions_per_seq=8",
                                               "datagen.num_shards=2", "datagen.eval_fraction=0.25"])
    counters = {}
    splits = make_pretraining_data([FIXTURE], spm_model_path, str(tmp_path / "out"), config,
                                   counters=counters)["splits"]
    assert counters["files"] == 1 and counters["documents"] == 4 and counters["sentences"] == 48
    assert counters.get("instances_train", 0) == splits["train"]["instances"] > 0
    assert counters.get("instances_eval", 0) == splits["eval"]["instances"]
    assert counters["instance_tokens"] == splits["train"]["tokens"] + splits["eval"]["tokens"]
    # Every document's own tokens, once, whether it was tokenized here or viewed inside the random-document pool.
    tokenizer = AlbertTokenizer(spm_model_path, do_lower_case=config.vocab.do_lower_case)
    expected = sum(tokenize_document(tokenizer, sentences).num_tokens for _, sentences in read_documents(FIXTURE))
    assert counters["input_tokens"] == expected


def test_trainer_progress_line_has_losses_throughput_and_eta():
    from trainer.run_state import progress_line

    line = progress_line(100, 1000, {"loss": 3.2, "mlm_loss": 2.9, "sentence_loss": 0.69, "learning_rate": 1e-3,
                                     "sequences_per_sec": 64.0, "_batch": 32})
    # 900 steps left at 64 / 32 = 2 steps/s → 450 s.
    assert line == "step 100/1000 loss 3.2000 mlm 2.9000 sentence 0.6900 lr 0.001 64.0 seq/s ETA 0:07:30"
