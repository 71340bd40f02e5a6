"""The release's settings (``release.*``, nodes ``Blesser`` and ``Pusher``)."""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from components.evaluation.benchmark_config import BASELINES
from config.schema import Section, check

@dataclass
class ReleaseConfig(Section):
    """The release (nodes ``Blesser`` and ``Pusher``): whether this run's model replaces the last blessed one, and
    where a blessed model is pushed. Every criterion is off by default: with none set, the decision is a recorded
    "blessed: no criteria" (never a missing blessing). Scores are the report's task scores (0-100).

    ``Blesser`` receives the criteria and ``force_bless``; ``Pusher`` the destination and the registry settings, so
    moving the destination re-pushes without re-deciding.
    """

    # Per-task floors: {task: minimum score}, e.g. {RTE: 55, SST-2: 80}; a task without a score fails its floor.
    min_scores: Dict[str, float] = field(default_factory=dict)
    # At least this many tasks beat ``baseline_arm`` beyond the seed spread (worst seed above the arm's best;
    # needs benchmarks.seeds >= 2 and the arm in benchmarks.baselines). 0: off.
    min_tasks_beating_arm: int = 0
    baseline_arm: str = "random_init"
    # Against the latest blessed model of this pipeline: no task lower by more than this many points, and the task
    # average not lower. None: off. The first run (no blessed model yet) skips it, and the decision says so.
    max_regression: Optional[float] = None
    force_bless: bool = False  # bless whatever the criteria say; the decision and the model card say it was forced
    push_destination: Optional[str] = None  # a folder or gs:// URI; None: <pipeline_root>/releases
    # Also upload each pushed version to the Vertex AI Model Registry, as a new version of this parent model
    # (projects/P/locations/R/models/M; the model is created on the first upload). None: no upload.
    vertex_model: Optional[str] = None
    vertex_version_aliases: List[str] = field(default_factory=list)  # besides "v<N>", which every version gets
    license: str = "apache-2.0"  # the model card's license (the official ALBERT release's)
    # The serving container Vertex AI runs the SavedModel in (a prebuilt TensorFlow CPU image).
    vertex_serving_image: str = "us-docker.pkg.dev/vertex-ai/prediction/tf2-cpu.2-15:latest"
    # Push the raw-text folders (TF Hub's preprocess/ + encoder/, and text_model/). Off: a version holds the ids
    # SavedModel, checkpoint/, huggingface/ and vocab/ only, two copies of the weights fewer (docs/release.md). The
    # Pusher receives it only when off, so the default keeps its parameters and cache key.
    raw_text_serving: bool = True

    BLESSER_FIELDS = ("min_scores", "min_tasks_beating_arm", "baseline_arm", "max_regression", "force_bless")

    def blesser_settings(self, destination: str) -> Dict[str, Any]:
        """What decides the blessing (node ``Blesser``'s ``config``), with the push destination, whose version
        records hold the baseline model's scores."""
        return {**{name: getattr(self, name) for name in self.BLESSER_FIELDS}, "push_destination": destination}

    def pusher_settings(self, destination: str, model_name: str) -> Dict[str, Any]:
        """Where a blessed model goes (node ``Pusher``'s ``config``), with the destination resolved, and the name
        its card and registry entry carry (the pipeline's)."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name not in self.BLESSER_FIELDS}
        out.update(push_destination=destination, model_name=model_name)
        if self.raw_text_serving:
            del out["raw_text_serving"]
        return out

    def validate(self) -> "ReleaseConfig":
        check(self.baseline_arm in BASELINES, "release.baseline_arm", self.baseline_arm, "|".join(BASELINES))
        check(self.min_tasks_beating_arm >= 0, "release.min_tasks_beating_arm", self.min_tasks_beating_arm, ">= 0")
        check(self.max_regression is None or self.max_regression >= 0, "release.max_regression",
              self.max_regression, ">= 0 or null")
        dest = self.push_destination
        check(dest is None or (bool(dest) and ("://" not in dest or dest.startswith("gs://"))),
              "release.push_destination", dest, "a folder or a gs:// URI")
        model = self.vertex_model
        check(model is None or _VERTEX_MODEL.fullmatch(model) is not None, "release.vertex_model", model,
              "projects/PROJECT/locations/REGION/models/MODEL_ID")
        for alias in self.vertex_version_aliases:
            check(_VERTEX_ALIAS.fullmatch(alias) is not None and not _VERSION_ALIAS.fullmatch(alias),
                  "release.vertex_version_aliases", alias,
                  "Vertex AI aliases ([a-z][a-zA-Z0-9-]{0,126}[a-z0-9]), none of the form v<N> (kept for versions)")
        return self


_VERTEX_MODEL = re.compile(r"projects/[^/]+/locations/[a-z0-9-]+/models/[A-Za-z0-9_-]+")
_VERTEX_ALIAS = re.compile(r"[a-z][a-zA-Z0-9-]{0,126}[a-z0-9]")
_VERSION_ALIAS = re.compile(r"v[0-9]+")
