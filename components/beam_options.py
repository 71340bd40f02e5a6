"""Which Beam runner runs a pipeline on this machine (or in a pipeline container) when its args name none, and what
such a local run leaves out.

Beam's default runner, ``DirectRunner``, is a switch: since Beam 2.6x it first tries ``PrismRunner``, which
downloads a Go binary from GitHub at run time, and only when that fails falls back to the ``FnApiRunner`` for a
batch pipeline. Offline (CI, a private Vertex AI network) every Beam step then logs a failed download and falls
back; online, the steps would run on a different runner than the one tested. So :data:`LOCAL_RUNNER`, the batch
runner DirectRunner ends up on, is what this project runs locally:

* a pipeline whose args name no runner (the local DAG's and the compiled spec's container tasks: the presets'
  ``beam_args`` name none) gets it as Beam's default, set by :func:`use_local_runner_by_default` when
  ``components.node_shell`` (which every executor's module imports) is imported. The args themselves are unchanged, so the
  nodes' cache keys (TFX hashes the Beam args into the executor spec) and compiled specs stay as they were;
* ``make-pretraining-data`` and ``ingest`` name it (:func:`local_args`), and the ``local`` environment's
  ``runner: DirectRunner`` produces ``--runner=FnApiRunner`` (``pipeline/cloud/environments.py``).

Dataflow and the portable runners are always named explicitly and are left alone.

TFX's Beam executors also package the installed TFX as an sdist for a remote runner's workers whenever their args are
not empty and name no dependency (``--setup_file``, ``--extra_packages`` ...: ``tfx.utils.dependency_utils``): a
44 MB copy of TFX in a temp folder that is never removed, and a ``setup.py sdist`` process, about 1 s per Beam step.
A local runner reads the installed packages and never that sdist, so :func:`package_tfx_for_remote_runners_only`,
applied with the default runner, keeps TFX's packaging for the other runners (Dataflow and the portable ones).
"""
from typing import List, Optional, Sequence

LOCAL_RUNNER = "FnApiRunner"
# The runners that run a pipeline in this process or in processes of this machine, from the installed packages:
# Beam's DirectRunner and the runners it switches between (None: no runner named, Beam's default).
LOCAL_RUNNERS = (None, "DirectRunner", "SwitchingDirectRunner", "BundleBasedDirectRunner", "FnApiRunner",
                 "PrismRunner")


def use_local_runner_by_default() -> None:
    """Make :data:`LOCAL_RUNNER` the runner of every Beam pipeline this process builds without naming one."""
    from apache_beam.options.pipeline_options import StandardOptions  # lazy: apache_beam (1.7 s)

    StandardOptions.DEFAULT_RUNNER = LOCAL_RUNNER


def runner_of(args: Sequence[str]) -> Optional[str]:
    """The runner Beam ``args`` name (its class name, without a module path), or None."""
    from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions  # lazy: apache_beam (1.7 s)

    runner = PipelineOptions(flags=list(args)).view_as(StandardOptions).runner
    return runner.rsplit(".", 1)[-1] if isinstance(runner, str) else getattr(runner, "__name__", runner)


def package_tfx_for_remote_runners_only() -> None:
    """Make TFX's Beam executors skip packaging TFX when their args name a local runner (or none): see the module's
    docstring. The args themselves are unchanged (they are in each node's cache key)."""
    from tfx.utils import dependency_utils  # lazy: tfx (2.9 s)

    package = dependency_utils.make_beam_dependency_flags
    if getattr(package, "remote_runners_only", False):
        return

    def dependency_flags(beam_pipeline_args: List[str]) -> List[str]:
        if runner_of(beam_pipeline_args) in LOCAL_RUNNERS:
            return list(beam_pipeline_args)
        return package(beam_pipeline_args)

    dependency_flags.remote_runners_only = True
    dependency_utils.make_beam_dependency_flags = dependency_flags


def local_args(workers: int) -> List[str]:
    """Args of a local run on ``workers`` processes (1: in this process, in memory)."""
    mode = "multi_processing" if workers > 1 else "in_memory"
    return [f"--runner={LOCAL_RUNNER}", f"--direct_num_workers={workers}", f"--direct_running_mode={mode}"]
