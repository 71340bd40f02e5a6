"""Fingerprints of what the code produces, committed so that a change which should not move them (a refactor, a move
of modules) is checked against what the code produced *before* it, not against its own output of today.

Three kinds, each a JSON file under ``tests/fixtures/fingerprints/``:

- ``node_parameters.json``: ``PipelineConfig.node_parameters()`` of every configuration in ``CONFIGS`` (what each
  node's TFX cache key is built from, besides its inputs and its executor's class), in full, so a diff names the
  setting that moved; this checkout's folder is written ``<repo>``.
- ``compiled_specs.json``: the compiled Kubeflow v2 spec of each of those configurations with the code's own module
  paths reduced to their last name (``components.tfx_components.CorpusGen_Executor`` → ``<code>.CorpusGen_Executor``)
  and this checkout's folder to ``<repo>``: everything else (parameters, artifact titles, wiring, images,
  commands) must stay byte for byte.
- ``sample_outputs.json``: SHA-256 of every file of the sample run's data artifacts (documents, vocabulary,
  examples, datagen statistics), by artifact type and relative path.
- ``sample_zh_outputs.json``: the same of ``run --preset sample-zh`` made by commit f8c4e63, the last before runs of
  several languages (issue 63): :func:`sample_outputs` of that run's store (tests/test_sample_zh.py compares).

Written by ``python -m tests.fingerprints write`` (run it only when a change is *meant* to move them, and say so in
the commit); read by tests/test_fingerprints.py and tests/reliability/test_crash_rerun_bytes.py.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import sys
from typing import Dict

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FOLDER = os.path.join(REPO, "tests", "fixtures", "fingerprints")
IMAGE = "europe-docker.pkg.dev/p/r/albert-tfx:1"
# Data folders for the presets that ship none (as tests/test_node_parameters.py gives them).
PAPER_DATA = ["corpus.wikipedia_dir=gs://b/wiki", "corpus.books_dir=gs://b/books", "benchmarks.glue_dir=gs://b/glue",
              "benchmarks.squad_dir=gs://b/squad", "benchmarks.squad_v2_dir=gs://b/squad2",
              "benchmarks.race_dir=gs://b/race", "datagen.eval_source=benchmark_dev"]
# The configurations whose node parameters and compiled specs are pinned: preset, overrides, pipeline root. The
# Chinese sample, both English samples, and the paper DAG with every benchmark node and a Vertex AI Trainer.
CONFIGS = {
    "sample": ("sample", [], None),
    "sample-zh": ("sample-zh", [], None),
    "small": ("small", PAPER_DATA[:2], None),
    "paper": ("paper", PAPER_DATA + ["vertex_training.enabled=true", "vertex_training.project=p-albert"],
              "gs://b/root"),
    "paper-v2": ("paper-v2", PAPER_DATA, "gs://b/root"),
}
# The data artifacts of the sample run whose bytes are pinned (their nodes are deterministic for a seed).
DATA_TYPES = ("albert_tfx.Documents", "albert_tfx.SentencePieceModel", "Examples", "albert_tfx.DataGenStatistics")
# A dotted path into this project's packages: a module (``pipeline.tasks.snapshot_task``), a class or function in one.
_CODE_PATH = re.compile(r"\b(?:components|pipeline|trainer|config|albert_tfx)(?:\.[A-Za-z_][A-Za-z0-9_]*)+")


def config(name: str):
    from pipeline.settings.configs import build_config

    preset, overrides, root = CONFIGS[name]
    return build_config(preset, overrides=overrides, pipeline_root=root)


def node_parameters() -> Dict[str, dict]:
    """{name: node parameters}, this checkout's folder (the sample presets' data) written ``<repo>``."""
    params = {name: config(name).node_parameters(IMAGE) for name in CONFIGS}
    return json.loads(json.dumps(params, sort_keys=True).replace(REPO, "<repo>"))


def normalized_spec(spec: dict) -> dict:
    """The compiled spec without what may move with the code: module paths (to their last name) and this checkout's
    folder. The artifact types' schema titles (``albert_tfx.Documents``) are kept: they are a contract."""
    text = json.dumps(spec, indent=1, sort_keys=True).replace(REPO, "<repo>")

    def code(match):
        path = match.group(0)
        if path.startswith("albert_tfx.") and path.count(".") == 1:
            return path  # a schema title
        return "<code>." + path.rsplit(".", 1)[-1]

    return json.loads(_CODE_PATH.sub(code, text))


def compiled_specs(tmp: str) -> Dict[str, dict]:
    """{name: normalized spec} of every configuration, compiled as ``albert-pipeline compile`` does, into ``tmp``."""
    from pipeline.cloud.kubeflow_v2_runner import compile_pipeline

    out = {}
    for name in CONFIGS:
        path = compile_pipeline(config(name), os.path.join(tmp, f"{name}.json"), image=IMAGE)
        with open(path, encoding="utf-8") as f:
            out[name] = normalized_spec(json.load(f))
    return out


def _digest(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def sample_outputs(metadata_path: str) -> Dict[str, Dict[str, str]]:
    """{artifact type: {relative path: sha256}} of the LIVE data artifacts of a sample run's MLMD store."""
    from tests.reliability import mlmd

    live = mlmd.live_artifacts(mlmd.open_store(metadata_path))
    out = {}
    for type_name in DATA_TYPES:
        (artifact,) = live[type_name]
        files = {}
        for dirpath, _, names in os.walk(artifact.uri):
            for name in names:
                path = os.path.join(dirpath, name)
                files[os.path.relpath(path, artifact.uri)] = _digest(path)
        out[type_name] = dict(sorted(files.items()))
    return out


def load(name: str):
    with open(os.path.join(FOLDER, name), encoding="utf-8") as f:
        return json.load(f)


def _write(name: str, data) -> None:
    os.makedirs(FOLDER, exist_ok=True)
    with open(os.path.join(FOLDER, name), "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1, sort_keys=True, ensure_ascii=False)
        f.write("\n")


def main(argv) -> int:
    """``write [METADATA_SQLITE]``: the node parameters and the compiled spec; with a sample run's MLMD store, its
    outputs too."""
    import tempfile

    if not argv or argv[0] != "write":
        print("usage: python -m tests.fingerprints write [SAMPLE_RUN_METADATA_SQLITE]", file=sys.stderr)
        return 2
    _write("node_parameters.json", node_parameters())
    with tempfile.TemporaryDirectory() as tmp:
        _write("compiled_specs.json", compiled_specs(tmp))
    if len(argv) > 1:
        _write("sample_outputs.json", sample_outputs(argv[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
