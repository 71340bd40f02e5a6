"""Google Cloud credentials: one rule for every caller that talks to Google Cloud (``submit`` and ``schedule`` in
``pipeline/cloud/submit.py``, the Model Registry upload in ``components/release/registry.py``).

Google's credential errors (missing, invalid, expired: at client construction or at the first call) become one line
of the caller's own user-error class that says how to authenticate, never a traceback.
"""
from __future__ import annotations

import contextlib
from typing import Iterator, Type

AUTH_HELP = ("run `gcloud auth application-default login`, or set GOOGLE_APPLICATION_CREDENTIALS to a service "
             "account key file")


@contextlib.contextmanager
def google_credentials(error: Type[Exception], purpose: str = "") -> Iterator[None]:
    """Run the block; a ``GoogleAuthError`` in it is raised again as ``error`` naming ``purpose`` (e.g. " for the
    Model Registry upload"), the first line of Google's message, and :data:`AUTH_HELP`."""
    import google.auth.exceptions  # lazy: google.auth (0.009 s)

    try:
        yield
    except google.auth.exceptions.GoogleAuthError as exc:
        raise error(f"no usable Google Cloud credentials{purpose} ({str(exc).splitlines()[0][:200]}): "
                    f"{AUTH_HELP}") from None
