"""The benchmark nodes' settings (``benchmarks.*``: ``GlueBenchmark``, ``SquadBenchmark``, ``Squad2Benchmark``,
``RaceBenchmark``) and the published fine-tuning recipes."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from components.evaluation.glue.task_spec import CLUE_TASK_SETTINGS, SETTING_PREFIX as TASKS_SETTING, specs_from_config
from config.schema import Section, check, plain_data, without_defaults

@dataclass
class FinetuneHParams(Section):
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
    "RACE": FinetuneHParams(2e-5, 32, 0.1, 0.1, 12000, 1000),
}
# v2 models: the official release README runs RACE at 1e-5 with ALBERT dropout 0 (the v1 setting diverges).
RELEASE_V2_RACE = FinetuneHParams(1e-5, 32, 0.0, 0.1, 12000, 1000)
GLUE_TASKS = ("CoLA", "SST-2", "MRPC", "STS-B", "MNLI", "QQP", "QNLI", "RTE", "WNLI")
SQUAD_TASKS = {"1.1": "SQuAD1.1", "2.0": "SQuAD2.0"}
# Beyond English (docs/languages.md, "Benchmarks beyond English"): CLUE's classification tasks run by the GLUE node
# (components/evaluation/glue/task_spec.py), C3 by the RACE node (benchmarks.race_format=c3), CMRC2018 by the SQuAD node
# (benchmarks.squad_metric=cmrc2018); each task's hparams row is under its name.
CLUE_TASKS = tuple(CLUE_TASK_SETTINGS)
RACE_FORMATS = {"race": "RACE", "c3": "C3"}          # benchmarks.race_format → the RACE node's task
SQUAD_METRICS = {"official": None, "cmrc2018": "CMRC2018"}  # benchmarks.squad_metric → the SQuAD node's task
# Result names a task of benchmarks.tasks may not take: every other node's tasks, and GLUE's split names.
_RESERVED_TASK_NAMES = GLUE_TASKS + tuple(SQUAD_TASKS.values()) + ("RACE", "C3", "CMRC2018", "MNLI-m", "MNLI-mm")

# Which fields of ``benchmarks`` each benchmark node reads (besides its hparams rows and the seed).
_COMMON = ("checkpoint_selection", "eval_every", "max_eval_examples", "baselines")
BASELINES = ("random_init",)  # components/evaluation/init_check.py: the arms besides "pretrained"
_NODE_FIELDS = {
    "glue": _COMMON + ("glue_tasks", "export_serving_model", "tfma"),
    "squad": _COMMON + ("squad_version", "squad_train_file", "squad_dev_file", "doc_stride", "max_query_length",
                        "max_answer_length", "n_best_size"),
    "race": _COMMON,
}


@dataclass
class BenchmarkConfig(Section):
    """Downstream evaluation (the GLUE / SQuAD / RACE benchmark nodes) and its protocol.

    One node per benchmark; each receives only its own fields (:meth:`node_settings`), so changing an
    RTE learning rate reruns the GLUE node and the report, nothing else.
    """

    glue_dir: Optional[str] = None  # glue_data/<TASK>/{train,dev,test}.tsv
    glue_tasks: List[str] = field(default_factory=lambda: list(GLUE_TASKS))
    squad_dir: Optional[str] = None  # holds train/dev JSON files, see squad_*_file
    squad_train_file: str = "train-v1.1.json"
    squad_dev_file: str = "dev-v1.1.json"
    squad_version: str = "1.1"  # the SQuAD version of the files in squad_dir: 1.1 | 2.0
    squad_v2_dir: Optional[str] = None  # a second SQuAD node, version 2.0, on these files
    squad_v2_train_file: str = "train-v2.0.json"
    squad_v2_dev_file: str = "dev-v2.0.json"
    race_dir: Optional[str] = None  # RACE/{train,dev,test}/{middle,high}
    hparams: Dict[str, FinetuneHParams] = field(default_factory=lambda: dict(PAPER_FINETUNE))
    seed: Optional[int] = None  # first fine-tuning seed (None: the pipeline seed); run i uses seed + i
    seeds: int = 1  # >1: report the median over this many fine-tuning seeds
    checkpoint_selection: str = "best"  # best (on dev, the paper's practice) | last
    eval_every: int = 0  # 0: evaluate once at the end; else every N steps (needed for 'best')
    max_eval_examples: int = 0  # 0: all dev examples
    doc_stride: int = 128
    max_query_length: int = 64
    max_answer_length: int = 30
    n_best_size: int = 20
    # Every benchmark node: <TASK>/serving_model, raw text in (GLUE's tf.Transform route, or
    # components/evaluation/task_serving.py). The SQuAD / RACE nodes receive it only when off, so with the default
    # their parameters and cache keys stay.
    export_serving_model: bool = True
    tfma: bool = True  # GLUE classification: TFMA metrics on the exported model, under "tfma" in metrics.json
    # Extra arms fine-tuned with the same hparams, seeds and protocol: "random_init" = the same architecture
    # without pretraining, so the report can show what pretraining gained (every benchmark node runs them).
    baselines: List[str] = field(default_factory=list)
    # Fine-tuning precision: float32 | mixed_bfloat16 | auto (the faster, measured; trainer/precision.py). A node
    # receives it only when not float32, so nodes that do not set it keep their cache keys.
    mixed_precision: str = "float32"
    # Beyond GLUE / SQuAD / RACE (docs/languages.md, "Benchmarks beyond English"); each left out of the section's
    # JSON and every node's parameters at its default, so English keeps its cache keys.
    # NAME → the spec of a classification task (components/evaluation/glue/task_spec.py: format, files, text_a, text_b, label, labels,
    # metrics, ...) that glue_tasks may name, read from glue_dir/NAME/; CLUE's classification tasks are built in.
    tasks: Dict[str, Dict[str, Any]] = field(default_factory=dict)
    race_format: str = "race"  # the RACE node's data in race_dir: race (RACE's folders) | c3 (CLUE's C3 files)
    squad_metric: str = "official"  # the SQuAD node (squad_dir): official (SQuAD's) | cmrc2018 (character level)

    INPUT_FIELDS = ("glue_dir", "squad_dir", "squad_v2_dir", "race_dir")
    BEYOND_ENGLISH = ("tasks", "race_format", "squad_metric")

    def to_dict(self) -> Dict[str, Any]:
        """Every field, less ``BEYOND_ENGLISH`` at their defaults (English keeps its JSON and cache keys)."""
        data = without_defaults(self, super().to_dict(), ("race_format", "squad_metric"))
        return {k: v for k, v in data.items() if k != "tasks" or v}

    def nodes(self) -> Dict[str, str]:
        """Benchmark node key → data folder, for the data sets this config names.

        ``glue``; ``squad`` (``squad_dir``, SQuAD ``squad_version``); ``squad2`` (``squad_v2_dir``, SQuAD 2.0:
        with both folders given, one run produces both SQuAD columns of Table 2); ``race``.
        """
        out = {"glue": self.glue_dir, "squad": self.squad_dir, "squad2": self.squad_v2_dir, "race": self.race_dir}
        return {k: v for k, v in out.items() if v}

    def node_tasks(self, node: str):
        """The tasks (``hparams`` rows) a benchmark node fine-tunes."""
        if node == "glue":
            return list(self.glue_tasks)
        if node == "race":
            return [RACE_FORMATS.get(self.race_format, "RACE")]
        if node == "squad" and SQUAD_METRICS.get(self.squad_metric):
            return [SQUAD_METRICS[self.squad_metric]]
        return [SQUAD_TASKS["2.0" if node == "squad2" else self.squad_version]]

    def node_settings(self, node: str, pipeline_seed: int) -> Dict[str, Any]:
        """The parameters of one benchmark node: its fields, its hparams rows and the resolved seed.

        ``seeds`` travels as a separate node parameter (a pipeline runtime parameter when compiled).
        """
        kind = "squad" if node.startswith("squad") else node
        out = {k: getattr(self, k) for k in _NODE_FIELDS[kind]}
        if kind == "squad":
            out["squad_version"] = "2.0" if node == "squad2" else self.squad_version
            if node == "squad2":
                out["squad_train_file"], out["squad_dev_file"] = self.squad_v2_train_file, self.squad_v2_dev_file
        # Beyond English, only where set: a node that does not use them keeps its parameters and cache key.
        specs = {t: plain_data(self.tasks[t]) for t in self.glue_tasks if t in self.tasks} if node == "glue" else {}
        if specs:
            out["tasks"] = specs
        if node == "race" and self.race_format != "race":
            out["race_format"] = self.race_format
        if node == "squad" and self.squad_metric != "official":
            out["squad_metric"] = self.squad_metric
        if kind != "glue" and not self.export_serving_model:
            out["export_serving_model"] = False
        out["hparams"] = {t: self.hparams[t].to_dict() for t in self.node_tasks(node) if t in self.hparams}
        out["seed"] = pipeline_seed if self.seed is None else self.seed
        if self.mixed_precision != "float32":
            out["mixed_precision"] = self.mixed_precision
        return out

    @classmethod
    def from_node_settings(cls, settings: Dict[str, Any], seeds: int) -> "BenchmarkConfig":
        """Rebuild the section inside a benchmark node (fields it does not receive keep their defaults)."""
        data = dict(settings)
        hparams = data.pop("hparams", {})
        cfg = cls.from_dict({**data, "seeds": seeds, "hparams": {}}, "benchmarks.")
        cfg.hparams = {k: FinetuneHParams.from_dict(v, f"benchmarks.hparams.{k}.") for k, v in hparams.items()}
        return cfg

    def validate(self) -> "BenchmarkConfig":
        b = self
        check(b.squad_version in ("1.1", "2.0"), "benchmarks.squad_version", b.squad_version, "1.1|2.0")
        check(b.checkpoint_selection in ("best", "last"), "benchmarks.checkpoint_selection", b.checkpoint_selection,
              "best|last")
        check(b.seeds >= 1, "benchmarks.seeds", b.seeds, ">= 1")
        check(b.mixed_precision in ("auto", "float32", "mixed_bfloat16"), "benchmarks.mixed_precision",
              b.mixed_precision, "auto|float32|mixed_bfloat16")
        for name in b.baselines:
            check(name in BASELINES, "benchmarks.baselines", name, "|".join(BASELINES))
        check(len(set(b.baselines)) == len(b.baselines), "benchmarks.baselines", b.baselines, "no repeats")
        check(b.eval_every >= 0, "benchmarks.eval_every", b.eval_every, ">= 0")
        check(b.max_eval_examples >= 0, "benchmarks.max_eval_examples", b.max_eval_examples, ">= 0")
        for name in ("doc_stride", "max_query_length", "max_answer_length", "n_best_size"):
            check(getattr(b, name) >= 1, f"benchmarks.{name}", getattr(b, name), ">= 1")
        check(b.race_format in RACE_FORMATS, "benchmarks.race_format", b.race_format, "|".join(RACE_FORMATS))
        check(b.squad_metric in SQUAD_METRICS, "benchmarks.squad_metric", b.squad_metric, "|".join(SQUAD_METRICS))
        if b.squad_metric == "cmrc2018":
            check(b.squad_version == "1.1", "benchmarks.squad_version", b.squad_version,
                  "1.1 with benchmarks.squad_metric=cmrc2018 (CMRC2018's files are SQuAD v1.1's format)")
        specs = specs_from_config(b.tasks)  # a ConfigError naming benchmarks.tasks.<NAME>.<field>
        for name in specs:
            check(name.upper() not in {n.upper() for n in _RESERVED_TASK_NAMES}, f"{TASKS_SETTING}.{name}", name,
                  "a name that no built-in task has (" + ", ".join(_RESERVED_TASK_NAMES) + ")")
        for task in b.glue_tasks:
            check(task in GLUE_TASKS or task in CLUE_TASKS or task in specs, "benchmarks.glue_tasks", task,
                  "GLUE task names: " + ", ".join(GLUE_TASKS) + "; CLUE's: " + ", ".join(CLUE_TASKS)
                  + f"; or a task of {TASKS_SETTING}")
            if task in specs:
                files = specs[task].files
                check("train" in files and any(split.startswith("dev") for split in files),
                      f"{TASKS_SETTING}.{task}.files", dict(files), "a train and a dev split (fine-tuned on train, "
                      "scored on dev)")
        for node in b.nodes():
            for task in b.node_tasks(node):
                check(task in b.hparams, f"benchmarks.hparams.{task}", None, "a hyper-parameter row for this task")
        for task, hp in b.hparams.items():
            p = f"benchmarks.hparams.{task}"
            check(hp.learning_rate > 0, f"{p}.learning_rate", hp.learning_rate, "> 0")
            check(hp.batch_size >= 1, f"{p}.batch_size", hp.batch_size, ">= 1")
            check(hp.train_steps >= 1, f"{p}.train_steps", hp.train_steps, ">= 1")
            check(0 <= hp.warmup_steps <= hp.train_steps, f"{p}.warmup_steps", hp.warmup_steps,
                  f"in [0, {p}.train_steps]")
            check(8 <= hp.max_seq_length <= 512, f"{p}.max_seq_length", hp.max_seq_length, "in [8, 512]")
            for name in ("albert_dropout", "classifier_dropout"):
                check(0 <= getattr(hp, name) < 1, f"{p}.{name}", getattr(hp, name), "in [0, 1)")
        return self
