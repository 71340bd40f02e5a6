"""The report's settings (``report.*``, node ``BenchmarkReport``)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from config.references import REFERENCE_ROWS  # report.reference: the published rows, with their numbers
from config.schema import Section, check

@dataclass
class ReportConfig(Section):
    """The report (node ``BenchmarkReport``): presentation only; scores and facts come from its inputs."""

    title: Optional[str] = None  # None: "ALBERT-TFX report — <pipeline name> (<preset> preset)"
    # The published row shown beside this run: albert-base-v1 (paper Table 2) | albert-base-v2 (release README).
    reference: str = "albert-base-v1"

    def validate(self) -> "ReportConfig":
        check(self.reference in REFERENCE_ROWS, "report.reference", self.reference, "|".join(REFERENCE_ROWS))
        return self
