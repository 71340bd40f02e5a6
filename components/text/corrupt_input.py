"""Errors raised by the corpus readers.

A pipeline that silently skips a corrupt shard trains on less data than it reports, so readers fail
loudly with one exception type that names the offending file (and, where known, the position).
"""
from __future__ import annotations

from config.errors import UserError


class CorruptInputError(UserError, ValueError):
    """An input file is truncated, not decodable or not in the expected format.

    ``path`` is the offending file and ``detail`` says what and where (byte offset, XML line/column,
    last page seen). ``__reduce__`` keeps both when the error is pickled across Beam workers.
    """

    def __init__(self, path: str, detail: str):
        self.path = str(path)
        self.detail = detail
        super().__init__(f"{self.path}: {detail}")

    def __reduce__(self):
        return (type(self), (self.path, self.detail))
