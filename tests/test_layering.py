"""The layers import only downward: ``config`` ← ``trainer`` ← ``components`` ← ``pipeline`` ← ``benchmarks`` /
``experiments``.

Every ``import`` / ``from ... import`` statement of every module is read with ``ast`` (imports inside
functions included, so a lazy import cannot hide an upward arrow). ``components`` may import ``trainer``
(the benchmark nodes fine-tune the exported encoder); nothing below ``pipeline`` may import it.
Nor is there a circle, inside a layer either: no module of the product (``PRODUCT``) imports, however lazily or
only for type checking, a module that imports it back, directly or through others. That the pipeline commands stay off ``tfx.v1`` and ``google.cloud.aiplatform``:
tests/reliability/test_safety.py.

Imports go at the top of their module; one inside a function says why it is there, ``# lazy: <what it loads>
(<measured seconds> s)`` or ``# lazy: <another reason>`` (docs/architecture.md; ``python -m benchmarks.lazy_imports``
measures and decides).
"""
import ast
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGES = ("config", "trainer", "components", "pipeline", "albert_tfx", "benchmarks", "experiments")
PRODUCT = ("config", "trainer", "components", "pipeline", "albert_tfx")  # what is installed; no circle among them
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
    ``sys.path`` to find its imports. The one module that edits it, ``benchmarks/hf_packages.py``, adds the Hugging
    Face peer's own install folder (torch, transformers), never the repository."""
    found = []
    for name in sorted(os.listdir(os.path.join(ROOT, package))):
        if name.endswith(".py") and f"{package}/{name}" != "benchmarks/hf_packages.py":
            with open(os.path.join(ROOT, package, name), encoding="utf-8") as f:
                found += [f"{package}/{name}:{i}" for i, line in enumerate(f, 1) if "sys.path" in line]
    assert found == []


def module_files(root: str, packages=PRODUCT):
    """{dotted module name: path} of every ``.py`` file in the packages (a package is its ``__init__``)."""
    out = {}
    for package in packages:
        for dirpath, _, files in os.walk(os.path.join(root, package)):
            for name in sorted(files):
                if name.endswith(".py"):
                    parts = os.path.relpath(os.path.join(dirpath, name[:-3]), root).split(os.sep)
                    out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = os.path.join(dirpath, name)
    return out


def import_graph(root: str, packages=PRODUCT):
    """{module: {imported module: first line}} over the modules of ``packages``.

    Every import counts, also inside functions and under ``TYPE_CHECKING``; relative ones are made absolute.
    ``from pkg import name`` is an arrow to ``pkg.name`` where that is a module, else to ``pkg`` (a name its
    ``__init__`` defines or re-exports); ``import a.b`` is an arrow to ``a.b``. Other packages are left out.
    """
    modules = module_files(root, packages)
    graph = {}
    for module, path in modules.items():
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), filename=path)
        is_package = path.endswith("__init__.py")
        edges = graph.setdefault(module, {})
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = module.split(".")[:len(module.split(".")) - node.level + is_package]
                    base = ".".join(anchor + ([base] if base else []))
                targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                           for alias in node.names]
            else:
                continue
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != module:
                    edges.setdefault(target, node.lineno)
    return graph


def import_cycles(graph):
    """Every circle of the graph once, each as a shortest way round ``[a, b, …, a]`` from its first module."""
    cycles = {}
    for start in sorted(graph):
        cycle = shortest_cycle(graph, start)
        if cycle and frozenset(cycle) not in cycles:
            cycles[frozenset(cycle)] = cycle
    return list(cycles.values())


def shortest_cycle(graph, start):
    """A shortest way from ``start`` back to itself (breadth-first search), or None."""
    came_from, queue = {start: None}, [start]
    for v in queue:
        for w in sorted(graph[v]):
            if w == start:
                path = [v]
                while came_from[path[0]] is not None:
                    path.insert(0, came_from[path[0]])
                return path + [start]
            if w not in came_from:
                came_from[w] = v
                queue.append(w)
    return None


