"""One typed configuration for the whole DAG, with the ``sample`` and ``paper`` presets.

The same :class:`PipelineConfig` object is built once (preset → YAML file → ``--set`` overrides),
validated, serialised to JSON and handed to every component as a parameter, so a run's MLMD
execution properties record exactly what produced each artifact and cache keys change when any
value does.
"""
from __future__ import annotations

import dataclasses
import json
import os
import types
import typing
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLE_DATA = os.path.join(REPO_ROOT, "data", "sample")


class ConfigError(ValueError):
    """A configuration value is missing, unknown or out of range."""


@dataclass
class CorpusConfig:
    """Raw corpora → clean documents (component ``CorpusGen``)."""

    wikipedia_dir: Optional[str] = None  # folder holding pages-articles*.xml(.bz2) dumps
    wikipedia_glob: str = "*pages-articles*.xml*"
    books_dir: Optional[str] = None  # folder tree of .txt books (BookCorpus-style)
    books_glob: str = "**/*.txt"
    min_doc_chars: int = 200
    dedupe: bool = True
    book_encoding_fallback: Optional[str] = None  # e.g. "latin-1"; None = non-UTF-8 is an error
    num_shards: int = 4


@dataclass
class VocabConfig:
    """SentencePiece vocabulary (component ``VocabGen``): train with ALBERT's recipe or import."""

    import_model: Optional[str] = None  # path of an existing model (e.g. the official 30k-clean.model)
    vocab_size: int = 30000
    character_coverage: float = 0.99995
    input_sentence_size: int = 10_000_000
    do_lower_case: bool = True


@dataclass
class DataGenConfig:
    """Pretraining instances (component ``PretrainingDataGen``), §4.1 of the paper."""

    max_seq_length: int = 512
    max_predictions_per_seq: int = 20
    masked_lm_prob: float = 0.15
    short_seq_prob: float = 0.1
    dupe_factor: int = 40
    max_ngram: int = 3
    sop_mode: str = "official"  # official | pure | nsp
    eval_fraction: float = 0.01  # share of documents held out for pretraining eval
    num_shards: int = 8
    compression: str = "GZIP"  # GZIP | "" (none)
    compression_level: int = 6  # zlib level for GZIP (6 = zlib's and TensorFlow's default; 1 is ~2x faster, ~7% larger)
    # Random-document pool (official SOP's one-sentence chunks, NSP): the documents with the smallest hash keys,
    # up to this many documents and this many characters (whole books are ~500k characters), so worker memory
    # stays bounded on any corpus.
    random_pool_documents: int = 2000
    random_pool_max_chars: int = 10_000_000


@dataclass
class ModelConfig:
    """A named ALBERT/BERT size plus overrides; vocab_size always comes from the SentencePiece model."""

    size: str = "albert-base"
    embedding_size: Optional[int] = None
    hidden_size: Optional[int] = None
    num_hidden_layers: Optional[int] = None
    num_attention_heads: Optional[int] = None
    intermediate_size: Optional[int] = None
    sharing: Optional[str] = None  # all | attention | ffn | none | groups
    num_hidden_groups: Optional[int] = None
    inner_group_num: Optional[int] = None
    dropout: Optional[float] = None  # hidden and attention dropout (released v2 models: 0)

    def overrides(self) -> Dict[str, Any]:
        names = {
            "embedding_size": "embedding_size",
            "hidden_size": "hidden_size",
            "num_hidden_layers": "num_hidden_layers",
            "num_attention_heads": "num_attention_heads",
            "intermediate_size": "intermediate_size",
            "sharing": "sharing",
            "num_hidden_groups": "num_hidden_groups",
            "inner_group_num": "inner_group_num",
        }
        out = {dst: getattr(self, src) for src, dst in names.items() if getattr(self, src) is not None}
        if self.dropout is not None:
            out["hidden_dropout_prob"] = self.dropout
            out["attention_probs_dropout_prob"] = self.dropout
        return out


