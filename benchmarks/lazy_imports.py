"""Which imports inside the product's functions are worth keeping there: what each would add to its module's import.

    .venv/bin/python -m benchmarks.lazy_imports [--repeats 3] [--output FILE.json]

The rule (docs/architecture.md, issue 65): imports go at the top of their module unless a measured start-up cost says
otherwise, named beside the import (``import tensorflow as tf  # lazy: tensorflow (2.8 s)``). This script decides for
every import inside a function of ``config``, ``trainer``, ``components``, ``pipeline`` and ``albert_tfx``:

1. Measured: each module the product imports from outside the project, alone in ``--repeats`` fresh ``python -X
   importtime -c "import NAME"`` (``TF_CPP_MIN_LOG_LEVEL=2 TF_USE_LEGACY_KERAS=1``; bytecode cached first, as
   ``make`` leaves it): its cold import's median CPU and wall seconds, every module it loads, and each one's share
   (``importtime``'s *self* times scaled to the run's CPU seconds; the product's own modules' from processes that
   import them all).
2. Read (``ast``): what each product module loads at import time: its module-level imports (also those under
   ``if``/``try``/``with`` and in class bodies; not those under ``if TYPE_CHECKING``), their parent packages, and
   for product modules theirs again, transitively; for an outside module, what step 1 saw it load.
3. An import of T inside a function of module H would add to H's import what T loads and H does not. It goes to the
   top when that costs under :data:`THRESHOLD` seconds or :data:`SHARE` of H's import, whichever is more (within the
   noise of measuring H's import), counting the imports moved so far, until none moves; else it stays, with
   ``# lazy: <the packages it would add> (<their seconds> s)``.
4. Left where they are, whatever they cost: imports under ``try`` (they may fail), under ``if``/``with``/``for``
   (only that branch needs them), and a name that the module binds otherwise. A cycle is impossible:
   tests/test_layering.py finds no circle among the product's modules, counting imports inside functions.

Prints the CPU (``lscpu`` Model name), each third-party module's cold import and each import's decision; ``--output``
writes them as JSON (benchmarks/results/lazy_imports/); ``--raw`` keeps the measurements for ``--reuse``.
"""
from __future__ import annotations

import argparse
import ast
import datetime
import importlib.machinery
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Set, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PRODUCT = ("config", "trainer", "components", "pipeline", "albert_tfx")
# What an import may add to its module's import and still go to the top: less than half a millisecond or 1% of that
# import, whichever is more; within the noise of measuring the import (``import pipeline.cli``, 0.04 s, varies by
# a millisecond or two from run to run; a median of 3 cold imports of TensorFlow by a few percent).
THRESHOLD = 0.0005
SHARE = 0.01
NAMED = 0.1  # a package is named in a ``# lazy:`` comment when it adds at least this share of its cost
ENV = {"TF_CPP_MIN_LOG_LEVEL": "2", "TF_USE_LEGACY_KERAS": "1"}
_IMPORTTIME = re.compile(r"^import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)$")


# ------------------------------------------------------------------------------------------------ the static part
@dataclass
class Site:
    """One import statement of a product module."""
    module: str  # the module it is in
    path: str  # relative to the repository root
    line: int
    end_line: int
    text: str  # the statement as written (lines joined)
    targets: List[str]  # modules it imports (a ``from X import n`` whose n is a module: X.n), absolute
    names: Dict[str, str]  # name it binds -> what it binds it to ("module" or "module:attribute")
    function: Optional[str] = None  # the function it is in (dotted, inside classes and functions), None at module level
    context: str = "body"  # body (directly in the function's body), if, with, for, while, try, except, finally, match


