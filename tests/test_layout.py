"""The house by node: docs/architecture.md's table names each node's folder, and that folder holds its component and
its settings; ``pipeline/`` is a few packages by concern; no two modules share a name; no file but the model is
over 650 lines."""
import ast
import collections
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PRODUCT = ("config", "trainer", "components", "pipeline", "albert_tfx")
# Each node's component (the function or class that makes it) and its settings section, by node id. The benchmark
# nodes are one component, a node per family.
COMPONENTS = {"CorpusGen": "CorpusGen", "DataGate": "DataGate", "DataGateCheck": "DataGateCheck",
              "ExamplesGate": "ExamplesGate",
              "VocabGen": "VocabGen", "PretrainingDataGen": "PretrainingDataGen", "Trainer": "AlbertTrainer",
              "ModelImport": "ModelImport", "GlueBenchmark": "BenchmarkEval", "SquadBenchmark": "BenchmarkEval",
              "Squad2Benchmark": "BenchmarkEval", "RaceBenchmark": "BenchmarkEval",
              "BenchmarkReport": "BenchmarkReport", "Blesser": "Blesser", "Pusher": "Pusher"}
SETTINGS = {"CorpusGen": "CorpusConfig", "DataGate": "GateConfig", "DataGateCheck": "GateConfig",
            "ExamplesGate": "GateConfig",
            "VocabGen": "VocabConfig", "PretrainingDataGen": "DataGenConfig", "Trainer": "TrainConfig",
            "ModelImport": "TrainConfig", "GlueBenchmark": "BenchmarkConfig", "SquadBenchmark": "BenchmarkConfig",
            "Squad2Benchmark": "BenchmarkConfig", "RaceBenchmark": "BenchmarkConfig",
            "BenchmarkReport": "ReportConfig", "Blesser": "ReleaseConfig", "Pusher": "ReleaseConfig"}
MAX_LINES = 650
LONGER_ALLOWED = {"trainer/modeling_albert.py"}  # the model: one readable file with the paper's names


def node_table():
    """docs/architecture.md's Layout table: [(node ids, folder, component file, settings file, test names)]."""
    with open(os.path.join(ROOT, "docs", "architecture.md"), encoding="utf-8") as f:
        text = f.read()
    section = text[text.index("## Layout"):]
    rows = []
    for line in section.split("\n"):
        if not line.startswith("| `") or line.count(" | ") < 6:
            continue
        cells = [c.strip() for c in line.strip("|").split(" | ")]
        nodes = re.findall(r"`(\w+)`", cells[0])
        folder = cells[1].strip("`")
        component = re.match(r"`([^`]+)`", cells[4]).group(1)
        settings = re.match(r"`([^`]+)`", cells[5]).group(1)
        tests = re.findall(r"`([^`]+\.py)`", cells[6])
        rows.append((nodes, folder, component, settings, tests))
    return rows


def _defines(path, name) -> bool:
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    return any(isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name == name for node in tree.body)


def test_the_table_names_every_node_of_the_dag_once():
    named = [node for nodes, *_ in node_table() for node in nodes]
    assert sorted(named) == sorted(COMPONENTS)


@pytest.mark.parametrize("nodes,folder,component,settings,tests", node_table(), ids=lambda v: str(v)[:40])
def test_each_node_folder_holds_its_component_and_its_settings(nodes, folder, component, settings, tests):
    """The component module sits in the node's folder (a benchmark family's in the folder above it, which the four
    benchmark nodes share) and defines the node's component; the settings module defines its section."""
    assert os.path.isdir(os.path.join(ROOT, folder)), folder
    component_path = os.path.normpath(os.path.join(ROOT, folder, component))
    settings_path = os.path.normpath(os.path.join(ROOT, folder, settings))
    family = folder.startswith("components/evaluation/") and folder != "components/evaluation/"
    home = os.path.normpath(os.path.join(ROOT, folder, ".." if family else ""))
    for node in nodes:
        assert os.path.dirname(component_path) == home, (node, component)
        assert _defines(component_path, COMPONENTS[node]), (node, component)
        assert _defines(settings_path, SETTINGS[node]), (node, settings)
        # Only ModelImport's one setting (train.init_from, the model in place of the Trainer's) is another node's.
        assert os.path.dirname(settings_path) == home or node == "ModelImport", (node, settings)
    assert os.path.basename(component_path).endswith("_component.py")
    assert os.path.basename(settings_path).endswith("_config.py")
    for name in tests:
        matches = [p for p in _test_files() if p.endswith("/" + name) or re.fullmatch(
            name.replace("*", ".*"), os.path.basename(p))]
        assert matches, f"{name}: no such test file"


def _test_files():
    out = []
    for dirpath, _, names in os.walk(os.path.join(ROOT, "tests")):
        out += [os.path.join(dirpath, n) for n in names if n.startswith("test_") and n.endswith(".py")]
    return out


def test_every_component_module_is_in_the_table():
    """No component left outside its node's folder: every ``*_component.py`` of the product is some row's."""
    listed = {os.path.normpath(os.path.join(ROOT, folder, component)) for _, folder, component, _, _ in node_table()}
    found = {os.path.join(d, n) for package in PRODUCT for d, _, names in os.walk(os.path.join(ROOT, package))
             for n in names if n.endswith("_component.py")}
    assert found == listed


def test_pipeline_is_a_few_packages_by_concern():
    entries = sorted(n for n in os.listdir(os.path.join(ROOT, "pipeline"))
                     if n != "__init__.py" and n != "__pycache__" and (n.endswith(".py") or os.path.isfile(
                         os.path.join(ROOT, "pipeline", n, "__init__.py"))))
    assert len(entries) <= 9, entries  # 9: pipeline/serving (serve, predict, deploy) joined the eight
    for name in entries:
        if not name.endswith(".py"):
            with open(os.path.join(ROOT, "pipeline", name, "__init__.py"), encoding="utf-8") as f:
                assert ast.get_docstring(ast.parse(f.read())), f"pipeline/{name}/__init__.py says nothing of what it holds"


def _product_modules():
    for package in PRODUCT:
        for dirpath, dirs, names in os.walk(os.path.join(ROOT, package)):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            for name in names:
                if name.endswith(".py"):
                    yield os.path.relpath(os.path.join(dirpath, name), ROOT)


def test_no_two_modules_share_a_name():
    by_name = collections.defaultdict(list)
    for path in _product_modules():
        if os.path.basename(path) != "__init__.py":
            by_name[os.path.basename(path)].append(path)
    assert {name: paths for name, paths in by_name.items() if len(paths) > 1} == {}


def test_no_file_but_the_model_is_over_650_lines():
    import subprocess

    tracked = subprocess.run(["git", "ls-files", "*.py"], cwd=ROOT, capture_output=True, text=True).stdout.split()
    if not tracked:  # not a git checkout (an unpacked sdist): every Python file under the root
        tracked = [os.path.relpath(os.path.join(d, n), ROOT) for d, _, names in os.walk(ROOT)
                   if "/." not in d and "/.venv" not in d for n in names if n.endswith(".py")]
    long = {}
    for path in tracked:
        with open(os.path.join(ROOT, path), encoding="utf-8") as f:
            count = sum(1 for _ in f)
        if count > MAX_LINES and path not in LONGER_ALLOWED:
            long[path] = count
    assert long == {}
