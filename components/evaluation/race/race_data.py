"""RACE: reader, 4-way multiple-choice featurization and per-level accuracy.

Layout: ``<RACE>/<split>/{middle,high}/*.txt``; each file is one JSON object
``{"id", "article", "questions": [..], "options": [[4 strings], ..], "answers": ["A".."D", ..]}``.
One example per question; its ``example_id`` is ``"<file id>-<question index>"`` (file id from the
JSON ``id`` field, e.g. ``high10024.txt-0``), the key used by prediction files.
"""
from __future__ import annotations

import glob
import json
import os
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from config.errors import MissingInputError, UserError

__all__ = [
    "RaceExample",
    "RaceFormatError",
    "LEVELS",
    "ANSWER_LETTERS",
    "read_race",
    "read_race_file",
    "convert_race_examples",
    "race_metrics",
]

LEVELS = ("middle", "high")
ANSWER_LETTERS = ("A", "B", "C", "D")


class RaceFormatError(UserError, ValueError):
    """A RACE file is malformed (missing article/questions/options/answers, wrong counts)."""


@dataclass(frozen=True)
class RaceExample:
    example_id: str
    level: str                 # "middle" | "high"
    article: str
    question: str
    options: Tuple[str, ...]   # 4 options
    label: Optional[int]       # 0..3, None when the file has no answers (unlabeled)


def read_race_file(path: str, level: Optional[str] = None, require_answers: bool = True) -> List[RaceExample]:
    """Examples of one RACE article file; raises :class:`RaceFormatError` naming the file."""
    if level is None:
        level = os.path.basename(os.path.dirname(os.path.abspath(path)))
    try:
        with open(path, encoding="utf-8") as f:
            obj = json.load(f)
    except json.JSONDecodeError as e:
        raise RaceFormatError(f"{path}: not a JSON object: {e}") from e
    except UnicodeDecodeError as e:
        raise RaceFormatError(f"{path}: not valid UTF-8 at byte offset {e.start}") from None
    if not isinstance(obj, dict):
        raise RaceFormatError(f"{path}: expected a JSON object, got {type(obj).__name__}")
    missing = [k for k in ("article", "questions", "options") if k not in obj]
    if require_answers and "answers" not in obj:
        missing.append("answers")
    if missing:
        raise RaceFormatError(f"{path}: missing field(s) {', '.join(missing)}")
    questions, options = obj["questions"], obj["options"]
    answers = obj.get("answers")
    if len(options) != len(questions) or (answers is not None and len(answers) != len(questions)):
        raise RaceFormatError(
            f"{path}: {len(questions)} questions but {len(options)} option lists"
            + (f" and {len(answers)} answers" if answers is not None else ""))
    file_id = obj.get("id") or f"{level}{os.path.basename(path)}"
    out: List[RaceExample] = []
    for qi, question in enumerate(questions):
        opts = options[qi]
        if not isinstance(opts, list) or len(opts) != 4:
            raise RaceFormatError(f"{path}: question {qi} has {len(opts) if isinstance(opts, list) else opts!r} "
                                  "options, expected 4")
        label = None
        if answers is not None:
            ans = str(answers[qi]).strip().upper()
            if ans not in ANSWER_LETTERS:
                raise RaceFormatError(f"{path}: question {qi} answer {answers[qi]!r} is not one of A-D")
            label = ANSWER_LETTERS.index(ans)
        out.append(RaceExample(f"{file_id}-{qi}", level, obj["article"], question, tuple(opts), label))
    return out


def read_race(data_dir: str, split: Optional[str] = None, levels: Sequence[str] = LEVELS,
              require_answers: bool = True) -> List[RaceExample]:
    """All examples of ``<data_dir>/<split>/<level>/*.txt`` (``split=None``: ``data_dir`` is the
    split folder itself), files in sorted order, middle before high."""
    root = os.path.join(data_dir, split) if split else data_dir
    if not os.path.isdir(root):
        raise MissingInputError(f"RACE split folder not found: {root}")
    examples: List[RaceExample] = []
    found_level = False
    for level in levels:
        level_dir = os.path.join(root, level)
        if not os.path.isdir(level_dir):
            continue
        found_level = True
        for path in sorted(glob.glob(os.path.join(level_dir, "*.txt"))):
            examples.extend(read_race_file(path, level, require_answers=require_answers))
    if not found_level:
        raise MissingInputError(f"no {'/'.join(levels)} folder under {root}")
    return examples


