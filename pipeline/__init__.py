"""Pipeline definition (``create_pipeline``), its typed configuration, runners and CLI."""
import os as _os

_os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")  # tf_keras everywhere; see components/__init__.py
