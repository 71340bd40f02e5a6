"""SQuAD v1.1 / v2.0 JSON: articles, questions and validated gold answers (the reading stage).

Bad answers. An answer whose ``answer_start`` does not point at its ``text`` in the context is a
data error. ``read_squad`` raises :class:`SquadFormatError` naming the article title and question
id by default (``on_bad_answer="error"``); with ``on_bad_answer="skip"`` the question is dropped,
counted, and reported through the optional ``skipped`` list. Scoring functions read the dataset
JSON directly (:mod:`.scoring`), so a skipped question still counts (it scores 0, as a missing
prediction does in the official v1.1 script).
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Union

from config.errors import MissingInputError, UserError

__all__ = ["SquadExample", "SquadFormatError", "load_squad_json", "read_squad"]


class SquadFormatError(UserError, ValueError):
    """The SQuAD JSON is malformed (e.g. an answer_start that does not point at the answer)."""


@dataclass
class SquadExample:
    qid: str
    title: str
    question: str
    context: str
    answers: List[Dict] = field(default_factory=list)  # [{"text", "answer_start"}] as in the file
    is_impossible: bool = False

    @property
    def answer_text(self) -> Optional[str]:
        return self.answers[0]["text"] if self.answers else None

    @property
    def start_char(self) -> Optional[int]:
        return int(self.answers[0]["answer_start"]) if self.answers else None

    @property
    def end_char(self) -> Optional[int]:  # exclusive
        return self.start_char + len(self.answer_text) if self.answers else None



def load_squad_json(dataset: Union[str, Dict, List]) -> List[Dict]:
    """Path, parsed JSON ({"version", "data"}) or the "data" list → list of articles."""
    # Where a format error is: the file, or (parsed JSON handed in) the SQuAD data folder's setting.
    where = str(dataset) if isinstance(dataset, (str, os.PathLike)) else "benchmarks.squad_dir's dataset"
    if isinstance(dataset, (str, os.PathLike)):
        path = dataset
        try:
            with open(path, encoding="utf-8") as f:
                dataset = json.load(f)
        except FileNotFoundError:
            raise MissingInputError(f"SQuAD file {path} does not exist") from None
        except json.JSONDecodeError as exc:
            raise SquadFormatError(f"{path}: not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}"
                                   ) from None
        except UnicodeDecodeError as exc:
            raise SquadFormatError(f"{path}: not valid UTF-8 at byte offset {exc.start}") from None
    if isinstance(dataset, dict):
        if "data" not in dataset:
            raise SquadFormatError(f"{where}: a SQuAD JSON file with no 'data' field")
        dataset = dataset["data"]
    return dataset


def read_squad(dataset: Union[str, Dict, List], on_bad_answer: str = "error",
               skipped: Optional[list] = None) -> List[SquadExample]:
    """SQuAD v1.1 / v2.0 JSON → examples (v2's ``is_impossible``; v1.1 questions are answerable).

    Every answer (all gold answers, not only the first) must satisfy
    ``context[answer_start:answer_start + len(text)] == text``. See the module docstring for
    ``on_bad_answer`` ("error" | "skip"); skipped questions are appended to ``skipped`` as
    ``(title, qid, reason)``.
    """
    if on_bad_answer not in ("error", "skip"):
        raise ValueError(f"on_bad_answer must be 'error' or 'skip', got {on_bad_answer!r}")
    articles = load_squad_json(dataset)
    where = str(dataset) if isinstance(dataset, (str, os.PathLike)) else "benchmarks.squad_dir's dataset"
    examples: List[SquadExample] = []
    for a_i, article in enumerate(articles):
        title = article.get("title", f"<article {a_i}>")
        for paragraph in article.get("paragraphs", []):
            context = paragraph["context"]
            for qa in paragraph.get("qas", []):
                qid = qa.get("id")
                if qid is None or "question" not in qa:
                    raise SquadFormatError(f"{where}: article {title!r}: question without 'id' or 'question': {qa!r}")
                is_impossible = bool(qa.get("is_impossible", False))
                answers = list(qa.get("answers", []))
                reason = None
                if is_impossible:
                    answers = []  # v2 puts plausible answers in 'plausible_answers'; no gold span
                elif not answers:
                    reason = "answerable question without answers"
                for ans in answers:
                    if reason:
                        break
                    if "text" not in ans or "answer_start" not in ans:
                        reason = f"answer without 'text'/'answer_start': {ans!r}"
                        break
                    start, text = int(ans["answer_start"]), ans["text"]
                    if start < 0 or context[start:start + len(text)] != text:
                        found = context[max(start, 0):max(start, 0) + len(text)]
                        reason = (f"answer_start {start} does not point at answer {text!r} "
                                  f"(context has {found!r} there)")
                if reason:
                    if on_bad_answer == "error":
                        raise SquadFormatError(f"{where}: article {title!r}, question id {qid}: {reason}")
                    if skipped is not None:
                        skipped.append((title, qid, reason))
                    continue
                examples.append(SquadExample(qid, title, qa["question"], context, answers, is_impossible))
    return examples