def _qa_text(question: str, option: str) -> str:
    if "_" in question:
        return question.replace("_", option)
    return f"{question} {option}"


def convert_race_examples(examples: Sequence[RaceExample], tokenizer, max_seq_length: int = 512,
                          max_qa_length: int = 128) -> Dict[str, np.ndarray]:
    """Per option ``[CLS] article [SEP] question+option [SEP]`` → input_ids/input_mask/segment_ids
    int32 [N, 4, L] and label_ids int32 [N] (-1 unlabeled).

    "_" in the question is replaced by the option (else the option is appended); the
    question+option part keeps its *last* ``max_qa_length`` pieces; the article is truncated
    (from its end) to fit the rest. A ``max_qa_length`` above ``max_seq_length - 3`` is capped
    there (the article may then be empty).
    """
    if max_seq_length < 4 or max_qa_length < 1:
        raise ValueError(f"max_seq_length {max_seq_length} / max_qa_length {max_qa_length} leave no room "
                         "for [CLS] article [SEP] qa [SEP]")
    max_qa_length = min(max_qa_length, max_seq_length - 3)
    n = len(examples)
    shape = (n, len(ANSWER_LETTERS), max_seq_length)
    input_ids = np.zeros(shape, dtype=np.int32)
    input_mask = np.zeros(shape, dtype=np.int32)
    segment_ids = np.zeros(shape, dtype=np.int32)
    label_ids = np.full((n,), -1, dtype=np.int32)
    article_cache: Dict[str, List[int]] = {}
    for i, ex in enumerate(examples):
        if ex.article not in article_cache:
            article_cache.clear()  # questions of one article are consecutive
            article_cache[ex.article] = list(tokenizer.encode(ex.article))
        article_ids = article_cache[ex.article]
        for j, option in enumerate(ex.options):
            qa_ids = list(tokenizer.encode(_qa_text(ex.question, option)))[-max_qa_length:]
            ctx = article_ids[: max_seq_length - 3 - len(qa_ids)]
            ids = [tokenizer.cls_id] + ctx + [tokenizer.sep_id] + qa_ids + [tokenizer.sep_id]
            input_ids[i, j, : len(ids)] = ids
            input_mask[i, j, : len(ids)] = 1
            segment_ids[i, j, len(ctx) + 2: len(ids)] = 1
        if ex.label is not None:
            label_ids[i] = ex.label
    return {"input_ids": input_ids, "input_mask": input_mask, "segment_ids": segment_ids, "label_ids": label_ids}


def race_metrics(predictions, labels, levels) -> Dict[str, float]:
    """Accuracy per level and overall: {"middle", "high", "all"} (fractions; NaN for a level with
    no examples) plus the counts n_middle/n_high/n_all. ``predictions``: option ids [N] or logits
    [N, 4]."""
    preds = np.asarray(predictions)
    if preds.ndim == 2:
        preds = np.argmax(preds, axis=-1)
    labels = np.asarray(labels)
    levels = np.asarray(levels)
    if not (preds.shape[0] == labels.shape[0] == levels.shape[0]):
        raise ValueError(f"lengths differ: predictions {preds.shape[0]}, labels {labels.shape[0]}, "
                         f"levels {levels.shape[0]}")
    correct = preds == labels
    out: Dict[str, float] = {}
    for name, mask in (("middle", levels == "middle"), ("high", levels == "high"),
                       ("all", np.ones_like(correct, dtype=bool))):
        count = int(mask.sum())
        out[name] = float(correct[mask].mean()) if count else float("nan")
        out[f"n_{name}"] = count
    return out
