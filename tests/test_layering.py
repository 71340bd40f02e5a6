"""The layers import only downward: ``config`` ← ``trainer`` ← ``components`` ← ``pipeline`` ← ``benchmarks`` /
``experiments``.

Every ``import`` / ``from ... import`` statement of every module is read with ``ast`` (imports inside
functions included, so a lazy import cannot hide an upward arrow). ``components`` may import ``trainer``
(the benchmark nodes fine-tune the exported encoder); nothing below ``pipeline`` may import it.
That the pipeline commands stay off ``tfx.v1`` and ``google.cloud.aiplatform``: tests/reliability/test_safety.py.
"""
import ast
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGES = ("config", "trainer", "components", "pipeline", "albert_tfx", "benchmarks", "experiments")
# ``albert_tfx`` is no layer: it only re-exports the artifact types under their schema titles
# (albert_tfx/__init__.py), for the Kubeflow v2 container entrypoint. It imports components alone, and no package
# imports it.
# ``benchmarks`` and ``experiments`` are the top layer: they may import every package (experiments the benchmarks'
# helpers too), and no package of the product imports them.
TOP = {"benchmarks", "experiments"}
FORBIDDEN = {
    "config": {"trainer", "components", "pipeline", "albert_tfx"} | TOP,
    "trainer": {"components", "pipeline", "albert_tfx"} | TOP,
    "components": {"pipeline", "albert_tfx"} | TOP,
    "pipeline": {"albert_tfx"} | TOP,
    "albert_tfx": {"config", "trainer", "pipeline"} | TOP,
    "benchmarks": {"experiments"},
}


def imported_packages(path: str):
    """(line, top-level package) of every absolute import in the file that names a package of this project."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), filename=path)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        found += [(node.lineno, name.split(".")[0]) for name in names if name.split(".")[0] in PACKAGES]
    return found


def upward_imports(package: str):
    out = []
    for dirpath, _, files in os.walk(os.path.join(ROOT, package)):
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(dirpath, name)
                out += [f"{os.path.relpath(path, ROOT)}:{line} imports {target}"
                        for line, target in imported_packages(path) if target in FORBIDDEN[package]]
    return out


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_no_layer_imports_a_layer_above_it(package):
    assert upward_imports(package) == []


def test_the_scanner_sees_lazy_and_aliased_imports(tmp_path):
    """The check itself: an import inside a function, ``import a.b as c`` and ``from a import b`` all count;
    relative imports and other packages do not."""
    path = tmp_path / "m.py"
    path.write_text("import os\nfrom . import sibling\nimport pipeline.cli as cli\n\n"
                    "def f():\n    from trainer.task import run_fn\n    import components\n    return run_fn\n")
    assert imported_packages(str(path)) == [(3, "pipeline"), (6, "trainer"), (7, "components")]



@pytest.mark.parametrize("package", sorted(TOP))
def test_top_layer_scripts_run_as_modules_without_path_edits(package):
    """``python -m benchmarks.NAME`` / ``-m experiments.NAME`` from the repository root: no script edits
    ``sys.path`` to find its imports."""
    found = []
    for name in sorted(os.listdir(os.path.join(ROOT, package))):
        if name.endswith(".py"):
            with open(os.path.join(ROOT, package, name), encoding="utf-8") as f:
                found += [f"{package}/{name}:{i}" for i, line in enumerate(f, 1) if "sys.path" in line]
    assert found == []
