"""A container task for tests/test_task_launcher.py: records what a task's process sees, prints to both streams and
exits with ``PROBE_EXIT`` (or raises with ``PROBE_RAISE``)."""
import json
import os
import sys

record = {
    "argv": sys.argv[1:], "argv0": sys.argv[0], "cwd": os.getcwd(), "path0": sys.path[0],
    "executable": sys.executable, "name": __name__,
    "env": {key: os.environ.get(key) for key in ("PROBE", "PROBE_ONLY_FIRST")},
    "env_keys": sorted(os.environ), "stdin": sys.stdin.read(),
    # What an earlier task left in an imported module (a warm start must not pass it on).
    "left_by_earlier_task": getattr(json, "_probe_was_here", None),
    "project_modules": sorted(m for m in sys.modules if m.split(".")[0] in ("pipeline", "components", "trainer")),
}
json._probe_was_here = os.getpid()
print("on stdout")
print("on stderr", file=sys.stderr)
with open(sys.argv[1], "w") as f:
    json.dump(record, f, sort_keys=True)
if os.environ.get("PROBE_RAISE"):
    raise ValueError(os.environ["PROBE_RAISE"])
sys.exit(int(os.environ.get("PROBE_EXIT", "0")))
