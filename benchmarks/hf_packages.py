"""The Hugging Face peer's packages (torch, transformers): where they are installed and how a process imports them.

``make install-test`` with ``TORCH_WHEELS=DIR`` installs torch and transformers into a folder of their own inside
the virtualenv, :data:`FOLDER` (``.venv/hf-packages``), not into its site-packages. Beam's
``apache_beam.ml.inference.model_manager`` imports torch whenever torch can be imported, and TFMA imports it, so in
an environment with torch in site-packages every process that imports ``tfx.components`` (each pipeline run, each
component launch, each test worker) imports torch for nothing: 1.5 s of CPU each on a 2-core AMD EPYC (0.8-2.1 s,
docs/performance.md). The product's image holds no torch; the test environment now matches it.

The peer's users (the Hugging Face parity tests, ``benchmarks.model_step``, ``benchmarks.finetune``,
``experiments.learning_peer``) call :func:`use` before they import torch. It appends the folder to ``sys.path``, so
the virtualenv's own packages keep precedence. The folder holds torch's and transformers' whole dependency tree,
resolved with the virtualenv's versions as constraints (``make install-test``): a package both hold is the same
version in each, and the virtualenv's copy is the one imported.

``python -m benchmarks.hf_packages`` prints the folder (the Makefile installs into it).
"""
import os
import sys

FOLDER = os.path.join(sys.prefix, "hf-packages")


def use() -> bool:
    """Make the peer's packages importable in this process; False when ``make install-test`` installed none."""
    if not os.path.isdir(FOLDER):
        return False
    if FOLDER not in sys.path:
        sys.path.append(FOLDER)
    return True


if __name__ == "__main__":
    print(FOLDER)