def module_files(root: str = ROOT, packages: Iterable[str] = PRODUCT) -> Dict[str, str]:
    """{dotted module name: path} of every ``.py`` file in the packages (a package is its ``__init__``)."""
    out = {}
    for package in packages:
        for dirpath, dirs, files in os.walk(os.path.join(root, package)):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(files):
                if name.endswith(".py"):
                    parts = os.path.relpath(os.path.join(dirpath, name[:-3]), root).split(os.sep)
                    out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = os.path.join(dirpath, name)
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _external_module(name: str) -> bool:
    """Whether ``name`` (dotted) is a module or package outside the project, found without importing anything."""
    parts = name.split(".")
    spec = importlib.machinery.PathFinder.find_spec(parts[0])
    if spec is None:
        return parts[0] in sys.builtin_module_names and len(parts) == 1
    if len(parts) == 1:
        return True
    locations = list(spec.submodule_search_locations or [])
    for i, part in enumerate(parts[1:], 1):
        found = None
        for folder in locations:
            if os.path.isdir(os.path.join(folder, part)):
                found = [os.path.join(folder, part)]
                break
            if any(f.startswith(part + ".") and f.endswith((".py", ".so", ".pyc")) and f.split(".")[0] == part
                   for f in os.listdir(folder)):
                return i == len(parts) - 1
        if not found:
            return False
        locations = found
    return True


class _Scanner(ast.NodeVisitor):
    def __init__(self, module: str, path: str, source: str, modules: Dict[str, str]):
        self.module, self.path, self.modules = module, path, modules
        self.lines = source.splitlines()
        self.is_package = path.endswith("__init__.py")
        self.sites: List[Site] = []
        self.stack: List[str] = []  # enclosing function/class names
        self.functions: List[bool] = []  # for each enclosing scope: is it a function
        self.context: List[str] = []  # compound statements between the import and its scope

    def _absolute(self, node: ast.ImportFrom) -> str:
        base = node.module or ""
        if node.level:
            anchor = self.module.split(".")[:len(self.module.split(".")) - node.level + self.is_package]
            base = ".".join(anchor + ([base] if base else []))
        return base

    def _is_module(self, name: str) -> bool:
        top = name.split(".")[0]
        if top in PRODUCT:
            return name in self.modules
        return _external_module(name)

    def _site(self, node, targets, names):
        in_function = any(self.functions)
        context = self.context[-1] if self.context else "body"
        text = " ".join(line.strip() for line in self.lines[node.lineno - 1:node.end_lineno])
        self.sites.append(Site(self.module, os.path.relpath(self.path, ROOT), node.lineno, node.end_lineno, text,
                               targets, names, ".".join(self.stack) if in_function else None, context))

    def visit_Import(self, node: ast.Import):
        targets, names = [], {}
        for alias in node.names:
            targets.append(alias.name)
            if alias.asname:
                names[alias.asname] = alias.name
            else:
                names[alias.name.split(".")[0]] = alias.name.split(".")[0]
        self._site(node, targets, names)

    def visit_ImportFrom(self, node: ast.ImportFrom):
        base = self._absolute(node)
        targets, names = [], {}
        for alias in node.names:
            full = f"{base}.{alias.name}"
            if alias.name != "*" and self._is_module(full):
                targets.append(full)
                names[alias.asname or alias.name] = full
            else:
                targets.append(base)
                names[alias.asname or alias.name] = f"{base}:{alias.name}"
        self._site(node, list(dict.fromkeys(targets)), names)

    def _scope(self, node, is_function):
        self.stack.append(node.name)
        self.functions.append(is_function)
        saved, self.context = self.context, []
        self.generic_visit(node)
        self.context = saved
        self.functions.pop()
        self.stack.pop()

    def visit_FunctionDef(self, node):
        self._scope(node, True)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node):
        self._scope(node, False)

    def visit_Lambda(self, node):
        pass  # no statements inside

    def visit_If(self, node: ast.If):
        if not any(self.functions) and _is_type_checking(node.test):
            self._block("type_checking", node.body)
            self._block("if", node.orelse)
            return
        self.visit(node.test)
        self._block("if", node.body + node.orelse)

    def _block(self, kind: str, statements):
        self.context.append(kind)
        for statement in statements:
            self.visit(statement)
        self.context.pop()

    def visit_Try(self, node):
        self._block("try", node.body + node.orelse)
        self._block("finally", node.finalbody)
        for handler in node.handlers:
            self.visit(handler)

    visit_TryStar = visit_Try
    _KINDS = {ast.With: "with", ast.AsyncWith: "with", ast.For: "for", ast.AsyncFor: "for", ast.While: "while",
              ast.match_case: "match", ast.ExceptHandler: "except"}

    def generic_visit(self, node):
        kind = self._KINDS.get(type(node))
        self.context += [kind] if kind else []
        super().generic_visit(node)
        self.context = self.context[:-1] if kind else self.context