def describe(graph, cycle):
    """``a:12 -> b:3 -> a``: line 12 of ``a`` imports ``b``, line 3 of ``b`` imports ``a``."""
    return " -> ".join(f"{a}:{graph[a][b]}" for a, b in zip(cycle, cycle[1:])) + f" -> {cycle[-1]}"


def test_the_product_has_no_import_circles():
    """No module of the product imports, however lazily, a module that imports it back, directly or not."""
    graph = import_graph(ROOT)
    assert [describe(graph, cycle) for cycle in import_cycles(graph)] == []


def test_the_circle_finder_sees_lazy_typing_only_relative_and_re_exported_imports(tmp_path):
    """The check itself, on a package of its own: ``a`` imports ``b`` inside a function, ``b`` imports ``c`` under
    ``TYPE_CHECKING``, ``c`` imports ``a`` relatively: one circle. ``d`` takes a name the package re-exports (an
    arrow to ``pkg``, whose ``__init__`` imports ``a``), which is no circle; other packages are left out."""
    files = {"__init__.py": "from pkg.a import A\n",
             "a.py": "A = 1\n\n\ndef f():\n    from pkg import b\n    return b\n",
             "b.py": "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from pkg.c import C\n",
             "c.py": "import os\nfrom . import a\n\nC = a.A\n",
             "d.py": "import json\nfrom pkg import A\n"}
    (tmp_path / "pkg").mkdir()
    for name, text in files.items():
        (tmp_path / "pkg" / name).write_text(text)
    graph = import_graph(str(tmp_path), ("pkg",))
    assert graph == {"pkg": {"pkg.a": 1}, "pkg.a": {"pkg.b": 5}, "pkg.b": {"pkg.c": 4}, "pkg.c": {"pkg.a": 2},
                     "pkg.d": {"pkg": 2}}
    assert [describe(graph, c) for c in import_cycles(graph)] == ["pkg.a:5 -> pkg.b:4 -> pkg.c:2 -> pkg.a"]
    (tmp_path / "pkg" / "b.py").write_text("C = None\n")
    assert import_cycles(import_graph(str(tmp_path), ("pkg",))) == []


def imports_in_functions_without_a_reason(path: str):
    """``line: statement`` of every import inside a function (at any depth) whose line, or last line, has no
    ``# lazy: <reason>`` comment."""
    with open(path, encoding="utf-8") as f:
        source = f.read()
    lines = source.splitlines()
    found = []

    def visit(node, in_function):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)) and in_function:
                if not re.search(r"#.*\blazy: \S", lines[child.end_lineno - 1]):
                    found.append(f"{child.lineno}: {lines[child.lineno - 1].strip()}")
            visit(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    visit(ast.parse(source, filename=path), False)
    return found


def test_every_import_inside_a_function_says_why_it_is_not_at_the_top():
    """Issue 65: an import stays in its function only for a measured start-up cost, named beside it
    (``import tensorflow as tf  # lazy: tensorflow (2.8 s)``), or for another reason it names (an import that may
    fail, one on a branch, a name the module binds otherwise); the rest are at the top of their module."""
    found = [f"{os.path.relpath(path, ROOT)}:{where}" for path in module_files(ROOT).values()
             for where in imports_in_functions_without_a_reason(path)]
    assert found == []


def test_the_lazy_comment_check_sees_nested_multi_line_and_method_imports(tmp_path):
    """The check itself: imports in functions, methods and nested blocks count, on their last line for a multi-line
    one; module-level and class-level ones do not."""
    path = tmp_path / "m.py"
    path.write_text("import os\n\nclass C:\n    import json\n\n    def m(self):\n        import re\n\n"
                    "def f():\n    if True:\n        import sys  # lazy: a reason\n    from a import (b,\n"
                    "                   c)  # lazy: a (1.0 s)\n    from d import (e,  # lazy: on the first line\n"
                    "                   g)\n    import h  # nolazy: h\n")
    assert imports_in_functions_without_a_reason(str(path)) == [
        "7: import re", "14: from d import (e,  # lazy: on the first line", "16: import h  # nolazy: h"]
