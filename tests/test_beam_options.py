"""components/beam_options.py: a Beam step on a local runner does not package TFX for remote workers; a step on a
remote runner still does (TFX's own ``tfx.utils.dependency_utils``), as TFX's Beam executors are built by every
node launcher: from the node's Beam args."""
import os
import tempfile

import pytest

from components import beam_options

LOCAL_ARGS = [
    ["--direct_running_mode=in_memory", "--direct_num_workers=1"],  # the presets' (no runner: Beam's default)
    ["--runner=DirectRunner", "--direct_num_workers=2"],
    beam_options.local_args(2),
    ["--runner=apache_beam.runners.portability.fn_api_runner.FnApiRunner"],
]
DATAFLOW_ARGS = ["--runner=DataflowRunner", "--project=p", "--region=us-central1", "--temp_location=gs://b/tmp"]


def _corpus_gen_executor(args):
    """CorpusGen's executor (a TFX Beam executor) as a launcher builds it for a node with these Beam args."""
    from tfx.dsl.components.base.base_beam_executor import BaseBeamExecutor

    from components.corpus.corpus_component import CorpusGen

    return CorpusGen.EXECUTOR_SPEC.executor_class(BaseBeamExecutor.Context(beam_pipeline_args=list(args)))


@pytest.mark.parametrize("args", LOCAL_ARGS, ids=["default", "direct", "local_args", "fn_api_class_path"])
def test_a_local_step_keeps_its_args_and_writes_no_package(args, tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where TFX's package would go
    executor = _corpus_gen_executor(args)
    assert executor._beam_pipeline_args[:len(args)] == args
    assert not [a for a in executor._beam_pipeline_args if a.startswith("--extra_package")]
    assert os.listdir(tmp_path) == []


def test_a_dataflow_step_still_gets_tfx_as_an_extra_package(tmp_path, monkeypatch):
    import tfx

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    executor = _corpus_gen_executor(DATAFLOW_ARGS)
    (package,) = [a.split("=", 1)[1] for a in executor._beam_pipeline_args if a.startswith("--extra_package=")]
    assert package.startswith(str(tmp_path)) and os.path.basename(package) == f"tfx_ephemeral-{tfx.__version__}.tar.gz"
    assert os.path.isfile(package)


def test_runner_of_names_the_runner_class():
    assert beam_options.runner_of([]) is None
    assert beam_options.runner_of(["--runner=apache_beam.runners.dataflow.dataflow_runner.DataflowRunner"]) == \
        "DataflowRunner"
    assert beam_options.runner_of(beam_options.local_args(1)) == beam_options.LOCAL_RUNNER
