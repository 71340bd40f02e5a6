"""A classification task as configuration: :class:`ClassificationSpec`, the ``benchmarks.tasks.<NAME>`` entry, and
the built-in CLUE classification tasks as the same plain data (:data:`CLUE_TASK_SETTINGS`).

Plain data and its checks only (no reading: components/evaluation/glue/task_spec_reader.py reads a spec's files), so the
configuration can validate ``benchmarks.tasks`` and ``benchmarks.glue_tasks`` before anything runs, as
config/tokenizer_spec.py does for a vocabulary's settings. The fields, as YAML gives them::

    AFQMC:
      format: jsonl                 # one JSON object a line; json (one array of objects, KLUE's files);
                                    # or tsv (tab-separated, csv.QUOTE_NONE, as GLUE)
      files: {train: train.json, dev: dev.json, test: test.json}
      text_a: sentence1             # a JSON key (``a.b`` reaches into a nested object) or a TSV column
      text_b: sentence2             # optional: single-sentence tasks leave it out
      label: label
      labels: ["0", "1"]            # label strings in label-id order; empty with regression: true
      metrics: [accuracy]           # accuracy f1 macro_f1 mcc | pearson spearman (components/evaluation/metrics.py)
      id: id                        # optional: the example's id where a row has it, else its 0-based row number

and for TSV files ``header: true|false`` (default true; columns are header names or 0-based indices, without a
header indices only); ``list_join`` (a string) joins a text field that is a JSON list of strings (CSL's keywords),
``skip_labels`` (strings) drops rows whose label is one of them (CMNLI's "-": no majority). The task's headline
``score`` is the mean of its ``metrics``, and checkpoints and the median run are chosen by the first of them.

A cross-lingual task (XNLI, PAWS-X) is fine-tuned once, in one language, and scored on every language's dev set::

    PAWS-X:
      format: tsv
      files: {train: "{language}/train.tsv", dev: "{language}/dev_2k.tsv", test: "{language}/test_2k.tsv"}
      text_a: sentence1
      text_b: sentence2
      label: label
      labels: ["0", "1"]
      id: id
      languages: [en, de, fr, zh, ja, ko]   # the dev sets scored, one result each
      train_language: en                    # fine-tuned in (default: the first of languages); one of languages
      # language_column: language           # XNLI's xnli.dev.tsv: one file, each row's language in this column

``{language}`` in a file name is replaced by the language (the training language for ``train``); with
``language_column``, a file's rows are those whose column holds the language (a ``train`` file without the column
is all in the training language). One ``dev`` split; its languages are the splits ``dev.<code>``
(:meth:`ClassificationSpec.language_splits`), the training language's first: it chooses checkpoints and the median
run, as XTREME's zero-shot protocol selects on the training language's dev set.
:meth:`ClassificationSpec.from_dict` validates every field, with a :class:`config.ConfigError` naming
``benchmarks.tasks.<NAME>.<field>``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Mapping, Optional, Sequence, Tuple, Union

from config.languages import check_language
from config.schema import ConfigError

__all__ = [
    "CLASSIFICATION_METRICS",
    "CLUE_TASK_SETTINGS",
    "FORMATS",
    "METRIC_NAMES",
    "REGRESSION_METRICS",
    "LANGUAGE_SLOT",
    "SETTING_PREFIX",
    "ClassificationSpec",
    "specs_from_config",
]

SETTING_PREFIX = "benchmarks.tasks"
FORMATS = ("jsonl", "json", "tsv")
# f1: of label id 1, so binary tasks only; macro_f1: the unweighted mean of every class's F1 (KLUE YNAT)
CLASSIFICATION_METRICS = ("accuracy", "f1", "macro_f1", "mcc")
REGRESSION_METRICS = ("pearson", "spearman")
METRIC_NAMES = CLASSIFICATION_METRICS + REGRESSION_METRICS  # the names components/evaluation/metrics.py computes
_FIELDS = ("format", "files", "text_a", "text_b", "label", "labels", "regression", "metrics", "header", "id",
           "list_join", "skip_labels", "languages", "train_language", "language_column")
LANGUAGE_SLOT = "{language}"  # in a cross-lingual task's file names: the language of the split

Column = Union[str, int]


@dataclass(frozen=True)
class ClassificationSpec:
    """One classification (or, with ``regression``, regression) task: where its files are and what they hold."""
    name: str
    format: str                          # "jsonl" | "json" | "tsv"
    files: Dict[str, str]                # split -> file name, relative to the data folder
    text_a: Column
    text_b: Optional[Column]
    label: Column
    labels: Tuple[str, ...]              # label strings in label-id order; () for regression
    metrics: Tuple[str, ...]
    regression: bool = False
    header: bool = False                 # tsv: the first row names the columns (default true); JSON: False
    id: Optional[Column] = None
    list_join: Optional[str] = None      # joins a text that is a JSON list of strings; None: such a text is an error
    skip_labels: Tuple[str, ...] = field(default=())
    languages: Tuple[str, ...] = field(default=())  # cross-lingual: the dev sets' languages, the training one first
    train_language: Optional[str] = None
    language_column: Optional[Column] = None

    @property
    def is_cross_lingual(self) -> bool:
        return bool(self.languages)

    def language_splits(self, split: str) -> Tuple[str, ...]:
        """A split's per-language splits (``dev`` → ``dev.en``, ``dev.de``, …, the training language's first);
        ``(split,)`` for the training split or a task of one language."""
        if not self.languages or split == "train":
            return (split,)
        return tuple(f"{split}.{code}" for code in self.languages)

    def split_language(self, split: str) -> Optional[str]:
        """The language a (per-language) split reads: ``dev.de`` → de, ``train`` → the training language; None
        for a task of one language."""
        if not self.languages:
            return None
        return self.train_language if split == "train" else split.rsplit(".", 1)[-1]

    def split_file(self, split: str) -> str:
        """The file name of a split (a per-language split's with its language in place of ``{language}``); a
        :class:`ConfigError` naming ``files`` for a split the task does not have."""
        base = split.rsplit(".", 1)[0] if self.languages and split != "train" else split
        if base not in self.files or (base != split and split.rsplit(".", 1)[-1] not in self.languages):
            raise ConfigError(f"config {self.setting('files')} has no split {split!r}; it has "
                              f"{', '.join(sorted(self.files))}"
                              + (f" (each but train in {', '.join(self.languages)})" if self.languages else ""))
        language = self.split_language(split)
        return self.files[base].replace(LANGUAGE_SLOT, language) if language else self.files[base]

    # The attributes the GLUE code reads from a GlueTask, so a spec can stand where a task does.
    @property
    def is_regression(self) -> bool:
        return self.regression

    @property
    def num_labels(self) -> int:
        return 1 if self.regression else len(self.labels)

    @property
    def has_text_b(self) -> bool:
        return self.text_b is not None

    @property
    def headline(self) -> Tuple[str, ...]:
        """The metrics whose mean is the task's headline ``score`` (as GLUE's MRPC / STS-B): all of them."""
        return self.metrics

    @property
    def selection_metric(self) -> str:
        """The metric checkpoints and the median run are chosen by: the first of ``metrics``."""
        return self.metrics[0]

    def setting(self, name: str) -> str:
        """The dotted name of one of this task's settings, as YAML and ``--set`` spell it."""
        return f"{SETTING_PREFIX}.{self.name}.{name}"

    def label_id(self, label: str) -> int:
        """The id of a label string (its index in ``labels``)."""
        return self.labels.index(label)

    @classmethod
    def from_dict(cls, name: str, data: Mapping[str, Any]) -> "ClassificationSpec":
        """The spec of ``benchmarks.tasks.<name>`` from plain data (a parsed YAML mapping); a :class:`ConfigError`
        naming the setting for anything missing, unknown or of the wrong kind."""
        if not isinstance(name, str) or not name or "." in name or name != name.strip():
            raise ConfigError(f"config {SETTING_PREFIX}: task name {name!r} is invalid: expected a non-empty name "
                              "without dots or surrounding spaces")

        def key(f: str) -> str:
            return f"{SETTING_PREFIX}.{name}.{f}"

        if not isinstance(data, Mapping):
            raise ConfigError(f"config {SETTING_PREFIX}.{name} is invalid: expected a mapping of settings "
                              f"({', '.join(_FIELDS)}), got {type(data).__name__}")
        unknown = sorted(str(k) for k in data if k not in _FIELDS)
        if unknown:
            raise ConfigError(f"config {key(unknown[0])} is not a setting: a task takes {', '.join(_FIELDS)}")
        for required in ("format", "files", "text_a", "label"):
            if data.get(required) is None:
                raise ConfigError(f"config {key(required)} is missing: every task needs format, files, text_a "
                                  "and label")

        fmt = data["format"]
        if fmt not in FORMATS:
            raise ConfigError(f"config {key('format')}={fmt!r} is invalid: expected jsonl, json or tsv")
        header = data.get("header")
        if fmt != "tsv" and header is not None:
            raise ConfigError(f"config {key('header')} is for tsv files only; {key('format')} is {fmt}")
        if header is not None and not isinstance(header, bool):
            raise ConfigError(f"config {key('header')}={header!r} is invalid: expected true or false")
        header = fmt == "tsv" and header is not False   # tsv files have a header row unless the spec says not

        files = data["files"]
        if not isinstance(files, Mapping) or not files:
            raise ConfigError(f"config {key('files')}={files!r} is invalid: expected a mapping of split to file "
                              "name, e.g. {train: train.json, dev: dev.json}")
        for split, filename in files.items():
            if not isinstance(split, str) or not split.strip():
                raise ConfigError(f"config {key('files')}: split name {split!r} is invalid: expected a name")
            if not isinstance(filename, str) or not filename.strip():
                raise ConfigError(f"config {key('files')}.{split}={filename!r} is invalid: expected a file name")

        def column(f: str, optional: bool) -> Optional[Column]:
            value = data.get(f)
            if value is None:
                if optional:
                    return None
                raise ConfigError(f"config {key(f)} is missing")
            if isinstance(value, bool) or not isinstance(value, (str, int)):
                raise ConfigError(f"config {key(f)}={value!r} is invalid: expected a key or column name"
                                  + (" or a 0-based column index" if fmt == "tsv" else ""))
            if isinstance(value, int):
                if fmt != "tsv":
                    raise ConfigError(f"config {key(f)}={value!r} is invalid: a {fmt} task names JSON keys")
                if value < 0:
                    raise ConfigError(f"config {key(f)}={value!r} is invalid: expected a 0-based column index")
            elif not value.strip():
                raise ConfigError(f"config {key(f)}={value!r} is invalid: expected a key or column name")
            elif fmt == "tsv" and not header:
                raise ConfigError(f"config {key(f)}={value!r} names a column, but {key('header')} is false: "
                                  "a file without a header row takes 0-based column indices")
            return value

        text_a, text_b = column("text_a", False), column("text_b", True)
        label, example_id = column("label", False), column("id", True)

        regression = data.get("regression", False)
        if not isinstance(regression, bool):
            raise ConfigError(f"config {key('regression')}={regression!r} is invalid: expected true or false")
        labels = _strings(data.get("labels", ()) or (), key("labels"))
        if regression and labels:
            raise ConfigError(f"config {key('labels')} must be empty for a regression task "
                              f"({key('regression')} is true)")
        if not regression and len(labels) < 2:
            raise ConfigError(f"config {key('labels')}={list(labels)!r} is invalid: expected at least two label "
                              f"strings in label-id order (or {key('regression')}: true)")
        if len(set(labels)) != len(labels):
            duplicate = next(x for x in labels if labels.count(x) > 1)
            raise ConfigError(f"config {key('labels')} lists {duplicate!r} twice")

        allowed = REGRESSION_METRICS if regression else CLASSIFICATION_METRICS
        metrics = _strings(data.get("metrics") or (allowed[:2] if regression else ("accuracy",)), key("metrics"))
        for metric in metrics:
            if metric not in METRIC_NAMES:
                raise ConfigError(f"config {key('metrics')}: unknown metric {metric!r}; expected some of "
                                  f"{', '.join(METRIC_NAMES)}")
            if metric not in allowed:
                raise ConfigError(f"config {key('metrics')}: {metric} is a "
                                  f"{'classification' if regression else 'regression'} metric, and this task is a "
                                  f"{'regression' if regression else 'classification'} task")
        if "f1" in metrics and len(labels) != 2:
            raise ConfigError(f"config {key('metrics')}: f1 (of label id 1) needs exactly two labels, "
                              f"{key('labels')} has {len(labels)} (macro_f1 averages every class's F1)")
        if len(set(metrics)) != len(metrics):
            raise ConfigError(f"config {key('metrics')} lists a metric twice: {list(metrics)!r}")

        list_join = data.get("list_join")
        if list_join is not None and not isinstance(list_join, str):
            raise ConfigError(f"config {key('list_join')}={list_join!r} is invalid: expected a string "
                              "(the separator put between the list's items)")
        skip_labels = _strings(data.get("skip_labels", ()) or (), key("skip_labels"))
        both = [x for x in skip_labels if x in labels]
        if both:
            raise ConfigError(f"config {key('skip_labels')}: {both[0]!r} is also one of {key('labels')}")

        languages, train_language = _languages(data, key)
        language_column = column("language_column", True)
        if language_column is not None and not languages:
            raise ConfigError(f"config {key('language_column')} is set, but {key('languages')} is not: a column of "
                              "languages is read for a cross-lingual task only")
        for split, filename in files.items():
            if LANGUAGE_SLOT in filename and not languages:
                raise ConfigError(f"config {key('files')}.{split}={filename!r} names {LANGUAGE_SLOT}, but "
                                  f"{key('languages')} is not set")
            if languages and LANGUAGE_SLOT not in filename and language_column is None and split != "train":
                raise ConfigError(f"config {key('files')}.{split}={filename!r} is one file for every language: "
                                  f"put {LANGUAGE_SLOT} in its name, or set {key('language_column')} (the column "
                                  "naming each row's language, as XNLI's)")
            if languages and "." in split:
                raise ConfigError(f"config {key('files')}: split name {split!r} is invalid for a cross-lingual "
                                  "task: a name without dots (its languages are the splits <split>.<code>)")
        if languages and sum(1 for split in files if split.startswith("dev")) != 1:
            raise ConfigError(f"config {key('files')} of a cross-lingual task has "
                              f"{sum(1 for split in files if split.startswith('dev'))} dev splits: expected one "
                              f"(scored in each of {key('languages')})")

        return cls(name=name, format=fmt, files={str(s): f for s, f in files.items()}, text_a=text_a,
                   text_b=text_b, label=label, labels=labels, metrics=metrics, regression=regression, header=header,
                   id=example_id, list_join=list_join, skip_labels=skip_labels, languages=languages,
                   train_language=train_language, language_column=language_column)


