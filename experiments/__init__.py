"""Experiments: one-off studies of how this project learns, each beside its dated results in ``experiments/results/``.

Unlike ``benchmarks/`` (speed and memory against a peer or a physical limit), these answer questions about the
model: does pretraining beat random initialisation on a CPU budget (``learning_recipe``), how a peer implementation
learns on the same examples (``learning_peer``), optimizer ablations, frozen probes, fine-tuning budgets, what an
encoder reads (``encoder_diagnostics``) and held-out evaluation of a model on an examples split. Run one from the
repository root as ``.venv/bin/python -m experiments.NAME``; the write-up is ``docs/experiments/cpu-recipe.md``.
Like ``benchmarks``, this package is a top layer: it imports the product's packages and nothing imports it.
"""
import os as _os

# One Keras for the whole project (tf_keras; see components/__init__.py), chosen before TensorFlow is imported.
_os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
