"""What a refactor must not move, checked against fingerprints committed before it (tests/fingerprints.py says how
each was made): every configuration's node parameters, and its compiled spec but for the code's own module paths.
The sample run's output bytes: tests/reliability/test_crash_rerun_bytes.py."""
import pytest

from tests import fingerprints


def test_node_parameters_are_the_committed_ones():
    """Every node's parameters, the input of its TFX cache key, of every pinned configuration."""
    now, committed = fingerprints.node_parameters(), fingerprints.load("node_parameters.json")
    assert sorted(now) == sorted(committed)
    for name in committed:
        changed = sorted(node for node in set(now[name]) | set(committed[name])
                         if now[name].get(node) != committed[name].get(node))
        assert changed == [], f"{name}: the parameters of {changed} moved"


@pytest.mark.slow
def test_compiled_specs_are_the_committed_ones_but_for_the_codes_paths(tmp_path):
    now, committed = fingerprints.compiled_specs(str(tmp_path)), fingerprints.load("compiled_specs.json")
    assert sorted(now) == sorted(committed)
    for name in committed:
        assert now[name] == committed[name], name


def test_the_normalisation_keeps_schema_titles_and_reduces_module_paths():
    """The check itself: an executor's class path is reduced to its name, a schema title and a plain value stay."""
    spec = {"a": "components.tfx_components.CorpusGen_Executor", "b": "albert_tfx.Documents",
            "c": ["-m", "pipeline.tasks.snapshot_task"], "d": f"{fingerprints.REPO}/data/sample/books", "e": "0.99995"}
    assert fingerprints.normalized_spec(spec) == {"a": "<code>.CorpusGen_Executor", "b": "albert_tfx.Documents",
                                                  "c": ["-m", "<code>.snapshot_task"], "d": "<repo>/data/sample/books",
                                                  "e": "0.99995"}