@dataclass
class TrainConfig:
    """Pretraining (TFX ``Trainer`` with ``trainer.task.run_fn``)."""

    train_batch_size: int = 4096
    eval_batch_size: int = 64
    num_train_steps: int = 125_000
    num_warmup_steps: int = 3125
    learning_rate: float = 0.00176
    optimizer: str = "lamb"  # lamb | adamw
    weight_decay: float = 0.01
    clip_norm: float = 1.0
    grad_accum_steps: int = 1  # micro-batches per optimizer step (global batch = train_batch_size)
    sentence_task: str = "sop"  # sop | nsp (the paper's ablation)
    checkpoint_every: int = 5000
    eval_every: int = 10_000
    eval_steps: int = 100
    log_every: int = 100
    shuffle_buffer: int = 10_000
    strategy: str = "auto"  # auto | cpu | mirrored | multi_worker | tpu
    mixed_precision: str = "auto"  # auto | float32 | mixed_bfloat16 (auto: see trainer.train_lib.resolve_precision)
    jit_compile: bool = False  # XLA for forward/backward; off: slower on the measured CPU (benchmarks/pretrain_step.py)


# Vertex AI CustomJob machine shapes (https://cloud.google.com/vertex-ai/docs/training/configure-compute):
# TPU v2/v3 are requested as machine type ``cloud-tpu`` + accelerator TPU_V2/TPU_V3 x 8 (one host, 8 cores);
# TPU v4/v5e as a ``ct4p-*``/``ct5lp-*`` machine type with a slice ``tpu_topology`` (e.g. 2x2x1, 4x4).
TPU_ACCELERATORS = ("TPU_V2", "TPU_V3", "TPU_V4_POD", "TPU_V5_LITEPOD")
TPU_MACHINE_PREFIXES = ("cloud-tpu", "ct4p-", "ct5lp-", "ct5p-", "ct6e-")


@dataclass
class VertexTrainingConfig:
    """Run the Trainer's ``run_fn`` as a Vertex AI Training CustomJob (``google_cloud_ai_platform.Trainer``).

    Off by default (the Trainer then runs where the orchestrator runs it). Enabled, the job runs the
    pipeline's container image (or ``image``) with one worker pool built from these fields by
    :func:`pipeline.vertex_training.worker_pool_specs`: a TPU (``machine_type`` ``cloud-tpu`` with
    ``accelerator_type`` TPU_V2/TPU_V3 and ``accelerator_count`` 8, or a ``ct4p-``/``ct5lp-`` machine
    with ``tpu_topology``) or a GPU machine (``accelerator_type`` NVIDIA_*, ``accelerator_count`` GPUs).
    """

    enabled: bool = False
    project: Optional[str] = None  # GCP project of the CustomJob (required when enabled)
    region: str = "us-central1"
    machine_type: str = "n1-standard-8"
    accelerator_type: Optional[str] = None  # TPU_V3 | TPU_V4_POD | TPU_V5_LITEPOD | NVIDIA_TESLA_V100 | ...; None: CPU
    accelerator_count: int = 0  # TPU_V2/V3: 8 (cores of one host); GPUs per replica; 0 with tpu_topology
    tpu_topology: Optional[str] = None  # TPU v4/v5e slice shape, e.g. "2x2x1" (v4) or "2x2", "4x4" (v5e)
    replica_count: int = 1
    image: Optional[str] = None  # None: the pipeline's container image
    service_account: Optional[str] = None
    boot_disk_size_gb: int = 100

    def is_tpu(self) -> bool:
        return (self.accelerator_type or "").upper() in TPU_ACCELERATORS or \
            self.machine_type.startswith(TPU_MACHINE_PREFIXES)

    def validate(self) -> None:
        if not self.enabled:
            return
        _check(bool(self.project), "vertex_training.project", self.project, "a GCP project id when enabled")
        _check(bool(self.region), "vertex_training.region", self.region, "a Vertex AI region, e.g. us-central1")
        _check(bool(self.machine_type), "vertex_training.machine_type", self.machine_type, "a machine type")
        _check(self.replica_count >= 1, "vertex_training.replica_count", self.replica_count, ">= 1")
        _check(self.boot_disk_size_gb >= 10, "vertex_training.boot_disk_size_gb", self.boot_disk_size_gb, ">= 10")
        _check(self.accelerator_count >= 0, "vertex_training.accelerator_count", self.accelerator_count, ">= 0")
        acc = (self.accelerator_type or "").upper()
        if self.tpu_topology is not None:
            _check(all(p.isdigit() and int(p) > 0 for p in self.tpu_topology.split("x")) and "x" in self.tpu_topology,
                   "vertex_training.tpu_topology", self.tpu_topology, "chips per dimension like 2x2 or 2x2x1")
        if self.machine_type == "cloud-tpu":
            _check(acc in ("TPU_V2", "TPU_V3"), "vertex_training.accelerator_type", self.accelerator_type,
                   "TPU_V2 or TPU_V3 with machine_type cloud-tpu")
            _check(self.accelerator_count == 8, "vertex_training.accelerator_count", self.accelerator_count,
                   "8 (the cores of one TPU v2/v3 host) with machine_type cloud-tpu")
            _check(self.tpu_topology is None, "vertex_training.tpu_topology", self.tpu_topology,
                   "unset with machine_type cloud-tpu (v2/v3 are sized by accelerator_count)")
        elif self.machine_type.startswith(TPU_MACHINE_PREFIXES):
            _check(bool(self.tpu_topology), "vertex_training.tpu_topology", self.tpu_topology,
                   f"a slice shape (e.g. 2x2) with TPU machine_type {self.machine_type}")
            _check(acc in ("", "TPU_V4_POD", "TPU_V5_LITEPOD", "TPU_V5P", "TPU_V6E") , "vertex_training.accelerator_type",
                   self.accelerator_type, "unset or the TPU type of the machine (TPU_V4_POD, TPU_V5_LITEPOD)")
        else:
            _check(not acc.startswith("TPU"), "vertex_training.accelerator_type", self.accelerator_type,
                   "TPU types only with a TPU machine_type (cloud-tpu, ct4p-*, ct5lp-*)")
            _check(self.tpu_topology is None, "vertex_training.tpu_topology", self.tpu_topology,
                   "unset for a non-TPU machine_type")
            if acc:
                _check(self.accelerator_count >= 1, "vertex_training.accelerator_count", self.accelerator_count,
                       f">= 1 with accelerator_type {self.accelerator_type}")
            else:
                _check(self.accelerator_count == 0, "vertex_training.accelerator_count", self.accelerator_count,
                       "0 without accelerator_type")


