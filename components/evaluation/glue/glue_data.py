"""GLUE: task registry, TSV readers, sentence(-pair) featurization and submission files.

Files follow the layout of the GLUE download script: ``<data_dir>/<TASK>/{train,dev,test}.tsv``
(MNLI: ``dev_matched``/``dev_mismatched``/``test_matched``/``test_mismatched``). GLUE TSVs are
*not* CSV-quoted (sentences contain unbalanced ``"``), so rows are split with ``csv.QUOTE_NONE``.
CoLA's train/dev files have no header row; every other file has one (MRPC's starts with a BOM,
removed by reading as ``utf-8-sig``).
"""
from __future__ import annotations

import csv
import math
import os
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from config.errors import InputError, MissingInputError
from config.schema import ConfigError

__all__ = [
    "predictions_from_logits",
    "GlueExample",
    "GlueSplit",
    "GlueTask",
    "GLUE_TASKS",
    "get_task",
    "read_glue",
    "read_glue_file",
    "convert_glue_examples",
    "truncate_pair",
    "write_glue_predictions",
    "read_glue_predictions",
    "submission_filename",
]


@dataclass(frozen=True)
class GlueExample:
    guid: str                 # "<split>-<index>": the file's index column, else the 0-based row number
    text_a: str
    text_b: Optional[str]
    label: Optional[str]      # the label string as in the file ("1", "entailment", "4.750"); None for test


@dataclass(frozen=True)
class GlueSplit:
    """Column layout of one GLUE TSV (column indices may be negative: counted from the end)."""
    filename: str
    header: bool
    text_a: int
    text_b: Optional[int]
    label: Optional[int]
    index: Optional[int]      # column holding the GLUE example index (test files, some dev files)
    min_columns: int          # rows with fewer columns are malformed


@dataclass(frozen=True)
class GlueTask:
    name: str
    labels: Tuple[str, ...]   # label strings in label-id order (empty for regression)
    is_regression: bool
    metrics: Tuple[str, ...]
    splits: Dict[str, GlueSplit] = field(default_factory=dict)
    # GLUE leaderboard submission file name for each test split.
    submission: Dict[str, str] = field(default_factory=dict)

    @property
    def num_labels(self) -> int:
        return 1 if self.is_regression else len(self.labels)


def _pair_splits(a: int, b: int, label: int, ncols: int, test_a: int, test_b: int, test_ncols: int,
                 dev_index: Optional[int] = 0) -> Dict[str, GlueSplit]:
    return {
        "train": GlueSplit("train.tsv", True, a, b, label, dev_index, ncols),
        "dev": GlueSplit("dev.tsv", True, a, b, label, dev_index, ncols),
        "test": GlueSplit("test.tsv", True, test_a, test_b, None, 0, test_ncols),
    }


_BINARY = ("0", "1")
_NLI2 = ("entailment", "not_entailment")

