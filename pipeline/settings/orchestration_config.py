"""The run's settings that are no node's parameter: which data spans it reads (``data.*``) and the compiled
spec's task resources (``task_resources.<node id>``)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from config.schema import Section, check

# Kubernetes quantities as Kubeflow Pipelines accepts them for a task's limits (kfp's set_cpu_limit /
# set_memory_limit): CPUs as a number or millicores ("500m"); memory as a number of bytes with an optional suffix,
# each suffix's bytes here (pipeline/cloud/spec.py converts with them).
MEMORY_UNITS = {"E": 10**18, "Ei": 1 << 60, "P": 10**15, "Pi": 1 << 50, "T": 10**12, "Ti": 1 << 40, "G": 10**9,
                "Gi": 1 << 30, "M": 10**6, "Mi": 1 << 20, "K": 10**3, "Ki": 1 << 10, "": 1}
_CPU_QUANTITY = re.compile(r"^(\d+(\.\d+)?|\d+m)$")
_MEMORY_QUANTITY = re.compile(r"^\d+(\.\d+)?(" + "|".join(unit for unit in MEMORY_UNITS if unit) + ")?$")


@dataclass
class TaskResources(Section):
    """CPU and memory limits of one task of the compiled spec (``task_resources.<node id>``), for the nodes that run
    in their task's own container: Vertex AI Pipelines picks a machine that has them (without limits, an
    e2-standard-4: 4 CPUs, 16 GB), Kubeflow Pipelines sets them as the pod's limits. Deployment only: no node's
    output depends on them, so they are no node parameter and move no cache key, and the local runners ignore them.
    """

    cpu_limit: Optional[str] = None  # e.g. "8" or "500m"
    memory_limit: Optional[str] = None  # e.g. "48G" or "64Gi"

    def validate(self, name: str = "task_resources.NODE") -> "TaskResources":
        check(self.cpu_limit is None or bool(_CPU_QUANTITY.match(str(self.cpu_limit))), f"{name}.cpu_limit",
              self.cpu_limit, "a number of CPUs or millicores, e.g. 8 or 500m")
        check(self.memory_limit is None or bool(_MEMORY_QUANTITY.match(str(self.memory_limit))),
              f"{name}.memory_limit", self.memory_limit, "a quantity such as 48G or 64Gi")
        return self


@dataclass
class DataConfig(Section):
    """Which spans of the data locations a run reads, where a location has TFX's span pattern (``{SPAN}``,
    ``{VERSION}``, ``{YYYY}{MM}{DD}``; ``pipeline/settings/spans.py``). Resolved when a run starts, by the Importers."""

    span: int = 0  # 0: the latest span; N: span N (a backfill)
    span_window: int = 1  # the corpus reads this many spans, up to the chosen one (benchmarks read one)

    def validate(self) -> "DataConfig":
        check(self.span >= 0, "data.span", self.span, ">= 0 (0: the latest span)")
        check(self.span_window >= 1, "data.span_window", self.span_window, ">= 1")
        return self