@dataclass
class FinetuneHParams:
    """One row of the paper's Table 14."""

    learning_rate: float
    batch_size: int
    albert_dropout: float
    classifier_dropout: float
    train_steps: int
    warmup_steps: int
    max_seq_length: int = 512


# Paper Table 14 (max_seq_length 512 except SQuAD v1.1 at 384).
PAPER_FINETUNE: Dict[str, FinetuneHParams] = {
    "CoLA": FinetuneHParams(1e-5, 16, 0.0, 0.1, 5336, 320),
    "STS-B": FinetuneHParams(2e-5, 16, 0.0, 0.1, 3598, 214),
    "SST-2": FinetuneHParams(1e-5, 32, 0.0, 0.1, 20935, 1256),
    "MNLI": FinetuneHParams(3e-5, 128, 0.0, 0.1, 10000, 1000),
    "QNLI": FinetuneHParams(1e-5, 32, 0.0, 0.1, 33112, 1986),
    "QQP": FinetuneHParams(5e-5, 128, 0.1, 0.1, 14000, 1000),
    "RTE": FinetuneHParams(3e-5, 32, 0.1, 0.1, 800, 200),
    "MRPC": FinetuneHParams(2e-5, 32, 0.0, 0.1, 800, 200),
    "WNLI": FinetuneHParams(2e-5, 16, 0.1, 0.1, 2000, 250),
    "SQuAD1.1": FinetuneHParams(5e-5, 48, 0.0, 0.1, 3649, 365, 384),
    "SQuAD2.0": FinetuneHParams(3e-5, 48, 0.0, 0.1, 8144, 814, 512),
    # v2 models: the official README runs RACE at 1e-5 with dropout 0 (the v1 setting diverges).
    "RACE": FinetuneHParams(1e-5, 32, 0.0, 0.1, 12000, 1000),
}