def scan(root: str = ROOT, packages: Iterable[str] = PRODUCT) -> Tuple[Dict[str, str], List[Site]]:
    """({module: path}, every import statement of those modules)."""
    modules = module_files(root, packages)
    sites: List[Site] = []
    for module, path in modules.items():
        with open(path, encoding="utf-8") as f:
            source = f.read()
        scanner = _Scanner(module, path, source, modules)
        scanner.visit(ast.parse(source, filename=path))
        sites += scanner.sites
    return modules, sites


def function_sites(sites: List[Site]) -> List[Site]:
    return [s for s in sites if s.function is not None]


def _parents(name: str) -> List[str]:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts) + 1)]


class ImportTime:
    """What each product module, and each import target, loads at import time (statically; outside names as such)."""

    def __init__(self, modules: Dict[str, str], sites: List[Site]):
        self.modules = modules
        self.top_level: Dict[str, List[Site]] = defaultdict(list)
        for s in sites:
            if s.function is None and s.context != "type_checking":
                self.top_level[s.module].append(s)
        self._memo: Dict[str, Tuple[frozenset, frozenset]] = {}

    def _edges(self, module: str) -> Tuple[Set[str], Set[str]]:
        """(product modules, outside names) that ``module``'s own import-time imports name directly, its parent
        packages included (importing ``a.b.c`` runs ``a`` and ``a.b`` first)."""
        product = {name for name in _parents(module)[:-1] if name in self.modules}
        outside = set()
        for site in self.top_level[module]:
            for target in site.targets:
                if target.split(".")[0] in PRODUCT:
                    product.update(name for name in _parents(target) if name in self.modules)
                else:
                    outside.add(target)
        return product, outside

    def of_target(self, target: str) -> Tuple[Set[str], Set[str]]:
        """(product modules, outside names) that importing ``target`` executes."""
        if target.split(".")[0] not in PRODUCT:
            return set(), {target}
        product, outside = set(), set()
        for name in _parents(target):
            if name in self.modules:
                p, o = self.of_module(name)
                product |= p
                outside |= o
        return product, outside

    def of_module(self, module: str) -> Tuple[frozenset, frozenset]:
        """(product modules, outside names) loaded when ``module`` is imported, itself and its parents included:
        everything its import-time imports reach, whatever the order (a package's ``__init__`` may import its own
        modules, whose import runs the package first)."""
        if module not in self._memo:
            seen, outside, todo = {module}, set(), [module]
            while todo:
                product, names = self._edges(todo.pop())
                outside |= names
                todo += [m for m in product if m not in seen]
                seen |= product
            self._memo[module] = (frozenset(seen), frozenset(outside))
        return self._memo[module]

    def hoist(self, site: Site) -> None:
        """Count ``site`` (an import inside a function) as one at the top of its module from now on."""
        self.top_level[site.module].append(site)
        self._memo.clear()