GLUE_TASKS: Dict[str, GlueTask] = {
    # CoLA train/dev: source, label, original-label-or-empty, sentence; no header.
    "CoLA": GlueTask("CoLA", _BINARY, False, ("mcc",), {
        "train": GlueSplit("train.tsv", False, 3, None, 1, None, 4),
        "dev": GlueSplit("dev.tsv", False, 3, None, 1, None, 4),
        "test": GlueSplit("test.tsv", True, 1, None, None, 0, 2),
    }, {"test": "CoLA.tsv"}),
    # SST-2 train/dev: sentence, label.
    "SST-2": GlueTask("SST-2", _BINARY, False, ("accuracy",), {
        "train": GlueSplit("train.tsv", True, 0, None, 1, None, 2),
        "dev": GlueSplit("dev.tsv", True, 0, None, 1, None, 2),
        "test": GlueSplit("test.tsv", True, 1, None, None, 0, 2),
    }, {"test": "SST-2.tsv"}),
    # MRPC train/dev: Quality, #1 ID, #2 ID, #1 String, #2 String; test: index, ids, strings.
    "MRPC": GlueTask("MRPC", _BINARY, False, ("f1", "accuracy"),
                     _pair_splits(3, 4, 0, 5, 3, 4, 5, dev_index=None), {"test": "MRPC.tsv"}),
    # STS-B: index genre filename year old_index source1 source2 sentence1 sentence2 score.
    "STS-B": GlueTask("STS-B", (), True, ("pearson", "spearman"),
                      _pair_splits(7, 8, 9, 10, 7, 8, 9), {"test": "STS-B.tsv"}),
    # QQP train/dev: id qid1 qid2 question1 question2 is_duplicate; test: id question1 question2.
    "QQP": GlueTask("QQP", _BINARY, False, ("f1", "accuracy"),
                    _pair_splits(3, 4, 5, 6, 1, 2, 3), {"test": "QQP.tsv"}),
    # MNLI: index promptID pairID genre 4 parses sentence1 sentence2 [label1..label5] gold_label.
    "MNLI": GlueTask("MNLI", ("contradiction", "entailment", "neutral"), False, ("accuracy",), {
        "train": GlueSplit("train.tsv", True, 8, 9, -1, 0, 12),
        "dev_matched": GlueSplit("dev_matched.tsv", True, 8, 9, -1, 0, 16),
        "dev_mismatched": GlueSplit("dev_mismatched.tsv", True, 8, 9, -1, 0, 16),
        "test_matched": GlueSplit("test_matched.tsv", True, 8, 9, None, 0, 10),
        "test_mismatched": GlueSplit("test_mismatched.tsv", True, 8, 9, None, 0, 10),
    }, {"test_matched": "MNLI-m.tsv", "test_mismatched": "MNLI-mm.tsv"}),
    # QNLI / RTE / WNLI: index sentence1(question) sentence2(sentence) label.
    "QNLI": GlueTask("QNLI", _NLI2, False, ("accuracy",), _pair_splits(1, 2, 3, 4, 1, 2, 3), {"test": "QNLI.tsv"}),
    "RTE": GlueTask("RTE", _NLI2, False, ("accuracy",), _pair_splits(1, 2, 3, 4, 1, 2, 3), {"test": "RTE.tsv"}),
    "WNLI": GlueTask("WNLI", _BINARY, False, ("accuracy",), _pair_splits(1, 2, 3, 4, 1, 2, 3), {"test": "WNLI.tsv"}),
}

_ALIASES = {"SST2": "SST-2", "STSB": "STS-B", "STS": "STS-B", "MNLI-M": "MNLI", "MNLI-MM": "MNLI"}


def get_task(task: str) -> GlueTask:
    for name, t in GLUE_TASKS.items():
        if name.upper() == task.upper():
            return t
    if task.upper() in _ALIASES:
        return GLUE_TASKS[_ALIASES[task.upper()]]
    raise ConfigError(f"unknown GLUE task {task!r} (benchmarks.glue_tasks, or score --task); expected one of "
                      f"{sorted(GLUE_TASKS)}")


def _task(task):
    """A GLUE task by name, or the task object itself (a :class:`GlueTask` or a
    :class:`components.evaluation.glue.task_spec.ClassificationSpec`: both have ``name``, ``labels``, ``is_regression``)."""
    return get_task(task) if isinstance(task, str) else task


def _split_layout(task: GlueTask, split: str) -> GlueSplit:
    if split not in task.splits:
        raise ValueError(f"GLUE task {task.name} has no split {split!r}; splits: {sorted(task.splits)}")
    return task.splits[split]


def read_glue(task: str, split: str, data_dir: str) -> List[GlueExample]:
    """Examples of ``<data_dir>/<TASK>/<split>.tsv`` (``data_dir`` may also be the task folder itself)."""
    t = get_task(task)
    layout = _split_layout(t, split)
    path = os.path.join(data_dir, t.name, layout.filename)
    if not os.path.exists(path) and os.path.exists(os.path.join(data_dir, layout.filename)):
        path = os.path.join(data_dir, layout.filename)
    return read_glue_file(t.name, path, split)


