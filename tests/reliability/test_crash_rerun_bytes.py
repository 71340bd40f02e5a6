"""Pipeline-level determinism: the outputs of tests/reliability/test_crash_rerun.py's killed and rerun runs (two
multi-processing Beam workers, a crash in between, TFX's BeamDagRunner) are byte-identical to those of the shared
sample run (tests/conftest.py: uninterrupted, one DirectRunner worker, the default LocalDagRunner; the crash runs'
overrides touch only the Trainer and the benchmarks, so the data nodes have the same parameters and seed).

The sample run's own bytes are also checked against fingerprints committed before a refactor (tests/fingerprints.py).

A file of its own so that it runs late (its reads_sample_run mark, tests/conftest.py): it needs the shared sample run to
have ended; the crash runs are made once per session (tests/reliability/crash_runs.py), usually by the worker that
ran test_crash_rerun.py at the start. Unit-level determinism: tests/test_corpus_beam.py, tests/test_vocab_lib.py,
tests/test_datagen_beam.py.
"""
import os

import pytest

from tests.conftest import shared_tmp
from tests.reliability import mlmd
from tests.reliability.crash_runs import crash_runs


pytestmark = [pytest.mark.slow, pytest.mark.reads_sample_run]


def _files(root):
    out = {}
    for dirpath, _, names in os.walk(root):
        for name in names:
            path = os.path.join(dirpath, name)
            out[os.path.relpath(path, root)] = open(path, "rb").read()
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory, request):
    return crash_runs(shared_tmp(tmp_path_factory, request.config))


@pytest.fixture(scope="module")
def reference_live(sample_run):
    return mlmd.live_artifacts(mlmd.open_store(sample_run.metadata_path))


@pytest.mark.parametrize("type_name", ["albert_tfx.Documents", "albert_tfx.SentencePieceModel", "Examples",
                                       "albert_tfx.DataGenStatistics"])
def test_outputs_are_byte_identical_to_an_uninterrupted_one_worker_run(runs, reference_live, type_name):
    """Same data settings and seed: identical bytes across runs, a crash in between, and 1 vs 2 workers."""
    (ours,) = runs["live"][type_name]
    (ref,) = reference_live[type_name]
    a, b = _files(ours), _files(ref.uri)
    assert sorted(a) == sorted(b)
    assert a == b
    if type_name == "Examples":
        assert any(name.startswith("Split-train/data_tfrecord-") for name in a)


def test_the_sample_runs_data_is_the_committed_bytes(sample_run):
    """The shared sample run's documents, vocabulary, examples and datagen statistics, file by file, are the bytes
    the code made before the modules moved into node folders (tests/fingerprints.py, ``sample_outputs.json``)."""
    from tests import fingerprints

    now, committed = fingerprints.sample_outputs(sample_run.metadata_path), fingerprints.load("sample_outputs.json")
    assert sorted(now) == sorted(committed)
    for type_name in committed:
        assert now[type_name] == committed[type_name], type_name
