"""Does this environment hold everything a pipeline task imports? The pipeline image's smoke check.

``python -m pipeline.tasks.install_check`` runs as the last step of ``infra/Dockerfile``, and
``tests/test_install_check.py`` runs it in an environment built outside Docker by the same script
(``infra/build_env.sh``) and in one installed from the sdist that Dataflow workers get from ``--setup_file``.
It checks the installed *distribution*, never a source checkout:

1. ``albert-tfx`` is installed, and not editable: an editable install reads a checkout, which no container has;
2. every file the distribution's ``RECORD`` lists is present (a file dropped from the wheel or the image);
3. every module of every top-level package the distribution declares imports, and from the installed copy:
   a package left out of the metadata fails here, through the first module that imports it;
4. every custom artifact type resolves from the schema title it is compiled with, by the same functions TFX's
   Kubeflow v2 container entrypoint uses;
5. the top-level import names the distribution installs (``top_level``) are packages of its own: no stray
   top-level module, none of the names other code imports beside this project (``albert``, the official ALBERT
   code's package), and none that another distribution installed here also installs.

Prints a JSON report on stdout; exits 0 when every check passes, 1 otherwise.
"""
from __future__ import annotations

import importlib
import importlib.metadata
import json
import os
import pkgutil
import sys
import traceback
from typing import Dict, List

DISTRIBUTION = "albert-tfx"
# Import names owned by code used beside this project: the official ALBERT code is ``from albert import
# tokenization`` (the ``albert-tensorflow`` distribution, or a checkout on PYTHONPATH; an unrelated ``albert``
# distribution exists as well). This project's artifact-type namespace is ``albert_tfx`` for that reason.
FOREIGN_NAMES = ("albert",)


def _top_level_packages(dist) -> List[str]:
    """Top-level packages of the distribution, from the files its RECORD lists (``pkg/__init__.py``)."""
    return sorted({str(f).split("/")[0] for f in dist.files or [] if str(f).count("/") == 1
                   and str(f).endswith("/__init__.py")})


def _top_level_names(dist) -> List[str]:
    """Every top-level import name the distribution's RECORD installs: packages and top-level modules (``x.py``,
    ``x.cpython-311-x86_64-linux-gnu.so``), not its ``.dist-info``, ``.pth`` files, scripts or byte-code."""
    names = set()
    for f in dist.files or []:
        parts = str(f).split("/")
        if (parts[0] in ("..", "__pycache__") or parts[0].startswith("__editable__")
                or parts[0].endswith((".dist-info", ".egg-info", ".data"))):
            continue
        if len(parts) > 1:
            if parts[-1].endswith(".py"):
                names.add(parts[0])
        elif parts[0].endswith((".py", ".so", ".pyd")):
            names.add(parts[0].split(".")[0])
    return sorted(names)


def _shared_names(dist, names: List[str]) -> List[str]:
    """``name (other distribution)`` for each of ``names`` that another installed distribution installs too."""
    found = []
    for other in importlib.metadata.distributions():
        other_name = other.metadata["Name"] or ""
        if other_name.lower().replace("_", "-") == DISTRIBUTION:
            continue
        text = other.read_text("top_level.txt")
        theirs = set(text.split()) if text else set(_top_level_names(other))
        found += [f"{name} ({other_name})" for name in sorted(theirs & set(names))]
    return sorted(found)


def _editable(dist) -> bool:
    text = dist.read_text("direct_url.json")
    return bool(text and json.loads(text).get("dir_info", {}).get("editable"))


def _first_line(exc: BaseException) -> str:
    return (traceback.format_exception_only(type(exc), exc)[-1].strip())[:300]


