"""Reliability suite (issue 9): bad inputs, atomic outputs, crash and rerun, determinism, safety."""