def bound_names(tree: ast.AST) -> Set[str]:
    """Names a function (or module) body binds itself, not counting nested functions' and classes' bodies, nor
    imports (compared on their own)."""
    out: Set[str] = set()

    def visit(node, top):
        if not top and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
            for d in getattr(node, "decorator_list", []):
                visit(d, False)
            return
        if isinstance(node, ast.Lambda) and not top:
            return
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            out.add(node.id)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            out.add(node.name)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            out.update(node.names)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and top:
            args = node.args
            for a in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg]:
                if a is not None:
                    out.add(a.arg)
            for child in node.body:
                visit(child, False)
            return
        for child in ast.iter_child_nodes(node):
            visit(child, False)

    visit(tree, True)
    return out


def _functions(tree: ast.AST) -> Dict[str, List[ast.AST]]:
    """{dotted function name: [its node, then the functions around it, innermost first]}."""
    out = {}

    def walk(node, stack, functions):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = stack + [child.name]
                out[".".join(name)] = [child] + functions
                walk(child, name, [child] + functions)
            elif isinstance(child, ast.ClassDef):
                walk(child, stack + [child.name], functions)
            else:
                walk(child, stack, functions)

    walk(tree, [], [])
    return out


def structural_reason(site: Site, sites: List[Site], modules: Dict[str, str],
                      _cache: Dict[str, tuple] = {}) -> Optional[str]:  # noqa: B006 (a cache)
    """Why this import must stay in its function whatever it costs, or None."""
    if site.context in ("try", "except", "finally"):
        return "try"
    if site.context != "body":
        return "conditional"
    path = modules[site.module]
    if path not in _cache:
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), filename=path)
        _cache[path] = (bound_names(tree), _functions(tree))
    module_names, functions = _cache[path]
    module_imports = {n: b for s in sites if s.module == site.module and s.function is None for n, b in s.names.items()}
    others = {}
    for s in sites:
        if s.module == site.module and s.function is not None and s is not site:
            for n, b in s.names.items():
                others.setdefault(n, set()).add(b)
    for name, binding in site.names.items():
        elsewhere = module_imports.get(name, "defined" if name in module_names else binding)
        if elsewhere != binding or others.get(name, {binding}) != {binding}:
            return "collision"
        if any(name in bound_names(f) for f in functions[site.function]):
            return "local name"
    return None


# ----------------------------------------------------------------------------------------------- the measurements
def _env() -> Dict[str, str]:
    kept = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPATH")}
    return {**kept, **ENV, "PYTHONPATH": ROOT}


def _importtime(imports: str) -> Tuple[Dict[str, int], float, float]:
    """({module: self microseconds}, wall seconds, CPU seconds) of ``imports`` (statements) in a fresh interpreter
    under ``-X importtime``."""
    code = (f"import time; w, c = time.perf_counter(), time.process_time(); {imports}; "
            f"print('SECONDS', time.perf_counter() - w, time.process_time() - c)")
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", code], cwd=ROOT, env=_env(), capture_output=True,
                          text=True, timeout=900)
    if done.returncode != 0 or "SECONDS" not in done.stdout:
        raise RuntimeError(f"{imports!r} failed: {done.stderr[-2000:]}")
    selfs: Dict[str, int] = defaultdict(int)
    for line in done.stderr.splitlines():
        m = _IMPORTTIME.match(line)
        if m:
            selfs[m.group(4)] += int(m.group(1))
    wall, cpu = (float(v) for v in done.stdout.split("SECONDS")[-1].split())
    return selfs, wall, cpu