def _languages(data: Mapping[str, Any], key) -> Tuple[Tuple[str, ...], Optional[str]]:
    """(``languages`` with the training language first, ``train_language``) of a spec; ((), None) without them."""
    raw, train = data.get("languages"), data.get("train_language")
    if raw is None:
        if train is not None:
            raise ConfigError(f"config {key('train_language')} is set, but {key('languages')} is not: a "
                              "cross-lingual task names the languages of its dev sets")
        return (), None
    codes = _strings(raw, key("languages"))
    if len(codes) < 2:
        raise ConfigError(f"config {key('languages')}={list(codes)!r} is invalid: expected two or more ISO 639-1 "
                          f"codes (a task of one language leaves {key('languages')} out)")
    for code in codes:
        check_language(code, key("languages"))
    if len(set(codes)) != len(codes):
        raise ConfigError(f"config {key('languages')} lists {next(c for c in codes if codes.count(c) > 1)!r} twice")
    train = codes[0] if train is None else check_language(train, key("train_language"))
    if train not in codes:
        raise ConfigError(f"config {key('train_language')}={train!r} is not one of {key('languages')} "
                          f"({', '.join(codes)}): the training language's dev set chooses the checkpoints")
    return (train,) + tuple(c for c in codes if c != train), train


def _strings(value: Any, setting: str) -> Tuple[str, ...]:
    """A YAML list of strings (integers become their decimal strings: ``[0, 1]`` is ``["0", "1"]``)."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise ConfigError(f"config {setting}={value!r} is invalid: expected a list")
    out = []
    for item in value:
        if isinstance(item, bool) or not isinstance(item, (str, int)):
            raise ConfigError(f"config {setting}: item {item!r} is invalid: expected a string")
        out.append(str(item))
    return tuple(out)


def specs_from_config(tasks: Mapping[str, Any]) -> Dict[str, ClassificationSpec]:
    """Every task of ``benchmarks.tasks`` (``{NAME: {setting: value}}``) as a spec, in the mapping's order."""
    if not isinstance(tasks, Mapping):
        raise ConfigError(f"config {SETTING_PREFIX} is invalid: expected a mapping of task name to its settings, "
                          f"got {type(tasks).__name__}")
    return {str(name): ClassificationSpec.from_dict(name, data) for name, data in tasks.items()}



