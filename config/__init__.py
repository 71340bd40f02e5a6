"""The configuration every layer may import: ``pipeline/``, ``components/`` and ``trainer/``.

Typed sections (:mod:`config.sections`), the encoder's named sizes (:mod:`config.encoder`), the Trainer's
settings format (:mod:`config.trainer_settings`) and the plain-data machinery (:mod:`config.schema`); no
TensorFlow, no TFX, and no import of ``trainer``, ``components`` or ``pipeline`` (``tests/test_layering.py``).
The whole-run composition, presets and command-line overrides live in ``pipeline/configs.py`` (the TFX
template's place for them), which components never import.
"""
from config.errors import InputError, MissingInputError, OutputExistsError, UserError, user_error_names  # noqa: F401
from config.schema import ConfigError, Section, canonical_json, check, from_dict  # noqa: F401
from config.sections import *  # noqa: F401,F403
from config.sections import __all__ as _sections

__all__ = ["UserError", "InputError", "MissingInputError", "OutputExistsError", "user_error_names", "ConfigError",
           "Section", "canonical_json", "check", "from_dict", *_sections]