def measure(names: List[str], product: List[str], repeats: int, log=print) -> dict:
    """Each outside name's cold import (median wall and CPU seconds of ``repeats`` fresh interpreters), the modules it
    loads, and every module's own cost (``self_s``): its mean *self* time over the runs that imported it, each scaled
    to its run's CPU seconds (so a run's modules add up to them, wherever the garbage collector ran, and other
    processes on the machine add nothing)."""
    baseline = set(_importtime("pass")[0])
    log(f"warming the bytecode cache: {len(names)} outside modules and {len(product)} product modules")
    _importtime("; ".join(f"import {n}" for n in names + product))
    samples: Dict[str, List[float]] = defaultdict(list)

    def run(imports, keep=None):
        selfs, wall, cpu = _importtime(imports)
        own = {m: us for m, us in selfs.items() if m not in baseline}
        scale = cpu / (sum(own.values()) / 1e6 or 1.0)
        for module, us in own.items():
            if keep is None or module in keep:
                samples[module].append(us / 1e6 * scale)
        return set(own), wall, cpu

    cold, loads = {}, {}
    for i, name in enumerate(names, 1):
        runs, loaded = [], set()
        for _ in range(repeats):
            modules, wall, cpu = run(f"import {name}")
            runs.append([round(wall, 3), round(cpu, 3)])
            loaded |= modules
        cold[name] = {"cpu_s": round(statistics.median(r[1] for r in runs), 3),
                      "wall_s": round(statistics.median(r[0] for r in runs), 3), "runs_wall_cpu": runs}
        loads[name] = sorted(loaded)
        log(f"  [{i}/{len(names)}] {name}: {cold[name]['cpu_s']:.3f} s CPU, {cold[name]['wall_s']:.3f} s wall")
    for r in range(repeats):
        log(f"every product module in one process, {r + 1}/{repeats}")
        run("; ".join(f"import {m}" for m in product), keep=set(product))
    return {"cold": cold, "loads": loads,
            "self_s": {m: round(statistics.mean(v), 6) for m, v in sorted(samples.items())}}


# --------------------------------------------------------------------------------------------------- the decision
def package_of(module: str) -> str:
    """What a module belongs to: its top-level package; ``google.X`` and ``google.cloud.X`` (namespaces); ``tfx.X``
    (TFX's parts cost differently)."""
    parts = module.split(".")
    if parts[0] == "google":
        return ".".join(parts[:3] if len(parts) > 2 and parts[1] == "cloud" else parts[:2])
    return ".".join(parts[:2]) if parts[0] == "tfx" else parts[0]


def seconds(value: float) -> str:
    """0.1 s steps; under 0.1 s, two significant digits' worth (a cost that rounds to 0.0 s is not one to name)."""
    return f"{value:.1f}" if value >= 0.095 else f"{value:.2f}" if value >= 0.0095 else f"{value:.3f}"


@dataclass
class Decision:
    site: Site
    hoist: bool
    reason: str  # "cost", "cheap", "try", "conditional", "collision", "local name"
    added_s: float = 0.0
    added: Dict[str, float] = field(default_factory=dict)  # package -> seconds it adds

    def comment(self) -> str:
        """The ``# lazy:`` comment of a kept import ("" when it adds nothing): the packages that add at least
        :data:`NAMED` of it each, costliest first, third-party ones by top-level name (tfx.types and tfx.components:
        tfx; ``google.X``, a namespace, as such), then the seconds all it adds."""
        if not self.added:
            return ""
        named = [p for p, s in self.added.items() if s >= NAMED * self.added_s] or list(self.added)[:1]
        tops = list(dict.fromkeys(p if p.startswith("google.") or p.split(".")[0] in PRODUCT else p.split(".")[0]
                                  for p in named))
        return f"# lazy: {', '.join(tops)} ({seconds(self.added_s)} s)"


