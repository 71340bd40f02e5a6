"""The tasks of the GLUE node, light (no TensorFlow): which task a ``benchmarks.glue_tasks`` name is (a spec of
``benchmarks.tasks``, a CLUE classification task, a GLUE task), its dev splits, and reading a split. The driver
(``run_glue.py``) and the data gate's contamination (``components/datagate/datagate_beam.py``) read them alike."""
from __future__ import annotations

from typing import Dict, List, Optional, Union

from components.evaluation.glue import clue as clue_lib
from components.evaluation.glue import glue_data as glue_lib
from components.evaluation.glue.task_spec_reader import ClassificationSpec

Task = Union[glue_lib.GlueTask, ClassificationSpec]


def resolve_task(name: str, specs: Optional[Dict[str, ClassificationSpec]] = None) -> Task:
    """A task of ``benchmarks.glue_tasks``: a spec of ``benchmarks.tasks`` (``specs``) by that name, else a CLUE
    classification task, else a GLUE task (a ConfigError naming the unknown name)."""
    if specs and name in specs:
        return specs[name]
    if name in clue_lib.CLUE_TASKS:
        return clue_lib.CLUE_TASKS[name]
    return glue_lib.get_task(name)


def dev_splits(task: Task) -> List[str]:
    """The task's dev splits (MNLI's two, a spec's files named ``dev*``; a cross-lingual spec's one per language,
    ``dev.<code>``)."""
    if isinstance(task, glue_lib.GlueTask):
        return ["dev_matched", "dev_mismatched"] if task.name == "MNLI" else ["dev"]
    return [ls for s in task.files if s.startswith("dev") for ls in task.language_splits(s)]


def read_split(task: Task, split: str, data_dir: str) -> List[glue_lib.GlueExample]:
    """One split's examples, read from ``data_dir`` (the GLUE node's data folder)."""
    if isinstance(task, glue_lib.GlueTask):
        return glue_lib.read_glue(task.name, split, data_dir)
    return clue_lib.read_classification(task, split, data_dir)