class _open_tsv:
    """``open`` of a TSV input (UTF-8, a BOM allowed) whose decoding errors name the file and the byte; a missing
    file is a :class:`config.MissingInputError`."""

    def __init__(self, path: str):
        self.path = path
        try:
            self.file = open(path, encoding="utf-8-sig", newline="")
        except FileNotFoundError:
            raise MissingInputError(f"GLUE file {path} does not exist") from None

    def __enter__(self):
        return self.file

    def __exit__(self, kind, exc, tb):
        self.file.close()
        if isinstance(exc, UnicodeDecodeError):  # its offset is into a buffered chunk: find the file's
            with open(self.path, "rb") as f:
                data = f.read()
            try:
                data.decode("utf-8-sig")
                where = ""
            except UnicodeDecodeError as whole:
                line = data.count(b"\n", 0, whole.start) + 1
                where = f" at byte offset {whole.start} (line {line})"
            raise InputError(f"{self.path}: not valid UTF-8{where}") from None
        return False


def read_glue_file(task: str, path: str, split: Optional[str] = None) -> List[GlueExample]:
    """Read one GLUE TSV; ``split`` defaults to the file name's stem ("dev", "dev_matched", ...).

    Raises :class:`config.InputError` (a ``ValueError``) naming the file and line for rows with too few columns,
    unknown labels or (STS-B) non-numeric scores, and for bytes that are not UTF-8.
    """
    t = get_task(task)
    if split is None:
        split = os.path.splitext(os.path.basename(path))[0]
    layout = _split_layout(t, split)
    examples: List[GlueExample] = []
    with _open_tsv(path) as f:
        reader = csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
        row_number = 0
        for row in reader:
            line = reader.line_num
            if layout.header and line == 1:
                continue
            if not row or (len(row) == 1 and not row[0].strip()):
                continue  # trailing blank line
            if len(row) < layout.min_columns:
                raise InputError(
                    f"{path}:{line}: GLUE {t.name} {split} row has {len(row)} tab-separated columns, "
                    f"expected at least {layout.min_columns}: {row!r}")
            index = row[layout.index] if layout.index is not None else str(row_number)
            label = None
            if layout.label is not None:
                label = row[layout.label].strip()
                if t.is_regression:
                    try:
                        value = float(label)
                    except ValueError:
                        value = float("nan")
                    if not math.isfinite(value):
                        raise InputError(f"{path}:{line}: GLUE {t.name} score {label!r} is not a number")
                elif label not in t.labels:
                    raise InputError(
                        f"{path}:{line}: GLUE {t.name} label {label!r} is not one of {list(t.labels)}")
            text_b = row[layout.text_b] if layout.text_b is not None else None
            examples.append(GlueExample(f"{split}-{index}", row[layout.text_a], text_b, label))
            row_number += 1
    return examples


def truncate_pair(a: List[int], b: List[int], max_total: int) -> None:
    """Longest-first truncation in place: drop the last token of the longer sequence (ties: b)."""
    while len(a) + len(b) > max_total:
        if len(a) > len(b):
            a.pop()
        else:
            b.pop()


def convert_glue_examples(examples: Sequence[GlueExample], tokenizer, max_seq_length: int,
                          task) -> Dict[str, np.ndarray]:
    """``[CLS] a [SEP] (b [SEP])`` → input_ids/input_mask/segment_ids int32 [N, L] (pad 0) and
    label_ids: int32 [N] (-1 unlabeled) or, for STS-B (a regression task), float32 [N] (NaN unlabeled).
    ``task``: a GLUE task's name or a task object (a spec)."""
    t = _task(task)
    if max_seq_length < 3:
        raise ValueError(f"max_seq_length must be >= 3, got {max_seq_length}")
    n = len(examples)
    input_ids = np.zeros((n, max_seq_length), dtype=np.int32)
    input_mask = np.zeros((n, max_seq_length), dtype=np.int32)
    segment_ids = np.zeros((n, max_seq_length), dtype=np.int32)
    if t.is_regression:
        label_ids = np.full((n,), np.nan, dtype=np.float32)
    else:
        label_ids = np.full((n,), -1, dtype=np.int32)
    label_map = {label: i for i, label in enumerate(t.labels)}
    for i, ex in enumerate(examples):
        a = list(tokenizer.encode(ex.text_a))
        if ex.text_b is not None:
            b = list(tokenizer.encode(ex.text_b))
            truncate_pair(a, b, max_seq_length - 3)
        else:
            b = None
            a = a[: max_seq_length - 2]
        ids = [tokenizer.cls_id] + a + [tokenizer.sep_id]
        seg = [0] * len(ids)
        if b is not None:
            ids += b + [tokenizer.sep_id]
            seg += [1] * (len(b) + 1)
        input_ids[i, : len(ids)] = ids
        input_mask[i, : len(ids)] = 1
        segment_ids[i, : len(seg)] = seg
        if ex.label is not None:
            if t.is_regression:
                label_ids[i] = float(ex.label)
            else:
                if ex.label not in label_map:
                    raise ValueError(f"example {ex.guid}: label {ex.label!r} is not one of {list(t.labels)}")
                label_ids[i] = label_map[ex.label]
    return {"input_ids": input_ids, "input_mask": input_mask, "segment_ids": segment_ids, "label_ids": label_ids}