def decide(modules: Dict[str, str], sites: List[Site], measured: dict, threshold: float = THRESHOLD,
           share: float = SHARE) -> List[Decision]:
    """Every import inside a function: to the top, or kept (why; what it would add to its module's import).

    An import that is not kept for where it stands (:func:`structural_reason`) goes to the top when what it would add
    to its module's import, the modules it loads that the module does not load already, costs less than
    ``threshold`` seconds together; again with the imports moved so far counted at the top, until none moves."""
    static = ImportTime(modules, sites)
    loads = {n: frozenset(v) | {n} for n, v in measured["loads"].items()}
    selfs = measured["self_s"]
    loaded_memo: Dict[str, frozenset] = {}

    def loaded(product, outside) -> Set[str]:
        out = set(product)
        for name in outside:
            out |= loads[name]
        return out

    def module_loaded(module: str) -> frozenset:
        if module not in loaded_memo:
            loaded_memo[module] = frozenset(loaded(*static.of_module(module)))
        return loaded_memo[module]

    def cost(names: Iterable[str]) -> float:
        return sum(selfs.get(m, 0.0) for m in names)

    def target_loads(s: Site) -> Tuple[Set[str], Set[str]]:
        product, outside = set(), set()
        for t in s.targets:
            p, o = static.of_target(t)
            product |= p
            outside |= o
        return loaded(product, outside), outside

    def describe(s: Site, adds: Set[str], outside: Set[str]) -> Dict[str, float]:
        """What ``adds`` costs, by the package the product imports that brings it in (the one loading fewest modules
        first: numpy's modules are numpy's, not TensorFlow's); project modules under the import's own target."""
        per_package: Dict[str, float] = defaultdict(float)
        named = {m for m in adds if m.split(".")[0] in PRODUCT}
        per_package[s.targets[0]] += cost(named)
        for name in sorted(outside, key=lambda n: (len(loads[n]), n)):
            share = (loads[name] & adds) - named
            per_package[package_of(name)] += cost(share)
            named |= share
        return dict(sorted(((p, round(v, 3)) for p, v in per_package.items() if v > 0), key=lambda kv: -kv[1]))

    decisions: Dict[int, Decision] = {}
    candidates = []
    for s in function_sites(sites):
        why = structural_reason(s, sites, modules)
        if why is None:
            candidates.append(s)
        else:
            adds, outside = target_loads(s)
            adds -= module_loaded(s.module)
            decisions[id(s)] = Decision(s, False, why, round(cost(adds), 3), describe(s, adds, outside))
    moved = True
    while moved:  # until nothing more moves: one that moved can make another's addition smaller
        moved = False
        for s in candidates:
            if id(s) in decisions and decisions[id(s)].hoist:
                continue
            adds, outside = target_loads(s)
            have = module_loaded(s.module)
            adds -= have
            cheap = cost(adds) < max(threshold, share * cost(have))
            decision = Decision(s, cheap, "cheap" if cheap else "cost", round(cost(adds), 4), describe(s, adds, outside))
            decisions[id(s)] = decision
            if decision.hoist:
                static.hoist(s)
                loaded_memo.clear()
                moved = True
    for d in decisions.values():  # what the kept ones add to their module as it is now, every import moved
        if not d.hoist:
            adds, outside = target_loads(d.site)
            adds -= module_loaded(d.site.module)
            d.added_s, d.added = round(cost(adds), 4), describe(d.site, adds, outside)
    return sorted(decisions.values(), key=lambda d: (d.site.path, d.site.line))


# ------------------------------------------------------------------------------------------------------ reporting
def cpu_model() -> str:
    """``lscpu``'s Model name, and the core count."""
    out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=30).stdout if shutil.which("lscpu") else ""
    name = next((line.split(":", 1)[1].strip() for line in out.splitlines() if line.startswith("Model name")), "?")
    return f"{name}, {os.cpu_count()} cores"


def tree_version() -> str:
    """The commit the product's files are at (``+changes`` when they differ from it), or "unknown"."""
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                                timeout=60, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", *PRODUCT], cwd=ROOT, capture_output=True,
                               text=True, timeout=60, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return commit + ("+changes" if dirty else "")


def outside_names(sites: List[Site]) -> List[str]:
    """Every module outside the project that a product module imports (at module level or in a function)."""
    return sorted({t for s in sites for t in s.targets if t.split(".")[0] not in PRODUCT})


