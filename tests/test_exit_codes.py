"""Processes that used tf.Transform finish with the exit code of their work (0), not a teardown crash."""
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


pytestmark = pytest.mark.slow


def test_pytest_session_using_tf_transform_exits_zero():
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "tests/test_eval_transform.py::test_beam_transform_single_sentence_equals_convert_glue_examples"],
        cwd=REPO, capture_output=True, text=True, timeout=600)
    assert "1 passed" in done.stdout, done.stdout[-2000:] + done.stderr[-2000:]
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])


def test_failing_session_still_reports_failure(tmp_path):
    test = tmp_path / "test_fails.py"
    test.write_text("def test_no():\n    assert False\n")
    # Load the project's conftest (and its exit hook) as a plugin for a test outside tests/.
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests.conftest",
                           str(test)], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert "1 failed" in done.stdout, done.stdout[-1000:] + done.stderr[-1000:]
    assert done.returncode == 1, done.stdout[-1000:]