def predictions_from_logits(task, logits: np.ndarray) -> np.ndarray:
    """Model outputs → predictions: the regression value (STS-B) or the arg-max label id (``task``: a GLUE
    task's name or a task object)."""
    logits = np.asarray(logits)
    return logits[:, 0] if _task(task).is_regression else np.argmax(logits, axis=-1)


def submission_filename(task: str, split: str = "test") -> str:
    """GLUE leaderboard file name, e.g. ``MNLI-m.tsv`` for MNLI test_matched."""
    t = get_task(task)
    if split in t.submission:
        return t.submission[split]
    return f"{t.name}.tsv"


def _guid_index(guid) -> str:
    s = str(guid)
    return s.rsplit("-", 1)[-1] if "-" in s else s


def format_prediction(task, prediction) -> str:
    """Label id / logits / label string / regression value → the string GLUE expects (``task``: a GLUE task's
    name or a task object, whose label strings it writes)."""
    t = _task(task)
    if t.is_regression:
        value = float(np.asarray(prediction, dtype=np.float64).reshape(-1)[0])
        return f"{value:.6f}"
    if isinstance(prediction, str):
        if prediction not in t.labels:
            raise ValueError(f"GLUE {t.name} prediction {prediction!r} is not one of {list(t.labels)}")
        return prediction
    arr = np.asarray(prediction)
    label_id = int(np.argmax(arr)) if arr.ndim == 1 and arr.size > 1 else int(arr.reshape(-1)[0])
    if not 0 <= label_id < len(t.labels):
        raise ValueError(f"GLUE {t.name} label id {label_id} out of range 0..{len(t.labels) - 1}")
    return t.labels[label_id]


def write_glue_predictions(task, guids: Sequence, predictions: Sequence, path: str) -> None:
    """Write the GLUE submission TSV: header ``index<TAB>prediction``, one row per example.

    ``guids`` are :class:`GlueExample` guids ("test-17" → index 17) or plain indices;
    ``predictions`` are label ids, logit rows, label strings, or STS-B scores.
    """
    if len(guids) != len(predictions):
        raise ValueError(f"{len(guids)} guids but {len(predictions)} predictions")
    parent = os.path.dirname(path)
    if parent:
        os.makedirs(parent, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write("index\tprediction\n")
        for guid, pred in zip(guids, predictions):
            f.write(f"{_guid_index(guid)}\t{format_prediction(task, pred)}\n")


def read_glue_predictions(path: str) -> Dict[str, str]:
    """Inverse of :func:`write_glue_predictions`: {index: prediction string}."""
    out: Dict[str, str] = {}
    with _open_tsv(path) as f:
        reader = csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
        for row in reader:
            if reader.line_num == 1 and row and row[0].strip().lower() in ("index", "id"):
                continue
            if not row or (len(row) == 1 and not row[0].strip()):
                continue
            if len(row) < 2:
                raise InputError(f"{path}:{reader.line_num}: expected 'index<TAB>prediction', got {row!r}")
            if row[0] in out:
                raise InputError(f"{path}:{reader.line_num}: duplicate index {row[0]!r}")
            out[row[0]] = row[1].strip()
    return out