@dataclass
class BenchmarkConfig:
    """Downstream evaluation (GLUE / SQuAD / RACE evaluator components) and its protocol."""

    glue_dir: Optional[str] = None  # glue_data/<TASK>/{train,dev,test}.tsv
    glue_tasks: List[str] = field(default_factory=lambda: ["CoLA", "SST-2", "MRPC", "STS-B", "MNLI", "QQP", "QNLI", "RTE", "WNLI"])
    squad_dir: Optional[str] = None  # holds train/dev JSON files, see squad_*_file
    squad_train_file: str = "train-v1.1.json"
    squad_dev_file: str = "dev-v1.1.json"
    squad_version: str = "1.1"  # 1.1 | 2.0
    race_dir: Optional[str] = None  # RACE/{train,dev,test}/{middle,high}
    hparams: Dict[str, FinetuneHParams] = field(default_factory=lambda: dict(PAPER_FINETUNE))
    seeds: int = 1  # >1: report the median over this many fine-tuning seeds
    checkpoint_selection: str = "best"  # best (on dev, the paper's practice) | last
    eval_every: int = 0  # 0: evaluate once at the end; else every N steps (needed for 'best')
    max_eval_examples: int = 0  # 0: all dev examples
    doc_stride: int = 128
    max_query_length: int = 64
    max_answer_length: int = 30
    n_best_size: int = 20
    export_serving_model: bool = True  # GLUE: <TASK>/serving_model = tf.Transform graph + classifier (raw text in)
    tfma: bool = True  # GLUE classification: TFMA metrics on the exported model, under "tfma" in metrics.json


