"""Names of the files one node writes and another reads, defined once.

Light on purpose (no TensorFlow): the trainer writes these files, and the benchmark nodes, the report and the
CLI read them; importing the training loop just for a file name would load TensorFlow into light modules.
"""

# The pretrained model as the Trainer exports it (``trainer.export.export``): ``<model>/albert/...``.
ALBERT_DIR = "albert"
CONFIG_FILE = "albert_config.json"  # official key names
ENCODER_CKPT = "encoder/ckpt"  # what fine-tuning restores
PRETRAINING_CKPT = "pretraining/ckpt"  # the whole pretraining model (encoder + MLM/SOP heads)
SPM_FILE = "spm.model"  # the SentencePiece model (also the vocabulary artifact's file name)
WORDPIECE_FILE = "vocab.txt"  # a WordPiece vocabulary (the official Chinese models'), in place of spm.model
TOKENIZER_SPEC_FILE = "tokenizer.json"  # the vocabulary's kind and text settings, unless English's (components/text/tokenizers.py)
VOCAB_FILES = (SPM_FILE, WORDPIECE_FILE)
EXPORT_INFO_FILE = "export_info.json"  # facts recorded at export (do_lower_case, final step, eval metrics, ...)
CONVERT_SERVING_DIR = "serving"  # the serving SavedModel inside an albert folder `albert-pipeline convert` wrote
# The model a benchmark-only run imported (mode=benchmark, components ModelImport): where it came from, in the Model
# artifact beside ``albert/``.
MODEL_SOURCE_FILE = "model_source.json"

# A pushed version (``<destination>/<N>/``, components/release): its albert folder and its record (written last).
VERSION_ALBERT_DIR = "checkpoint"
VERSION_RECORD_FILE = "release.json"

# A pretraining run's checkpoint folder: the identity its checkpoints belong to (trainer/task.py).
RUN_IDENTITY_FILE = "run_identity.json"

# The Trainer's model_run folder.
HISTORY_FILE = "train_history.jsonl"  # one JSON line per log point
RUN_CONFIG_FILE = "run_config.json"  # {model, train, seed, examples}: the settings that produced the model

# Pretraining data statistics (``DataGenStatistics`` artifact).
STATS_FILE = "stats.json"

# Splits of the pretraining Examples (``<examples>/Split-<name>/``): the instances at ``datagen.max_seq_length``,
# and, with BERT's two-phase sequence length on (``datagen.long_max_seq_length``), the same documents' instances at
# the long length, which the Trainer reads from ``train.long_seq_from_step`` on.
TRAIN_SPLIT, EVAL_SPLIT = "train", "eval"
LONG_SUFFIX = "_long"
TRAIN_LONG_SPLIT = TRAIN_SPLIT + LONG_SUFFIX

# One benchmark family's result (``BenchmarkResult`` artifact).
METRICS_FILE = "metrics.json"

__all__ = ["ALBERT_DIR", "CONFIG_FILE", "ENCODER_CKPT", "PRETRAINING_CKPT", "SPM_FILE", "EXPORT_INFO_FILE",
           "CONVERT_SERVING_DIR", "MODEL_SOURCE_FILE",
           "VERSION_ALBERT_DIR", "VERSION_RECORD_FILE", "RUN_IDENTITY_FILE",
           "HISTORY_FILE", "RUN_CONFIG_FILE", "STATS_FILE", "METRICS_FILE", "TRAIN_SPLIT", "EVAL_SPLIT", "LONG_SUFFIX",
           "TRAIN_LONG_SPLIT"]
