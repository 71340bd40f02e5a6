"""What every layer may import: ``pipeline/``, ``components/`` and ``trainer/``.

The plain-data machinery of a settings section (:mod:`config.schema`), user errors (:mod:`config.errors`), the
encoder's named sizes (:mod:`config.encoder`), the language profiles (:mod:`config.languages`), the published rows
(:mod:`config.references`) and a vocabulary's settings (:mod:`config.tokenizer_spec`); no TensorFlow, no TFX, and no
import of ``trainer``, ``components`` or ``pipeline`` (``tests/test_layering.py``). Each node's own settings section
lives in its folder (``components/<node>/<node>_config.py``, ``trainer/trainer_config.py``); the whole run's
composition, presets and command-line overrides in ``pipeline/settings/configs.py``.
"""
from config.errors import InputError, MissingInputError, OutputExistsError, UserError, user_error_names  # noqa: F401
from config.schema import ConfigError, Section, canonical_json, check, from_dict  # noqa: F401

__all__ = ["UserError", "InputError", "MissingInputError", "OutputExistsError", "user_error_names", "ConfigError",
           "Section", "canonical_json", "check", "from_dict"]
