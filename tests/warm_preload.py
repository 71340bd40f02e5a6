"""Imported first by tests/warm_processes.py's fork server, before TensorFlow, Beam and TFX.

A command's process sets its root logger's handlers before it imports those libraries, and some of them decide at
import by whether the root logger has a handler: TensorFlow gives its ``tensorflow`` logger a stderr handler of its own
when it has none, absl's first log line (TFMA logs one while it imports) calls ``logging.basicConfig``. So the server
holds this placeholder on the root logger while it imports them, and each forked child drops it before the command
sets its own.
"""
import logging

PLACEHOLDER = logging.NullHandler()
logging.getLogger().addHandler(PLACEHOLDER)
