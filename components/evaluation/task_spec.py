"""Any sentence(-pair) classification or regression task as configuration: a :class:`ClassificationSpec` and a reader.

A benchmark beyond GLUE (CLUE, KLUE, JGLUE, IndicGLUE, ...) is one entry of plain data, as YAML or ``--set`` give it
under ``benchmarks.tasks.<NAME>``::

    AFQMC:
      format: jsonl                 # one JSON object a line; or tsv (tab-separated, csv.QUOTE_NONE, as GLUE)
      files: {train: train.json, dev: dev.json, test: test.json}
      text_a: sentence1             # a JSON key (``a.b`` reaches into a nested object) or a TSV column
      text_b: sentence2             # optional: single-sentence tasks leave it out
      label: label
      labels: ["0", "1"]            # label strings in label-id order; empty with regression: true
      metrics: [accuracy]           # names of components/evaluation/metrics.py: accuracy f1 mcc pearson spearman
      id: id                        # optional: the example's id where a row has it, else its 0-based row number

and for TSV files ``header: true|false`` (default true; columns are header names or 0-based indices, without a
header indices only). Two more settings cover real files: ``list_join`` (a string) joins a text field that is a
JSON list of strings (CSL's keywords), ``skip_labels`` (strings) drops rows whose label is one of them (CMNLI's
"-": no majority). :meth:`ClassificationSpec.from_dict` validates every field, with a :class:`config.ConfigError` naming
``benchmarks.tasks.<NAME>.<field>``.

:func:`read_task` reads one split into :class:`~components.evaluation.glue.GlueExample` (the guid is
``<split>-<id or row number>``, the label the string as in the file). A line that is not a JSON object, a key or
column the spec names that a row lacks, a text that is not a string, a label not in ``labels`` (or, for regression,
not a finite number) is a :class:`config.InputError` of one line naming the file, the line and the setting. Pure
Python (json, csv): no TensorFlow, Beam or TFX.
"""
from __future__ import annotations

import csv
import io
import json
import math
import os
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

from components.evaluation.glue import GlueExample
from config.errors import InputError, MissingInputError
from config.schema import ConfigError

__all__ = [
    "CLASSIFICATION_METRICS",
    "FORMATS",
    "METRIC_NAMES",
    "REGRESSION_METRICS",
    "SETTING_PREFIX",
    "ClassificationSpec",
    "example_from_record",
    "iter_jsonl",
    "read_task",
    "specs_from_config",
    "task_file",
]

SETTING_PREFIX = "benchmarks.tasks"
FORMATS = ("jsonl", "tsv")
CLASSIFICATION_METRICS = ("accuracy", "f1", "mcc")   # f1: of label id 1, so binary tasks only
REGRESSION_METRICS = ("pearson", "spearman")
METRIC_NAMES = CLASSIFICATION_METRICS + REGRESSION_METRICS  # the names components/evaluation/metrics.py computes
_FIELDS = ("format", "files", "text_a", "text_b", "label", "labels", "regression", "metrics", "header", "id",
           "list_join", "skip_labels")

Column = Union[str, int]


@dataclass(frozen=True)
class ClassificationSpec:
    """One classification (or, with ``regression``, regression) task: where its files are and what they hold."""
    name: str
    format: str                          # "jsonl" | "tsv"
    files: Dict[str, str]                # split -> file name, relative to the data folder
    text_a: Column
    text_b: Optional[Column]
    label: Column
    labels: Tuple[str, ...]              # label strings in label-id order; () for regression
    metrics: Tuple[str, ...]
    regression: bool = False
    header: bool = False                 # tsv: the first row names the columns (default true); jsonl: False
    id: Optional[Column] = None
    list_join: Optional[str] = None      # joins a text that is a JSON list of strings; None: such a text is an error
    skip_labels: Tuple[str, ...] = field(default=())

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
            raise ConfigError(f"config {key('format')}={fmt!r} is invalid: expected jsonl or tsv")
        header = data.get("header")
        if fmt == "jsonl" and header is not None:
            raise ConfigError(f"config {key('header')} is for tsv files only; {key('format')} is jsonl")
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
                if fmt == "jsonl":
                    raise ConfigError(f"config {key(f)}={value!r} is invalid: a jsonl task names JSON keys")
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
                              f"{key('labels')} has {len(labels)}")
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

        return cls(name=name, format=fmt, files={str(s): f for s, f in files.items()}, text_a=text_a,
                   text_b=text_b, label=label, labels=labels, metrics=metrics, regression=regression, header=header,
                   id=example_id, list_join=list_join, skip_labels=skip_labels)


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
# Reading


