"""Which Beam runner runs a pipeline on this machine (or in a pipeline container) when its args name none.

Beam's default runner, ``DirectRunner``, is a switch: since Beam 2.6x it first tries ``PrismRunner``, which
downloads a Go binary from GitHub at run time, and only when that fails falls back to the ``FnApiRunner`` for a
batch pipeline. Offline (CI, a private Vertex AI network) every Beam step then logs a failed download and falls
back; online, the steps would run on a different runner than the one tested. So :data:`LOCAL_RUNNER`, the batch
runner DirectRunner ends up on, is what this project runs locally:

* a pipeline whose args name no runner (the local DAG's and the compiled spec's container tasks: the presets'
  ``beam_args`` name none) gets it as Beam's default, set by :func:`use_local_runner_by_default` when
  ``components.tfx_components`` (every executor's module) is imported. The args themselves are unchanged, so the
  nodes' cache keys (TFX hashes the Beam args into the executor spec) and compiled specs stay as they were;
* ``make-pretraining-data`` and ``ingest`` name it (:func:`local_args`), and the ``local`` environment's
  ``runner: DirectRunner`` produces ``--runner=FnApiRunner`` (``pipeline/environments.py``).

Dataflow and the portable runners are always named explicitly and are left alone.
"""
from typing import List

LOCAL_RUNNER = "FnApiRunner"


def use_local_runner_by_default() -> None:
    """Make :data:`LOCAL_RUNNER` the runner of every Beam pipeline this process builds without naming one."""
    from apache_beam.options.pipeline_options import StandardOptions

    StandardOptions.DEFAULT_RUNNER = LOCAL_RUNNER


def local_args(workers: int) -> List[str]:
    """Args of a local run on ``workers`` processes (1: in this process, in memory)."""
    mode = "multi_processing" if workers > 1 else "in_memory"
    return [f"--runner={LOCAL_RUNNER}", f"--direct_num_workers={workers}", f"--direct_running_mode={mode}"]