# ---------------------------------------------------------------------------------------------
# CLUE's classification tasks, as plain data: exactly what a benchmarks.tasks.<NAME> entry in YAML would hold
# (components/evaluation/glue/clue.py reads them; CLUEWSC2020's text_a is its sentence with the spans marked there).

_CLUE_SPLITS = {"train": "train.json", "dev": "dev.json", "test": "test.json"}
_NLI = ["contradiction", "entailment", "neutral"]

CLUE_TASK_SETTINGS: Dict[str, Dict[str, Any]] = {
    "AFQMC": {"format": "jsonl", "files": _CLUE_SPLITS, "text_a": "sentence1", "text_b": "sentence2",
              "label": "label", "labels": ["0", "1"], "metrics": ["accuracy"], "id": "id"},
    "TNEWS": {"format": "jsonl", "files": _CLUE_SPLITS, "text_a": "sentence", "label": "label",
              "labels": [str(100 + i) for i in range(17) if i not in (5, 11)], "metrics": ["accuracy"], "id": "id"},
    "IFLYTEK": {"format": "jsonl", "files": _CLUE_SPLITS, "text_a": "sentence", "label": "label",
                "labels": [str(i) for i in range(119)], "metrics": ["accuracy"], "id": "id"},
    "CMNLI": {"format": "jsonl", "files": _CLUE_SPLITS, "text_a": "sentence1", "text_b": "sentence2",
              "label": "label", "labels": _NLI, "metrics": ["accuracy"], "id": "id", "skip_labels": ["-"]},
    "OCNLI": {"format": "jsonl", "files": _CLUE_SPLITS, "text_a": "sentence1", "text_b": "sentence2",
              "label": "label", "labels": _NLI, "metrics": ["accuracy"], "id": "id", "skip_labels": ["-"]},
    "CSL": {"format": "jsonl", "files": _CLUE_SPLITS, "text_a": "keyword", "text_b": "abst", "label": "label",
            "labels": ["0", "1"], "metrics": ["accuracy"], "id": "id", "list_join": " "},
    "CLUEWSC2020": {"format": "jsonl", "files": _CLUE_SPLITS, "text_a": "text", "label": "label",
                    "labels": ["true", "false"], "metrics": ["accuracy"], "id": "idx"},
}