@dataclass
class PipelineConfig:
    """Everything one run needs; the JSON of this object is what every component receives."""

    pipeline_name: str = "albert-tfx"
    preset: str = "paper"
    seed: int = 12345
    pipeline_root: str = os.path.join("outputs", "pipeline_root")
    metadata_path: str = os.path.join("outputs", "metadata.sqlite")
    beam_args: List[str] = field(default_factory=lambda: ["--direct_running_mode=multi_processing", "--direct_num_workers=0"])
    enable_cache: bool = True
    corpus: CorpusConfig = field(default_factory=CorpusConfig)
    vocab: VocabConfig = field(default_factory=VocabConfig)
    datagen: DataGenConfig = field(default_factory=DataGenConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    vertex_training: VertexTrainingConfig = field(default_factory=VertexTrainingConfig)
    benchmarks: BenchmarkConfig = field(default_factory=BenchmarkConfig)

    # -- (de)serialisation -------------------------------------------------------------------
    def to_dict(self) -> Dict[str, Any]:
        return dataclasses.asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "PipelineConfig":
        return _from_dict(cls, data, "")

    @classmethod
    def from_json(cls, text: str) -> "PipelineConfig":
        return cls.from_dict(json.loads(text))

    def validate(self) -> "PipelineConfig":
        """Range and consistency checks; raises :class:`ConfigError` naming the field."""
        d, t, b = self.datagen, self.train, self.benchmarks
        _check(d.sop_mode in ("official", "pure", "nsp"), "datagen.sop_mode", d.sop_mode, "official|pure|nsp")
        _check(d.max_seq_length >= 8, "datagen.max_seq_length", d.max_seq_length, ">= 8")
        _check(0 < d.masked_lm_prob < 1, "datagen.masked_lm_prob", d.masked_lm_prob, "in (0, 1)")
        _check(0 <= d.short_seq_prob <= 1, "datagen.short_seq_prob", d.short_seq_prob, "in [0, 1]")
        _check(d.dupe_factor >= 1, "datagen.dupe_factor", d.dupe_factor, ">= 1")
        _check(1 <= d.max_ngram <= 5, "datagen.max_ngram", d.max_ngram, "in [1, 5]")
        _check(0 < d.eval_fraction < 0.5, "datagen.eval_fraction", d.eval_fraction, "in (0, 0.5)")
        _check(d.compression in ("", "GZIP"), "datagen.compression", d.compression, "'' or GZIP")
        _check(0 <= d.compression_level <= 9, "datagen.compression_level", d.compression_level, "in [0, 9]")
        _check(d.random_pool_documents >= 2, "datagen.random_pool_documents", d.random_pool_documents, ">= 2")
        _check(d.random_pool_max_chars >= 1, "datagen.random_pool_max_chars", d.random_pool_max_chars, ">= 1")
        _check(t.optimizer in ("lamb", "adamw"), "train.optimizer", t.optimizer, "lamb|adamw")
        _check(t.sentence_task in ("sop", "nsp"), "train.sentence_task", t.sentence_task, "sop|nsp")
        _check(t.strategy in ("auto", "cpu", "mirrored", "multi_worker", "tpu"), "train.strategy", t.strategy, "auto|cpu|mirrored|multi_worker|tpu")
        _check(t.mixed_precision in ("auto", "float32", "mixed_bfloat16"), "train.mixed_precision", t.mixed_precision, "auto|float32|mixed_bfloat16")
        _check(t.num_train_steps >= 1, "train.num_train_steps", t.num_train_steps, ">= 1")
        _check(0 <= t.num_warmup_steps <= t.num_train_steps, "train.num_warmup_steps", t.num_warmup_steps, "in [0, num_train_steps]")
        _check(t.grad_accum_steps >= 1 and t.train_batch_size % t.grad_accum_steps == 0, "train.grad_accum_steps",
               t.grad_accum_steps, f">= 1 and dividing train_batch_size={t.train_batch_size}")
        self.vertex_training.validate()
        _check(b.squad_version in ("1.1", "2.0"), "benchmarks.squad_version", b.squad_version, "1.1|2.0")
        _check(b.checkpoint_selection in ("best", "last"), "benchmarks.checkpoint_selection", b.checkpoint_selection, "best|last")
        _check(b.seeds >= 1, "benchmarks.seeds", b.seeds, ">= 1")
        _check(self.corpus.wikipedia_dir or self.corpus.books_dir, "corpus", None, "at least one of wikipedia_dir / books_dir")
        if self.vocab.import_model is None:
            _check(self.vocab.vocab_size >= 100, "vocab.vocab_size", self.vocab.vocab_size, ">= 100")
        for task in b.glue_tasks:
            _check(task in PAPER_FINETUNE, "benchmarks.glue_tasks", task, "GLUE task names: " + ", ".join(PAPER_FINETUNE))
        _check(self.vocab.vocab_size >= 0, "vocab.vocab_size", self.vocab.vocab_size, ">= 0 (0: the imported model's size)")
        for name, pattern in (("corpus.wikipedia_glob", self.corpus.wikipedia_glob),
                              ("corpus.books_glob", self.corpus.books_glob)):
            _check(not pattern.startswith("/") and "://" not in pattern and ".." not in pattern.split("/"),
                   name, pattern, "a pattern relative to its folder, without '..' (lineage records only the folder)")
        for name, value in self.input_paths().items():
            _check(value is None or "://" not in value or value.startswith("gs://"), name, value,
                   "a local path or a gs:// URI")
        return self

    def input_paths(self) -> Dict[str, Optional[str]]:
        """Every input location the config names (dotted key → path or URI, None when unset)."""
        c, b = self.corpus, self.benchmarks
        return {"corpus.wikipedia_dir": c.wikipedia_dir, "corpus.books_dir": c.books_dir,
                "vocab.import_model": self.vocab.import_model, "benchmarks.glue_dir": b.glue_dir,
                "benchmarks.squad_dir": b.squad_dir, "benchmarks.race_dir": b.race_dir}

    def check_paths(self) -> "PipelineConfig":
        """Before a local run: local input paths must exist, and are made absolute and normalised ('..'
        resolved) so MLMD lineage records where the data really is, whatever the working directory.
        ``gs://`` URIs are left alone (no network here; the components report a missing object by name)."""
        for name, value in self.input_paths().items():
            if value is None or value.startswith("gs://"):
                continue
            path = os.path.abspath(os.path.expanduser(value))
            want_file = name == "vocab.import_model"
            if not (os.path.isfile(path) if want_file else os.path.isdir(path)):
                raise ConfigError(f"config {name}={value!r} is invalid: {'file' if want_file else 'folder'} "
                                  f"{path} does not exist")
            section, key = name.split(".")
            setattr(getattr(self, section), key, path)
        return self


def _check(ok: Any, name: str, value: Any, want: str) -> None:
    if not ok:
        raise ConfigError(f"config {name}={value!r} is invalid: expected {want}")


def _from_dict(cls: type, data: Dict[str, Any], prefix: str):
    """Build a (nested) dataclass from plain data, rejecting unknown keys by their dotted name."""
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - names)
    if unknown:
        raise ConfigError(f"unknown config key(s): {', '.join(prefix + k for k in unknown)}")
    kwargs = {}
    for key, value in data.items():
        kwargs[key] = _coerce_value(hints[key], value, prefix + key)
    return cls(**kwargs)


