"""CLUE (Chinese Language Understanding Evaluation): its tasks in their released formats, read into this project's
example types.

Classification (one :class:`~components.evaluation.glue.task_spec_reader.ClassificationSpec` each, built from plain data as a
``benchmarks.tasks.<NAME>`` entry would be; JSON lines, ``train.json`` / ``dev.json`` / ``test.json``; accuracy):

=========== ====================================== ==============================================================
task        fields read                            labels (label-id order as CLUE's baselines' ``get_labels``)
=========== ====================================== ==============================================================
AFQMC       sentence1, sentence2, label            "0", "1"
TNEWS       sentence, label (label_desc unread)    "100".."116" without "105" and "111" (15 news categories)
IFLYTEK     sentence, label (label_des unread)     "0".."118" (119 app categories)
CMNLI       sentence1, sentence2, label            contradiction, entailment, neutral; rows labelled "-" skipped
OCNLI       sentence1, sentence2, label            as CMNLI
CSL         keyword (a list, joined by " "), abst  "0", "1"  (text_a the keywords, text_b the abstract, as CLUE)
CLUEWSC2020 text (its two spans marked), label     "true", "false"
=========== ====================================== ==============================================================

CLUEWSC2020 rows hold a sentence and a ``target``: ``span1_text`` at ``span1_index`` (a noun phrase) and
``span2_text`` at ``span2_index`` (a pronoun); the label says whether the pronoun refers to the noun phrase. One
sentence appears in several rows with different targets and labels, so the sentence alone cannot be classified.
As CLUE's baselines do, the candidate is wrapped in underscores and the pronoun in square brackets, in the text
itself (``这时候放在_床_上……现在[它]突然响了。``), and that one marked sentence is classified true/false: the
marks put the target into a single-sentence input the classification head reads unchanged. Spans that do not sit
at their index, or that overlap, are an :class:`~config.InputError` naming the file and line.

Multiple choice: C3 (``[c3-]{d,m}-{train,dev}.json``, ``d`` dialogues and ``m`` mixed-genre texts; each file one
JSON array of ``[[passage lines], [{"question", "choice", "answer"}], id]``) becomes
:class:`~components.evaluation.race.race_data.RaceExample`, so RACE's featurization and head run it: the passage lines joined
by newlines (as CLUE's ``run_c3.py`` joins them), the choices padded to RACE's four with :data:`C3_PAD_CHOICE`
(C3 has 2-4 choices; ``run_c3.py`` pads with the same string), the label the index of the choice equal to the
answer, ``level`` the subset ("d" or "m").

Span extraction: CMRC2018 ships in SQuAD v1.1's JSON (``data / paragraphs / context / qas / {id, question,
answers: [{text, answer_start}]}``), so :func:`~components.evaluation.squad.reading.read_squad` reads it as it is
(:func:`read_cmrc2018`).
"""
from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Optional, Sequence, Tuple

from components.evaluation.glue.glue_data import GlueExample
from components.evaluation.race.race_data import ANSWER_LETTERS, RaceExample
from components.evaluation.squad.reading import SquadExample, read_squad
from components.evaluation.glue.task_spec_reader import (ClassificationSpec, example_from_record, iter_jsonl, read_task,
                                             task_file)
from config.errors import InputError, MissingInputError
from config.schema import ConfigError
from components.evaluation.glue.task_spec import CLUE_TASK_SETTINGS

__all__ = [
    "C3_PAD_CHOICE",
    "C3_SUBSETS",
    "CLUE_TASK_SETTINGS",
    "CLUE_TASKS",
    "CMRC2018_FILES",
    "c3_accuracy",
    "get_clue_task",
    "mark_wsc_spans",
    "read_c3",
    "read_c3_file",
    "read_classification",
    "read_clue",
    "read_cmrc2018",
]

# The built-in tasks are plain data (components/evaluation/glue/task_spec.py): exactly what a benchmarks.tasks.<NAME> entry would hold.
CLUE_TASKS: Dict[str, ClassificationSpec] = {
    name: ClassificationSpec.from_dict(name, settings) for name, settings in CLUE_TASK_SETTINGS.items()}


def get_clue_task(name: str) -> ClassificationSpec:
    """The built-in spec of a CLUE classification task (case-insensitive)."""
    for task, spec in CLUE_TASKS.items():
        if task.upper() == name.upper():
            return spec
    raise ConfigError(f"unknown CLUE task {name!r} (benchmarks.glue_tasks, or score --task); expected one of "
                      f"{', '.join(CLUE_TASKS)}")


# ---------------------------------------------------------------------------------------------
# CLUEWSC2020

_SPAN_KEYS = ("span1_text", "span1_index", "span2_text", "span2_index")