def check() -> Dict[str, object]:
    failures: List[str] = []
    report: Dict[str, object] = {"python": sys.executable, "failures": failures}
    try:
        dist = importlib.metadata.distribution(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        failures.append(f"{DISTRIBUTION} is not installed in {sys.prefix}")
        return report
    root = os.path.realpath(str(dist.locate_file("")))
    report.update(version=dist.version, location=root)
    if _editable(dist):
        failures.append(f"{DISTRIBUTION} is an editable install (it reads a source checkout): install the wheel")
    missing = [str(f) for f in dist.files or [] if not os.path.exists(dist.locate_file(f))]
    if missing:
        failures.append(f"{len(missing)} file(s) of the RECORD are missing, e.g. {', '.join(sorted(missing)[:5])}")
    packages = _top_level_packages(dist)
    report["packages"] = packages
    top_level = _top_level_names(dist)
    report["top_level"] = top_level
    if top_level != packages:
        failures.append(f"top-level modules that are not packages: {sorted(set(top_level) - set(packages))}")
    foreign = sorted(set(top_level) & set(FOREIGN_NAMES))
    if foreign:
        failures.append(f"top-level {foreign} is another project's import name (the official ALBERT code's)")
    shared = _shared_names(dist, top_level)
    if shared:
        failures.append(f"top-level names another installed distribution also installs: {', '.join(shared)}")
    modules = []
    for package in packages:
        try:
            module = importlib.import_module(package)
        except Exception as exc:  # noqa: BLE001 - every import failure is a finding
            failures.append(f"import {package}: {_first_line(exc)}")
            continue
        names = [package] + [info.name for info in pkgutil.walk_packages(module.__path__, package + ".")]
        for name in names:
            try:
                loaded = importlib.import_module(name)
            except Exception as exc:  # noqa: BLE001
                failures.append(f"import {name}: {_first_line(exc)}")
                continue
            where = os.path.realpath(getattr(loaded, "__file__", "") or "")
            if not where.startswith(root + os.sep):
                failures.append(f"{name} was imported from {where}, not from the installed {root}")
            modules.append(name)
    report["modules"] = len(modules)
    report["artifact_types"] = _artifact_types(failures)
    return report


def _artifact_types(failures: List[str]) -> Dict[str, str]:
    """{schema title: class it resolves to} for every custom type, resolved as the KFP v2 entrypoint does."""
    try:
        from kfp.pipeline_spec import pipeline_spec_pb2  # lazy: kfp (0.4 s); may fail: the check reports it
        from tfx.orchestration.kubeflow.v2 import compiler_utils  # lazy: tfx (3.2 s); may fail: the check reports it
        from tfx.orchestration.kubeflow.v2.container import kubeflow_v2_entrypoint_utils as entrypoint  # lazy: tfx (6.0 s); may fail: the check reports it
        from tfx.utils import import_utils  # lazy: tfx (2.8 s); may fail: the check reports it

        from components.artifacts import ALL_TYPES  # lazy: tfx (2.9 s); may fail: the check reports it
    except Exception as exc:  # noqa: BLE001
        failures.append(f"artifact types: {_first_line(exc)}")
        return {}
    resolved = {}
    for cls in ALL_TYPES:
        schema = pipeline_spec_pb2.ArtifactTypeSchema(instance_schema=compiler_utils.get_artifact_schema(cls))
        path = entrypoint._retrieve_class_path(schema)  # the entrypoint's own title → import path
        try:
            found = import_utils.import_class_by_path(path)
        except Exception as exc:  # noqa: BLE001
            failures.append(f"artifact type {cls.TYPE_NAME}: {_first_line(exc)}")
            continue
        if found is not cls:
            failures.append(f"artifact type {cls.TYPE_NAME} resolves to {found!r}, not {cls!r}")
        resolved[cls.TYPE_NAME] = f"{found.__module__}.{found.__qualname__}"
    return resolved


def main() -> None:
    report = check()
    print(json.dumps(report, indent=2, sort_keys=True))
    sys.stdout.flush()
    # Leave without interpreter teardown: TensorFlow can segfault there (protobuf upb) after the work is done.
    os._exit(1 if report["failures"] else 0)


if __name__ == "__main__":
    main()