def _coerce_value(hint: Any, value: Any, name: str) -> Any:
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        inner = [a for a in args if a is not type(None)]
        return _coerce_value(inner[0], value, name)
    if dataclasses.is_dataclass(hint):
        if isinstance(value, hint):
            return value
        if not isinstance(value, dict):
            raise ConfigError(f"config {name} must be a mapping, got {value!r}")
        return _from_dict(hint, value, name + ".")
    if origin in (dict, Dict):
        val_t = args[1] if args else Any
        if not isinstance(value, dict):
            raise ConfigError(f"config {name} must be a mapping, got {value!r}")
        return {k: _coerce_value(val_t, v, f"{name}.{k}") for k, v in value.items()}
    if origin in (list, List):
        item_t = args[0] if args else Any
        if isinstance(value, str):
            value = [v for v in value.split(",") if v]
        return [_coerce_value(item_t, v, name) for v in value]
    return _coerce_scalar(hint, value, name)


def _coerce_scalar(hint: Any, value: Any, name: str) -> Any:
    if hint is Any:
        return value
    try:
        if hint is bool:
            if isinstance(value, str):
                lowered = value.strip().lower()
                if lowered in ("1", "true", "yes", "on"):
                    return True
                if lowered in ("0", "false", "no", "off"):
                    return False
                raise ValueError(value)
            return bool(value)
        if hint is int:
            if isinstance(value, float) and not value.is_integer():
                raise ValueError(value)
            return int(value)
        if hint is float:
            return float(value)
        if hint is str:
            return str(value)
    except (TypeError, ValueError):
        raise ConfigError(f"config {name}={value!r} is not a valid {hint.__name__}") from None
    return value


def apply_overrides(config: PipelineConfig, overrides: List[str]) -> PipelineConfig:
    """Apply ``section.key=value`` strings (the CLI's ``--set``) with type checking.

    ``benchmarks.hparams.RTE.train_steps=100`` reaches into the per-task table too.
    """
    data = config.to_dict()
    for item in overrides:
        if "=" not in item:
            raise ConfigError(f"override {item!r} must look like section.key=value")
        path, raw = item.split("=", 1)
        keys = path.strip().split(".")
        node = data
        for key in keys[:-1]:
            if not isinstance(node, dict) or key not in node:
                raise ConfigError(f"unknown config key: {path}")
            node = node[key]
        if not isinstance(node, dict) or keys[-1] not in node:
            raise ConfigError(f"unknown config key: {path}")
        node[keys[-1]] = None if raw.strip().lower() in ("none", "null") else raw
    return PipelineConfig.from_dict(data)


def load_yaml(config: PipelineConfig, path: str) -> PipelineConfig:
    """Merge a YAML file (parsed with ``yaml.safe_load``) over ``config``."""
    import yaml

    with open(path, encoding="utf-8") as f:
        loaded = yaml.safe_load(f) or {}
    if not isinstance(loaded, dict):
        raise ConfigError(f"{path}: top level must be a mapping")
    return PipelineConfig.from_dict(_deep_merge(config.to_dict(), loaded))


def _deep_merge(base: Dict[str, Any], over: Dict[str, Any]) -> Dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = value
    return out


# --------------------------------------------------------------------------------------------
# Presets
# --------------------------------------------------------------------------------------------