def mark_wsc_spans(text: str, span1: Tuple[str, int], span2: Tuple[str, int]) -> str:
    """``text`` with the candidate ``span1`` (text, start) wrapped in ``_`` and the pronoun ``span2`` in ``[ ]``.
    The spans must sit at their starts and must not overlap (a ValueError saying which rule fails)."""
    (text1, at1), (text2, at2) = span1, span2
    for name, (span, at) in (("span1", span1), ("span2", span2)):
        if not span or at < 0 or text[at:at + len(span)] != span:
            raise ValueError(f"{name}_text {span!r} is not at {name}_index {at} (the text has "
                             f"{text[max(at, 0):max(at, 0) + len(span)]!r} there)")
    if at1 < at2 + len(text2) and at2 < at1 + len(text1):
        raise ValueError(f"span1 {text1!r} at {at1} and span2 {text2!r} at {at2} overlap")
    marks = sorted([(at1, "_", text1, "_"), (at2, "[", text2, "]")])
    out, cursor = [], 0
    for at, left, span, right in marks:
        out += [text[cursor:at], left, span, right]
        cursor = at + len(span)
    out.append(text[cursor:])
    return "".join(out)


def _read_wsc(spec: ClassificationSpec, split: str, data_dir: str, labeled: bool) -> List[GlueExample]:
    path = task_file(spec, split, data_dir)
    out: List[GlueExample] = []
    for number, (line, record) in enumerate(iter_jsonl(path, spec.setting("format"))):
        target, text = record.get("target"), record.get("text")
        if not isinstance(text, str):
            raise InputError(f"{path}:{line}: no key 'text' holding the sentence ({spec.setting('text_a')})")
        if not isinstance(target, dict) or any(k not in target for k in _SPAN_KEYS):
            raise InputError(f"{path}:{line}: key 'target' must hold {', '.join(_SPAN_KEYS)} (CLUEWSC2020's "
                             f"format; {spec.setting('text_a')})")
        spans = []
        for n in ("1", "2"):
            span, at = target[f"span{n}_text"], target[f"span{n}_index"]
            if not isinstance(span, str) or isinstance(at, bool) or not isinstance(at, int):
                raise InputError(f"{path}:{line}: target.span{n}_text must be a string and target.span{n}_index "
                                 f"an integer, got {span!r} and {at!r} ({spec.setting('text_a')})")
            spans.append((span, at))
        try:
            marked = mark_wsc_spans(text, spans[0], spans[1])
        except ValueError as e:
            raise InputError(f"{path}:{line}: target.{e} ({spec.setting('text_a')})") from None
        example = example_from_record(spec, {**record, "text": marked}, split, number, path, line, labeled)
        if example is not None:
            out.append(example)
    return out


def read_clue(task: str, split: str, data_dir: str, labeled: Optional[bool] = None) -> List[GlueExample]:
    """Examples of a CLUE classification task's split (``<data_dir>/<TASK>/<split>.json`` or
    ``<data_dir>/<split>.json``); see :func:`~components.evaluation.glue.task_spec_reader.read_task` for ``labeled``."""
    spec = get_clue_task(task)
    if spec.name == "CLUEWSC2020":
        return _read_wsc(spec, split, data_dir, not split.startswith("test") if labeled is None else labeled)
    return read_task(spec, split, data_dir, labeled)


def read_classification(spec: ClassificationSpec, split: str, data_dir: str, labeled: Optional[bool] = None
                        ) -> List[GlueExample]:
    """Examples of any classification task's split: CLUE's built-in CLUEWSC2020 with its spans marked
    (:func:`read_clue`), every other spec (a CLUE task's or one of ``benchmarks.tasks``) by
    :func:`~components.evaluation.glue.task_spec_reader.read_task`."""
    if spec == CLUE_TASKS.get("CLUEWSC2020"):
        return _read_wsc(spec, split, data_dir, not split.startswith("test") if labeled is None else labeled)
    return read_task(spec, split, data_dir, labeled)


# ---------------------------------------------------------------------------------------------
# C3

C3_SUBSETS = ("d", "m")       # dialogues, mixed-genre written texts
C3_PAD_CHOICE = "无效答案"     # "invalid answer": fills questions with fewer than 4 choices, as CLUE's baseline


def _c3_error(path: str, where: str, message: str) -> InputError:
    return InputError(f"{path}: {where}: {message} (C3's format: [[passage lines], [{{question, choice, answer}}], "
                      "id] per document)")


