"""Benchmarks: speed and memory of this project's nodes and steps, each against a peer or a physical limit
(one-off studies of how the model learns are ``experiments/``).

Run one from the repository root as a module, e.g. ``.venv/bin/python -m benchmarks.model_step``; each names the
CPU it ran on in its output, and dated results live beside them in ``benchmarks/results/``. This package is the
top layer (``tests/test_layering.py``): it imports the product's packages, and nothing imports it but tests.
"""
import os as _os

# One Keras for the whole project (tf_keras; see components/__init__.py), chosen before TensorFlow is imported:
# `python -m benchmarks.NAME` imports this package first.
_os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
