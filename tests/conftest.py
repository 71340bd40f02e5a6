"""Shared test setup: one Keras (tf_keras), quiet TF logs, paths of the bundled sample data."""
import os
import sys

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import pytest  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

SAMPLE = os.path.join(REPO, "data", "sample")
SHARED = os.path.join(os.path.dirname(REPO), "shared", "data")


@pytest.fixture(scope="session")
def sample_dir() -> str:
    return SAMPLE


@pytest.fixture(scope="session")
def spm_model_path() -> str:
    return os.path.join(SAMPLE, "vocab", "30k-clean.model")
