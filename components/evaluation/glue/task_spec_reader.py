"""Any sentence(-pair) classification or regression task as configuration: the reader of a
:class:`~components.evaluation.glue.task_spec.ClassificationSpec`.

A benchmark beyond GLUE (CLUE, KLUE, JGLUE, IndicGLUE, ...) is one entry of plain data under
``benchmarks.tasks.<NAME>`` (its fields and checks: components/evaluation/glue/task_spec.py, re-exported here), run by the GLUE node
when ``benchmarks.glue_tasks`` names it, on ``<benchmarks.glue_dir>/<NAME>/``.

:func:`read_task` reads one split into :class:`~components.evaluation.glue.glue_data.GlueExample` (the guid is
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
from typing import Any, Dict, Iterator, List, Mapping, Optional, Tuple, Union

from components.evaluation.glue.glue_data import GlueExample
from config.errors import InputError, MissingInputError
from config.schema import ConfigError
from components.evaluation.glue.task_spec import (CLASSIFICATION_METRICS, FORMATS, METRIC_NAMES, REGRESSION_METRICS, SETTING_PREFIX,
                              ClassificationSpec, Column, specs_from_config)

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


# ---------------------------------------------------------------------------------------------
# Reading


def task_file(spec: ClassificationSpec, split: str, data_dir: str) -> str:
    """``<data_dir>/<NAME>/<file>``, or ``<data_dir>/<file>`` when ``data_dir`` is the task's own folder."""
    filename = spec.split_file(split)  # a ConfigError naming files for a split the task does not have
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
    return f"{'column' if spec.format == 'tsv' else 'key'} {getattr(spec, which)!r}"


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

    def __init__(self, spec: ClassificationSpec, record, path: str, line: Union[int, str], keys: Mapping[str, Any]):
        self.spec, self.record, self.path, self.line, self.keys = spec, record, path, line, keys
        # where errors say the record is: "<path>:<line>", or "<path>[<index>]" for an item of a JSON array
        self.where = f"{path}:{line}" if isinstance(line, int) else f"{path}{line}"

    def value(self, which: str, required: bool = True) -> Any:
        key = self.keys[which]
        value = _lookup(self.record, key) if key is not None else _MISSING
        if value is _MISSING and required:
            raise InputError(f"{self.where}: no {_where(self.spec, which)} ({self.spec.setting(which)})")
        return value

    def text(self, which: str) -> str:
        value, spec = self.value(which), self.spec
        if isinstance(value, str):
            return value
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            if spec.list_join is not None:
                return spec.list_join.join(value)
            raise InputError(f"{self.where}: {_where(spec, which)} holds a list; set "
                             f"{spec.setting('list_join')} to join its items ({spec.setting(which)})")
        shown = json.dumps(value, ensure_ascii=False)
        raise InputError(f"{self.where}: {_where(spec, which)} holds {shown[:60]}, not a string "
                         f"({spec.setting(which)})")


def _in_language(row: _Row, split: str) -> bool:
    """Whether a row of a cross-lingual task's file with ``language_column`` is in the split's language (a
    ``train`` row without the column is in the training language; a dev or test row must have it)."""
    spec = row.spec
    if spec.language_column is None:
        return True
    value = row.value("language_column", required=split != "train")
    return value is _MISSING or str(value).strip() == spec.split_language(split)


def _example(row: _Row, split: str, number: int, labeled: bool) -> Optional[GlueExample]:
    spec = row.spec
    if not _in_language(row, split):
        return None
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
                raise InputError(f"{row.where}: {_where(spec, 'label')} holds {value!r}, not a finite "
                                 f"number ({spec.setting('regression')} is true)")
        elif label not in spec.labels:
            raise InputError(f"{row.where}: label {value!r} ({_where(spec, 'label')}) is not one of "
                             f"{list(spec.labels)} ({spec.setting('labels')})")
    example_id = row.value("id", required=False)
    if example_id is _MISSING or example_id is None or isinstance(example_id, (dict, list)):
        example_id = number
    return GlueExample(f"{split}-{example_id}", text_a, text_b, label)


_FIELD_KEYS = ("text_a", "text_b", "label", "id", "language_column")


def example_from_record(spec: ClassificationSpec, record: Mapping[str, Any], split: str, number: int, path: str,
                        line: Union[int, str], labeled: bool = True) -> Optional[GlueExample]:
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


def _read_json(spec: ClassificationSpec, split: str, path: str, labeled: bool) -> List[GlueExample]:
    """A file holding one JSON array of objects (KLUE's); errors name the item as ``<path>[<index>]``."""
    setting = spec.setting("format")
    text = _decode(path, setting)
    try:
        items = json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(f"{path}:{e.lineno}: not valid JSON ({e.msg} at column {e.colno}); {setting} says one "
                         "JSON array of objects") from None
    if not isinstance(items, list):
        raise InputError(f"{path}: a JSON {type(items).__name__}, not an array; {setting} says one JSON array of "
                         "objects")
    out: List[GlueExample] = []
    for number, record in enumerate(items):
        if not isinstance(record, dict):
            raise InputError(f"{path}[{number}]: a JSON {type(record).__name__}, not an object; {setting} says one "
                             "JSON array of objects")
        example = example_from_record(spec, record, split, number, path, f"[{number}]", labeled)
        if example is not None:
            out.append(example)
    return out


def _read_tsv(spec: ClassificationSpec, split: str, path: str, labeled: bool) -> List[GlueExample]:
    text = _decode(path, spec.setting("format"))
    reader = csv.reader(io.StringIO(text, newline=""), delimiter="\t", quoting=csv.QUOTE_NONE)
    rows = ((reader.line_num, row) for row in reader if row and not (len(row) == 1 and not row[0].strip()))
    needed = ("text_a", "text_b", "label") if labeled else ("text_a", "text_b")
    if split != "train":
        needed += ("language_column",)  # a dev or test row says its language (a train file may hold one language)
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
    if spec.format == "json":
        return _read_json(spec, split, path, labeled)
    return _read_jsonl(spec, split, path, labeled)