def paper_config() -> PipelineConfig:
    """ALBERT-base as pretrained in the paper: 512 tokens, 20 predictions, dupe 40, batch 4096, LAMB."""
    return PipelineConfig(
        preset="paper",
        corpus=CorpusConfig(num_shards=256),
        datagen=DataGenConfig(num_shards=1024),
        train=TrainConfig(strategy="tpu", mixed_precision="mixed_bfloat16", checkpoint_every=5000),
        # Off until a project is set (``--set vertex_training.enabled=true --set vertex_training.project=P``):
        # one TPU v3-8 host (4 chips / 8 cores) on Vertex AI Training, bf16, running the pipeline image. The
        # paper used 64-512 v3 chips; Vertex offers v2/v3 only as single 8-core hosts, so for pod scale use a
        # v4/v5e slice instead, e.g. machine_type=ct5lp-hightpu-4t, accelerator_type=TPU_V5_LITEPOD,
        # accelerator_count=0, tpu_topology=8x8 (64 v5e chips).
        vertex_training=VertexTrainingConfig(machine_type="cloud-tpu", accelerator_type="TPU_V3",
                                             accelerator_count=8, region="us-central1"),
        benchmarks=BenchmarkConfig(squad_version="1.1", eval_every=1000),
    )


def sample_config() -> PipelineConfig:
    """The bundled data, a tiny model and a few hundred steps: the whole DAG on 2 CPU cores."""
    small = dict(albert_dropout=0.0, classifier_dropout=0.1)
    return PipelineConfig(
        preset="sample",
        pipeline_name="albert-tfx-sample",
        beam_args=["--direct_running_mode=in_memory", "--direct_num_workers=1"],
        corpus=CorpusConfig(
            wikipedia_dir=os.path.join(SAMPLE_DATA, "wikipedia"),
            books_dir=os.path.join(SAMPLE_DATA, "books"),
            min_doc_chars=200,
            num_shards=2,
        ),
        vocab=VocabConfig(vocab_size=3000, input_sentence_size=200_000),
        datagen=DataGenConfig(max_seq_length=128, max_predictions_per_seq=20, dupe_factor=2,
                              eval_fraction=0.1, num_shards=2),
        model=ModelConfig(size="albert-tiny"),
        train=TrainConfig(
            train_batch_size=32, eval_batch_size=32, num_train_steps=300, num_warmup_steps=30,
            learning_rate=0.005, checkpoint_every=100, eval_every=150, eval_steps=10, log_every=25,
            shuffle_buffer=2000, strategy="cpu", mixed_precision="float32",
        ),
        benchmarks=BenchmarkConfig(
            glue_dir=os.path.join(SAMPLE_DATA, "glue"),
            glue_tasks=["CoLA", "SST-2", "MRPC", "RTE"],
            squad_dir=os.path.join(SAMPLE_DATA, "squad"),
            squad_train_file="train-v1.1-sample.json",  # cut from other SQuAD dev articles: see data/sample/README.md
            squad_dev_file="dev-v1.1-sample.json",
            race_dir=os.path.join(SAMPLE_DATA, "race"),
            hparams={
                **{t: FinetuneHParams(5e-4, 16, train_steps=60, warmup_steps=6, max_seq_length=64, **small)
                   for t in ("CoLA", "SST-2", "MRPC", "RTE", "STS-B", "QNLI", "WNLI", "MNLI", "QQP")},
                "SQuAD1.1": FinetuneHParams(5e-4, 16, train_steps=60, warmup_steps=6, max_seq_length=128, **small),
                "SQuAD2.0": FinetuneHParams(5e-4, 16, train_steps=60, warmup_steps=6, max_seq_length=128, **small),
                "RACE": FinetuneHParams(5e-4, 8, train_steps=30, warmup_steps=3, max_seq_length=128, **small),
            },
            checkpoint_selection="last",
            doc_stride=64,
            max_query_length=32,
        ),
    )


PRESETS = {"sample": sample_config, "paper": paper_config}


def build_config(preset: str = "sample", config_file: Optional[str] = None,
                 overrides: Optional[List[str]] = None) -> PipelineConfig:
    """preset → YAML file → ``key=value`` overrides → validated config."""
    if preset not in PRESETS:
        raise ConfigError(f"unknown preset {preset!r}; choose one of {', '.join(PRESETS)}")
    config = PRESETS[preset]()
    if config_file:
        config = load_yaml(config, config_file)
    if overrides:
        config = apply_overrides(config, overrides)
    return config.validate()