def task_file(spec: ClassificationSpec, split: str, data_dir: str) -> str:
    """``<data_dir>/<NAME>/<file>``, or ``<data_dir>/<file>`` when ``data_dir`` is the task's own folder."""
    if split not in spec.files:
        raise ConfigError(f"config {spec.setting('files')} has no split {split!r}; it has "
                          f"{', '.join(sorted(spec.files))}")
    filename = spec.files[split]
    nested, flat = os.path.join(data_dir, spec.name, filename), os.path.join(data_dir, filename)
    for path in (nested, flat):
        if os.path.isfile(path):
            return path
    raise MissingInputError(f"{spec.name} {split} file not found: neither {nested} nor {flat} exists "
                            f"({spec.setting('files')}.{split})")


def _decode(path: str, setting: str) -> str:
    """The file's text (UTF-8, a BOM allowed); bytes that are not UTF-8 name the byte offset and line."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise MissingInputError(f"{path} does not exist ({setting})") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise InputError(f"{path}:{line}: not valid UTF-8 at byte offset {e.start} ({setting})") from None


def iter_jsonl(path: str, setting: str) -> Iterator[Tuple[int, Dict[str, Any]]]:
    """(line number, object) of each non-blank line of a JSON-lines file; ``setting`` is named in errors (the
    task's ``format``)."""
    text = _decode(path, setting)
    for number, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise InputError(f"{path}:{number}: not a JSON object ({e.msg} at column {e.colno}); {setting} "
                             "says one JSON object a line") from None
        if not isinstance(obj, dict):
            raise InputError(f"{path}:{number}: a JSON {type(obj).__name__}, not an object; {setting} says one "
                             "JSON object a line")
        yield number, obj


_MISSING = object()


def _lookup(record, key: Column) -> Any:
    """``record[key]``: a JSON object's key (one with dots that is not itself a key reaches into nested objects) or
    a TSV row's column index; ``_MISSING`` where there is none."""
    if isinstance(record, Mapping):
        if key in record:
            return record[key]
        if isinstance(key, str) and "." in key:
            value: Any = record
            for part in key.split("."):
                if not isinstance(value, Mapping) or part not in value:
                    return _MISSING
                value = value[part]
            return value
        return _MISSING
    return record[key] if isinstance(key, int) and key < len(record) else _MISSING


def _where(spec: ClassificationSpec, which: str) -> str:
    """How an error names the key or column of one of the spec's fields."""
    return f"{'key' if spec.format == 'jsonl' else 'column'} {getattr(spec, which)!r}"


def _label_string(value: Any) -> Optional[str]:
    """A label value as a string, as JSON writes it (``true``, ``1``, ``3.5``); None for what is no label."""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    return None


class _Row:
    """One record (a JSON object, or a TSV row with its columns resolved to indices) and where it is."""

    def __init__(self, spec: ClassificationSpec, record, path: str, line: int, keys: Mapping[str, Any]):
        self.spec, self.record, self.path, self.line, self.keys = spec, record, path, line, keys

    def value(self, which: str, required: bool = True) -> Any:
        key = self.keys[which]
        value = _lookup(self.record, key) if key is not None else _MISSING
        if value is _MISSING and required:
            raise InputError(f"{self.path}:{self.line}: no {_where(self.spec, which)} ({self.spec.setting(which)})")
        return value

    def text(self, which: str) -> str:
        value, spec = self.value(which), self.spec
        if isinstance(value, str):
            return value
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            if spec.list_join is not None:
                return spec.list_join.join(value)
            raise InputError(f"{self.path}:{self.line}: {_where(spec, which)} holds a list; set "
                             f"{spec.setting('list_join')} to join its items ({spec.setting(which)})")
        shown = json.dumps(value, ensure_ascii=False)
        raise InputError(f"{self.path}:{self.line}: {_where(spec, which)} holds {shown[:60]}, not a string "
                         f"({spec.setting(which)})")


def _example(row: _Row, split: str, number: int, labeled: bool) -> Optional[GlueExample]:
    spec = row.spec
    text_a = row.text("text_a")
    text_b = row.text("text_b") if spec.text_b is not None else None
    label = None
    if labeled:
        value = row.value("label")
        label = _label_string(value)
        if label is not None and label in spec.skip_labels:
            return None
        if spec.regression:
            try:
                score = float(label) if label is not None else math.nan
            except ValueError:
                score = math.nan
            if not math.isfinite(score):
                raise InputError(f"{row.path}:{row.line}: {_where(spec, 'label')} holds {value!r}, not a finite "
                                 f"number ({spec.setting('regression')} is true)")
        elif label not in spec.labels:
            raise InputError(f"{row.path}:{row.line}: label {value!r} ({_where(spec, 'label')}) is not one of "
                             f"{list(spec.labels)} ({spec.setting('labels')})")
    example_id = row.value("id", required=False)
    if example_id is _MISSING or example_id is None or isinstance(example_id, (dict, list)):
        example_id = number
    return GlueExample(f"{split}-{example_id}", text_a, text_b, label)


_FIELD_KEYS = ("text_a", "text_b", "label", "id")


def example_from_record(spec: ClassificationSpec, record: Mapping[str, Any], split: str, number: int, path: str,
                        line: int, labeled: bool = True) -> Optional[GlueExample]:
    """The example of one JSON-lines record; None when its label is one of ``skip_labels``. ``number`` is the
    record's 0-based number in the file, the guid's id where the spec has no ``id`` or the record lacks it.
    Readers of files that need more than a spec (CLUEWSC2020's marked spans) build the record, then call this."""
    return _example(_Row(spec, record, path, line, {k: getattr(spec, k) for k in _FIELD_KEYS}), split, number,
                    labeled)


def _read_jsonl(spec: ClassificationSpec, split: str, path: str, labeled: bool) -> List[GlueExample]:
    out: List[GlueExample] = []
    for number, (line, record) in enumerate(iter_jsonl(path, spec.setting("format"))):
        example = example_from_record(spec, record, split, number, path, line, labeled)
        if example is not None:
            out.append(example)
    return out


def _read_tsv(spec: ClassificationSpec, split: str, path: str, labeled: bool) -> List[GlueExample]:
    text = _decode(path, spec.setting("format"))
    reader = csv.reader(io.StringIO(text, newline=""), delimiter="\t", quoting=csv.QUOTE_NONE)
    rows = ((reader.line_num, row) for row in reader if row and not (len(row) == 1 and not row[0].strip()))
    needed = ("text_a", "text_b", "label") if labeled else ("text_a", "text_b")
    keys: Dict[str, Any] = {k: getattr(spec, k) for k in _FIELD_KEYS}
    if spec.header:
        first = next(rows, None)
        if first is None:
            raise InputError(f"{path}: empty, but {spec.setting('header')} is true (a header row comes first)")
        columns: Dict[str, int] = {}
        for index, name in enumerate(first[1]):
            columns.setdefault(name.strip(), index)
        for which in _FIELD_KEYS:
            if not isinstance(keys[which], str):
                continue
            if keys[which] in columns:
                keys[which] = columns[keys[which]]
            elif which in needed:
                raise InputError(f"{path}:{first[0]}: no column {keys[which]!r} in the header "
                                 f"{list(columns)!r} ({spec.setting(which)})")
            else:
                keys[which] = None  # no id column: the row number stands in
    out: List[GlueExample] = []
    for number, (line, row) in enumerate(rows):
        for which in needed:
            if keys[which] is not None and keys[which] >= len(row):
                raise InputError(f"{path}:{line}: row has {len(row)} tab-separated columns, no "
                                 f"{_where(spec, which)} ({spec.setting(which)})")
        example = _example(_Row(spec, row, path, line, keys), split, number, labeled)
        if example is not None:
            out.append(example)
    return out


def read_task(spec: ClassificationSpec, split: str, data_dir: str, labeled: Optional[bool] = None
              ) -> List[GlueExample]:
    """Examples of one split (``<data_dir>/<NAME>/<file>`` or ``<data_dir>/<file>``), in file order. ``labeled``
    (default: every split whose name does not start with "test") says whether each row must carry a label;
    unlabeled examples have ``label=None``. Rows whose label is one of ``skip_labels`` are left out; the guids of
    the others keep their row numbers."""
    if labeled is None:
        labeled = not split.startswith("test")
    path = task_file(spec, split, data_dir)
    if spec.format == "tsv":
        return _read_tsv(spec, split, path, labeled)
    return _read_jsonl(spec, split, path, labeled)
