"""Which Beam runner runs a pipeline on this machine (or in a pipeline container) when its args name none.

Beam's ``DirectRunner`` (the default when ``--runner`` is absent) is a switch: since Beam 2.6x it first tries
``PrismRunner``, which downloads a Go binary from GitHub at run time, and only when that fails falls back to the
``FnApiRunner`` for a batch pipeline. Offline (CI, a private Vertex AI network) every Beam step then logs a failed
download and falls back; online, the steps run on a different runner than the one tested. Every local Beam
pipeline of this project therefore names :data:`LOCAL_RUNNER` (the batch runner DirectRunner ends up on) itself:
the local DAG, the compiled spec's container tasks, ``make-pretraining-data`` and ``ingest``. Dataflow and the
portable runners are named explicitly by their environments (``pipeline/environments.py``) and are left alone.
"""
from typing import List, Sequence

LOCAL_RUNNER = "FnApiRunner"


def names_runner(args: Sequence[str]) -> bool:
    return any(a == "--runner" or a.startswith("--runner=") for a in args)


def with_default_runner(args: Sequence[str]) -> List[str]:
    """``args`` with ``--runner=FnApiRunner`` in front when they name no runner; otherwise unchanged."""
    return list(args) if names_runner(args) else [f"--runner={LOCAL_RUNNER}", *args]


def local_args(workers: int) -> List[str]:
    """Args of a local run on ``workers`` processes (1: in this process, in memory)."""
    mode = "multi_processing" if workers > 1 else "in_memory"
    return [f"--runner={LOCAL_RUNNER}", f"--direct_num_workers={workers}", f"--direct_running_mode={mode}"]
