"""The one family of user errors: bad input, bad settings, a missing file the user named.

Every exception that means "the user's input or settings are wrong" derives from :class:`UserError`; the CLI
reports those as one line with exit code 2. Anything else that escapes a command is an internal error (exit 1,
traceback in the log): a bug must never be reported as the user's fault. The classes keep their standard base too
(``ValueError``, ``FileNotFoundError``), so code that catches those still does.

Light on purpose (no imports): the lowest layer defines it, every layer raises it.
"""
from __future__ import annotations

__all__ = ["InputError", "MissingExtraError", "MissingInputError", "OutputExistsError", "UserError",
           "user_error_names"]


class UserError(Exception):
    """Base of every error that is the user's input or settings, never a bug."""


class InputError(UserError, ValueError):
    """A file or folder the user named is not what it must be: not UTF-8 or not JSON, the wrong shape, a corrupt
    archive or checkpoint, an unknown key in it. The message names the file (and the record or line where known)."""


class MissingInputError(UserError, FileNotFoundError):
    """A file or folder the user named (a flag, a setting, a path inside an input) does not exist; the message
    names it. A ``FileNotFoundError`` too, so code that catches that still does."""


class OutputExistsError(UserError, FileExistsError):
    """The output folder the user named exists and is not empty (nothing is overwritten)."""


class MissingExtraError(UserError, ImportError):
    """A command needs an optional group of packages (an extra of pyproject.toml) that is not installed; the
    message names the ``pip install albert-tfx[<extra>]`` that adds it."""


def user_error_names() -> frozenset:
    """Class names of every loaded :class:`UserError` subclass: Beam re-raises a worker's error as text, and the
    class name in that text is all that is left to tell a user error from a bug."""
    names, stack = set(), [UserError]
    while stack:
        cls = stack.pop()
        names.add(cls.__name__)
        stack.extend(cls.__subclasses__())
    return frozenset(names)