def read_c3_file(path: str, subset: str, require_answers: bool = True) -> List[RaceExample]:
    """One C3 file (a JSON array of documents) → one example per question, ``example_id``
    ``<subset>-<document id>-<question index>``; a malformed document is an :class:`~config.InputError` naming the
    file, the document's index and id, and the question."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise MissingInputError(f"C3 file {path} does not exist") from None
    try:
        documents = json.loads(data.decode("utf-8-sig"))
    except UnicodeDecodeError as e:
        raise InputError(f"{path}: not valid UTF-8 at byte offset {e.start}") from None
    except json.JSONDecodeError as e:
        raise InputError(f"{path}:{e.lineno}: not valid JSON: {e.msg} at column {e.colno}") from None
    if not isinstance(documents, list):
        raise _c3_error(path, "top level", f"a JSON {type(documents).__name__}, expected an array of documents")
    out: List[RaceExample] = []
    for d, doc in enumerate(documents):
        where = f"document {d}"
        if not isinstance(doc, list) or len(doc) < 2:
            raise _c3_error(path, where, "expected [passage lines, questions, id]")
        lines, questions = doc[0], doc[1]
        doc_id = str(doc[2]) if len(doc) > 2 else str(d)
        where = f"document {d} (id {doc_id})"
        if not isinstance(lines, list) or not all(isinstance(x, str) for x in lines):
            raise _c3_error(path, where, "the passage must be a list of strings")
        if not isinstance(questions, list):
            raise _c3_error(path, where, "the questions must be a list of objects")
        passage = "\n".join(lines)
        for q, item in enumerate(questions):
            at = f"{where}, question {q}"
            if not isinstance(item, dict) or not isinstance(item.get("question"), str):
                raise _c3_error(path, at, "expected an object with a string 'question'")
            choices = item.get("choice")
            if (not isinstance(choices, list) or not 2 <= len(choices) <= len(ANSWER_LETTERS)
                    or not all(isinstance(c, str) for c in choices)):
                raise _c3_error(path, at, f"'choice' must be a list of 2 to {len(ANSWER_LETTERS)} strings, got "
                                f"{choices!r}")
            label = None
            answer = item.get("answer")
            if answer is not None or require_answers:
                if answer not in choices:
                    raise _c3_error(path, at, f"answer {answer!r} is not one of its choices {choices}")
                label = choices.index(answer)
            options = tuple(choices) + (C3_PAD_CHOICE,) * (len(ANSWER_LETTERS) - len(choices))
            out.append(RaceExample(f"{subset}-{doc_id}-{q}", subset, passage, item["question"], options, label))
    return out


def _c3_path(data_dir: str, subset: str, split: str) -> str:
    names = (f"{subset}-{split}.json", f"c3-{subset}-{split}.json")  # the second as CLUE's run_c3.py reads them
    for name in names:
        path = os.path.join(data_dir, name)
        if os.path.isfile(path):
            return path
    paths = " nor ".join(os.path.join(data_dir, n) for n in names)
    raise MissingInputError(f"C3 {split} file not found: neither {paths} exists")


def read_c3(data_dir: str, split: str, subsets: Sequence[str] = C3_SUBSETS, require_answers: bool = True
            ) -> List[RaceExample]:
    """The examples of a C3 split, ``d`` documents before ``m`` (``<data_dir>/{d,m}-<split>.json``, or with the
    ``c3-`` prefix)."""
    out: List[RaceExample] = []
    for subset in subsets:
        out += read_c3_file(_c3_path(data_dir, subset, split), subset, require_answers=require_answers)
    return out


def c3_accuracy(predictions: Sequence[int], labels: Sequence[int], subsets: Sequence[str]) -> Dict[str, float]:
    """Accuracy per subset ("d", "m") and over all ("all"), with the counts ``n_<name>``: C3's official metric is
    the accuracy over all questions. ``predictions`` are choice ids; a padded choice is never right."""
    if not len(predictions) == len(labels) == len(subsets):
        raise ValueError(f"lengths differ: predictions {len(predictions)}, labels {len(labels)}, "
                         f"subsets {len(subsets)}")
    out: Dict[str, float] = {}
    for name in (*C3_SUBSETS, "all"):
        pairs = [(int(p), int(y)) for p, y, s in zip(predictions, labels, subsets) if name in ("all", s)]
        out[name] = sum(p == y for p, y in pairs) / len(pairs) if pairs else float("nan")
        out[f"n_{name}"] = len(pairs)
    return out


# ---------------------------------------------------------------------------------------------
# CMRC2018

CMRC2018_FILES = {"train": "train.json", "dev": "dev.json", "trial": "trial.json", "test": "test.json"}


def read_cmrc2018(data_dir: str, split: str, on_bad_answer: str = "error",
                  skipped: Optional[list] = None) -> List[SquadExample]:
    """CMRC2018's ``<data_dir>/<split>.json`` (SQuAD v1.1 JSON) through :func:`read_squad`: every gold answer's
    ``answer_start`` must point at its text in the context, a character offset (Chinese text has no spaces)."""
    if split not in CMRC2018_FILES:
        raise ValueError(f"CMRC2018 has no split {split!r}; splits: {', '.join(CMRC2018_FILES)}")
    path = os.path.join(data_dir, CMRC2018_FILES[split])
    if not os.path.isfile(path):
        raise MissingInputError(f"CMRC2018 {split} file {path} does not exist")
    return read_squad(path, on_bad_answer=on_bad_answer, skipped=skipped)
