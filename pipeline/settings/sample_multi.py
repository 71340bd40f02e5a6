"""The ``sample-multi`` preset: one model for several languages on the bundled ``data/sample-multi`` (issue 63)."""
from __future__ import annotations

import os
from typing import Any, Dict

from components.corpus.corpus_config import CorpusConfig
from components.datagen.datagen_config import DataGenConfig
from components.evaluation.benchmark_config import BenchmarkConfig, FinetuneHParams
from components.vocab.vocab_config import VocabConfig
from pipeline.settings.home import PROJECT_HOME
from trainer.trainer_config import ModelConfig, TrainConfig

SAMPLE_MULTI_DATA = os.path.join(PROJECT_HOME, "data", "sample-multi")
SAMPLE_GLUE = os.path.join(PROJECT_HOME, "data", "sample", "glue")
LANGUAGES = ["en", "zh", "ja", "ko", "de"]

# PAWS-X on the rows written for the project (data/sample/glue/PAWS-X: the same 16 dev pairs in en, de, fr, zh, ja
# and ko) as data/sample/cross-lingual.yaml defines it for the English sample (tests/test_sample_multi.py checks that
# the two agree), scored here in the languages the run pretrains on: all but fr.
PAWS_X = {"format": "tsv", "files": {"train": "{language}/train.tsv", "dev": "{language}/dev_2k.tsv"},
          "text_a": "sentence1", "text_b": "sentence2", "label": "label", "labels": ["0", "1"], "id": "id",
          "languages": ["en", "de", "zh", "ja", "ko"], "train_language": "en"}
PAWS_X_HPARAMS = FinetuneHParams(5e-4, 16, albert_dropout=0.0, classifier_dropout=0.1, train_steps=60, warmup_steps=6,
                                 max_seq_length=64)


def sample_multi_settings() -> Dict[str, Any]:
    """One model for five languages on ``data/sample-multi`` (English, German, Chinese, Japanese, Korean): every
    book tagged by the language identifier (``corpus.books_language`` unset: ``auto``), split into sentences by its
    own language's splitter, one documents file per language; one SentencePiece vocabulary for the mix (coverage
    0.9995, the lowest of the five profiles; NFKC), masking by each file's language's word starts; albert-tiny for a
    few dozen steps; PAWS-X fine-tuned once on its English rows and scored on each of the run's languages' dev rows.
    The preset's fields (``PipelineConfig(**sample_multi_settings())``, pipeline/settings/configs.py)."""
    return dict(
        preset="sample-multi",
        pipeline_name="albert-tfx-sample-multi",
        language=list(LANGUAGES),
        beam_args=["--direct_running_mode=in_memory", "--direct_num_workers=1"],
        corpus=CorpusConfig(books_dir=os.path.join(SAMPLE_MULTI_DATA, "books"), min_doc_chars=200, num_shards=1),
        vocab=VocabConfig(vocab_size=1500, input_sentence_size=200_000),
        datagen=DataGenConfig(max_seq_length=64, max_predictions_per_seq=10, dupe_factor=2, eval_fraction=0.1,
                              num_shards=1),
        model=ModelConfig(size="albert-tiny"),
        train=TrainConfig(
            train_batch_size=16, eval_batch_size=16, num_train_steps=40, num_warmup_steps=4, learning_rate=0.005,
            checkpoint_every=0, eval_every=0, eval_steps=2, log_every=10, shuffle_buffer=500, strategy="cpu",
            mixed_precision="float32",
        ),
        benchmarks=BenchmarkConfig(
            glue_dir=SAMPLE_GLUE,
            glue_tasks=["PAWS-X"],
            tasks={"PAWS-X": PAWS_X},
            squad_dir=None,
            race_dir=None,
            hparams={"PAWS-X": PAWS_X_HPARAMS},
            checkpoint_selection="last",
        ),
    )