def main(argv: Optional[List[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3, help="fresh interpreters per measurement (median; default 3)")
    parser.add_argument("--output", help="write the table and the decisions as JSON to this file")
    parser.add_argument("--raw", help="also write every measurement (the modules each import loads, each module's "
                                      "self seconds) to this file, for --reuse")
    parser.add_argument("--threshold", type=float, default=THRESHOLD, help="seconds an import may add to its module's "
                        f"import and go to the top (default {THRESHOLD}) ...")
    parser.add_argument("--share", type=float, default=SHARE,
                        help=f"... or this share of that import, whichever is more (default {SHARE})")
    parser.add_argument("--reuse", help="decide from the measurements a --raw file holds instead of measuring again")
    args = parser.parse_args(argv)

    modules, sites = scan()
    names = outside_names(sites)
    if args.reuse:
        with open(args.reuse, encoding="utf-8") as f:
            measured = json.load(f)
        missing = sorted(set(names) - set(measured["cold"]))
        if missing:
            raise SystemExit(f"{args.reuse} has no measurement of {', '.join(missing)}: measure again")
    else:
        started, load = time.time(), os.getloadavg()[0]
        measured = measure(names, sorted(modules), args.repeats, log=lambda m: print(m, file=sys.stderr, flush=True))
        measured.update(load_average=[load, os.getloadavg()[0]], seconds=round(time.time() - started),
                        cpu=cpu_model(), date=datetime.date.today().isoformat())
    if args.raw:
        with open(args.raw, "w", encoding="utf-8") as f:
            json.dump(measured, f)
    decisions = decide(modules, sites, measured, args.threshold, args.share)
    repeats = len(next(iter(measured["cold"].values()))["runs_wall_cpu"])

    stdlib = set(sys.stdlib_module_names)
    print(f"{measured['date']}, CPU: {measured['cpu']}; Python {sys.version.split()[0]}; load average "
          f"{measured['load_average'][0]:.2f} before, {measured['load_average'][1]:.2f} after; "
          f"{measured['seconds']} s; median of {repeats}")
    print(f"\ncold import of each outside package the product imports, CPU and wall seconds (a fresh "
          f"`python -c 'import NAME'`; {' '.join(f'{k}={v}' for k, v in ENV.items())})")
    third_party = [n for n in names if n.split(".")[0] not in stdlib]
    for name in sorted(third_party, key=lambda n: -measured["cold"][n]["cpu_s"]):
        print(f"  {measured['cold'][name]['cpu_s']:6.2f} {measured['cold'][name]['wall_s']:6.2f}  {name}")
    kept = [d for d in decisions if not d.hoist]
    print(f"\n{len(decisions)} imports inside functions: {len(decisions) - len(kept)} to the top, {len(kept)} kept "
          f"({', '.join(f'{r}: {sum(d.reason == r for d in kept)}' for r in sorted({d.reason for d in kept}))})")
    for d in decisions:
        s = d.site
        what = "top " if d.hoist else f"keep ({d.reason})"
        added = ", ".join(f"{p} {v:.2f}" for p, v in list(d.added.items())[:4] if v >= 0.005)
        print(f"  {s.path}:{s.line}  {what:20} +{d.added_s:6.3f} s  {s.text[:70]}  [{added}]")
    if args.output:
        os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
        result = {
            "date": measured["date"], "cpu": measured["cpu"], "python": sys.version.split()[0],
            "product_at": tree_version(),
            "repeats": repeats, "threshold_s": args.threshold, "share": args.share, "env": ENV,
            "load_average": [round(v, 2) for v in measured["load_average"]], "seconds": measured["seconds"],
            "cold_import_s": {n: measured["cold"][n] for n in sorted(third_party)},
            "stdlib_cold_import_cpu_s": {n: measured["cold"][n]["cpu_s"] for n in names if n not in third_party},
            "imports_in_functions": [{"path": d.site.path, "line": d.site.line, "function": d.site.function,
                                      "import": d.site.text, "hoist": d.hoist, "reason": d.reason,
                                      "adds_s": d.added_s, "adds": {p: v for p, v in d.added.items() if v >= 0.005},
                                      "comment": d.comment()}
                                     for d in decisions],
        }
        with open(args.output, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
