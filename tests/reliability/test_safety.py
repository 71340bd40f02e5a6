"""Safety: safe YAML loading, no secrets in the repository or the image context, validated config
paths, and no network access at import time."""
import json
import os
import re
import subprocess
import sys
import textwrap

import pytest

from config.errors import UserError
from pipeline.settings.configs import ConfigError, build_config
from pipeline.settings.resolve import resolve_config
from tests.reliability import fixtures

REPO = fixtures.REPO
PACKAGES = ("pipeline", "components", "trainer")


pytestmark = pytest.mark.longest_first(15)


# ------------------------------------------------------------------------------------------ YAML
def test_yaml_config_with_python_tag_is_rejected(tmp_path):
    marker = tmp_path / "pwned"
    bad = tmp_path / "evil.yaml"
    bad.write_text(f'train:\n  num_train_steps: !!python/object/apply:os.system ["touch {marker}"]\n')
    # safe_load refuses the tag; the CLI-facing error names the file and the tag (exit 2 through the CLI).
    with pytest.raises(ConfigError, match=r"evil\.yaml: not valid YAML .*python/object/apply"):
        build_config("sample", str(bad))
    assert not marker.exists()


def test_yaml_config_with_unknown_key_is_rejected(tmp_path):
    cfg = tmp_path / "typo.yaml"
    cfg.write_text("train:\n  num_train_step: 10\n")
    with pytest.raises(ConfigError, match="unknown config key.*train.num_train_step"):
        build_config("sample", str(cfg))


def _tracked_files():
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True, timeout=60).stdout
        return [f for f in out.decode().split("\0") if f]
    except (OSError, subprocess.CalledProcessError):  # no git (e.g. inside the image): walk the tree
        skip = {".git", ".venv", "outputs", "__pycache__", ".pytest_cache"}
        files = []
        for root, dirs, names in os.walk(REPO):
            dirs[:] = [d for d in dirs if d not in skip and not d.endswith(".egg-info")]
            files += [os.path.relpath(os.path.join(root, n), REPO) for n in names]
        return files


def test_no_unsafe_yaml_or_pickle_loading_of_configs():
    unsafe = re.compile(r"yaml\.(?:unsafe_load|full_load|load_all)\(|yaml\.load\((?![^)]*SafeLoader)"
                        r"|Loader=yaml\.(?:Loader|FullLoader|UnsafeLoader)")
    offenders = []
    for rel in _tracked_files():
        if rel.endswith(".py") and rel.split("/")[0] in PACKAGES:
            with open(os.path.join(REPO, rel), encoding="utf-8") as f:
                for n, line in enumerate(f, 1):
                    if unsafe.search(line):
                        offenders.append(f"{rel}:{n}: {line.strip()}")
    assert not offenders, offenders


# --------------------------------------------------------------------------------------- secrets
# Patterns are assembled from pieces so this file does not match itself.
_SECRET_PATTERNS = {
    "private key": re.compile("-----BEGIN (?:RSA |EC |DSA |OPENSSH |PGP |ENCRYPTED )?" + "PRIVATE KEY" + "( BLOCK)?-----"),
    "GCP service-account key": re.compile('"private_key' + '_id"\\s*:\\s*"[0-9a-f]{20,}"'),
    "AWS access key id": re.compile("(?<![A-Z0-9])" + "AK" + "IA[0-9A-Z]{16}(?![A-Z0-9])"),
    "Google API key": re.compile("AI" + "za[0-9A-Za-z_\\-]{35}"),
    "GitHub token": re.compile("gh[pousr]" + "_[A-Za-z0-9]{36,}"),
    "Slack token": re.compile("xox[abprs]" + "-[A-Za-z0-9-]{10,}"),
    "password assignment": re.compile("(?i)(?:password|passwd|secret_key|api_key)" + "\\s*[:=]\\s*['\"][^'\"\\s$<{]{8,}['\"]"),
}


def test_no_secrets_in_tracked_files():
    hits = []
    for rel in _tracked_files():
        path = os.path.join(REPO, rel)
        if not os.path.isfile(path) or os.path.getsize(path) > 20_000_000:
            continue
        with open(path, "rb") as f:
            data = f.read()
        if rel.endswith((".bz2", ".model", ".gz")):
            continue  # compressed/binary samples: no text to leak
        text = data.decode("utf-8", errors="replace")
        for name, pattern in _SECRET_PATTERNS.items():
            for m in pattern.finditer(text):
                hits.append(f"{rel}: {name}: {m.group(0)[:24]}...")
    assert not hits, hits
    names = [os.path.basename(r).lower() for r in _tracked_files()]
    assert not [n for n in names if n.endswith((".pem", ".p12", ".key")) or n in (".env", "credentials.json")]


def test_image_build_context_excludes_credentials():
    ignore = open(os.path.join(REPO, "infra", "Dockerfile.dockerignore"), encoding="utf-8").read().split()
    for pattern in ("**/*.pem", "**/.env", "**/*credentials*.json", "**/*-key.json", ".git", ".venv", "outputs"):
        assert pattern in ignore, pattern
    dockerfile = open(os.path.join(REPO, "infra", "Dockerfile"), encoding="utf-8").read()
    build, final = dockerfile.rsplit("\nFROM ", 1)
    # The whole (filtered) context enters the build stage only, to build the wheel; the image itself gets the
    # virtualenv, the sample data and the environments file: no "COPY . ." of the tree, nothing from outputs/.
    assert "\nCOPY . .\n" in build
    copied = re.findall(r"^COPY (?!--from)(.+) \S+$", final, re.MULTILINE)
    sources = [s for line in copied for s in line.split()]
    assert sources == ["infra/environments.yaml", "data/sample", "data/sample-zh", "data/sample-multi"], sources
    assert re.findall(r"^COPY --from=(\S+) (\S+)", final, re.MULTILINE) == [
        ("beam_sdk", "/opt/apache/beam"), ("build", "/opt/albert-tfx/.venv")]
    assert not re.search(r"^\s*(?:ENV|ARG)\s+\S*(?:KEY|TOKEN|SECRET|PASSWORD)\S*[ =]\S", dockerfile,
                         re.MULTILINE | re.IGNORECASE)


# ----------------------------------------------------------------------------------------- paths
@pytest.mark.parametrize("override, message", [
    ("corpus.books_dir=/no/such/books", "corpus.books_dir='/no/such/books' is invalid: folder /no/such/books does not exist"),
    ("vocab.import_model=missing/30k.model", "vocab.import_model='missing/30k.model' is invalid: file"),
    ("benchmarks.race_dir=does-not-exist", "benchmarks.race_dir='does-not-exist' is invalid: folder"),
])
def test_missing_input_paths_fail_before_the_run(override, message):
    with pytest.raises(ConfigError) as info:
        extra = ["vocab.vocab_size=0"] if override.startswith("vocab.import_model") else []
        resolve_config(build_config("sample", overrides=[override] + extra), local=True)
    assert message in str(info.value)


def test_relative_paths_are_resolved_and_recorded_absolute(monkeypatch):
    monkeypatch.chdir(os.path.join(REPO, "data"))
    config = resolve_config(build_config("sample", overrides=["corpus.books_dir=../data/sample/./books"]), local=True)
    books = config.corpus.books_dir
    assert os.path.isabs(books) and books == os.path.normpath(books)  # no "..", no "."
    assert os.path.realpath(books) == os.path.realpath(os.path.join(REPO, "data", "sample", "books"))
    # A bucket is listed (its fingerprint is the run's data identity): without credentials, a one-line refusal at once
    # (Beam's client would retry for two minutes), naming the setting. Listing through a bucket: test_spans.py.
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", os.path.join(REPO, "no-such-credentials.json"))
    with pytest.raises(UserError, match=r"^config corpus\.books_dir='gs://bucket/books': cannot be listed here: "
                                        r"this machine has no Google Cloud credentials"):
        resolve_config(build_config("sample", overrides=["corpus.books_dir=gs://bucket/books"]), local=True)


@pytest.mark.parametrize("override", ["corpus.wikipedia_glob=../../*", "corpus.books_glob=/etc/**/*.txt",
                                      "benchmarks.glue_dir=http://example.com/glue"])
def test_globs_escaping_their_folder_and_foreign_schemes_are_rejected(override):
    with pytest.raises(ConfigError, match="is invalid"):
        build_config("sample", overrides=[override])


def test_corpus_reader_refuses_globs_outside_the_imported_folder(tmp_path):
    from components.corpus import corpus_beam

    for pattern in ("../*.txt", "/etc/*", "a/../../b/*.txt"):
        with pytest.raises(ValueError, match="without '..' segments"):
            corpus_beam.list_inputs(None, "", str(tmp_path), pattern)


# ----------------------------------------------------------------------------- no network at import
_NO_NETWORK = textwrap.dedent("""
    import importlib, json, os, socket, sys
    attempts = []
    def _deny(name):
        def f(*args, **kwargs):
            attempts.append(f"{name}{args[:2]!r}")
            raise OSError(f"network access at import time: {name}")
        return f
    socket.socket.connect = _deny("connect")
    socket.socket.connect_ex = _deny("connect_ex")
    socket.create_connection = _deny("create_connection")
    socket.getaddrinfo = _deny("getaddrinfo")
    failed = {}
    modules, first, heavy = json.loads(sys.argv[1]), json.loads(sys.argv[2]), json.loads(sys.argv[3])
    for name in first:  # what `albert-pipeline run/plan/compile` import, and the sample DAG built
        importlib.import_module(name)
    from pipeline.settings.configs import build_config
    from pipeline.pipeline import create_pipeline
    create_pipeline(build_config("sample"))
    heavy_loaded = sorted(m for m in heavy if m in sys.modules)
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception as exc:
            failed[name] = f"{type(exc).__name__}: {exc}"
    print("RESULT " + json.dumps({"attempts": attempts, "failed": failed, "imported": len(modules) - len(failed),
                                  "heavy_loaded_by_the_commands": heavy_loaded}))
    sys.stdout.flush()
    os._exit(0)
""")


def _modules():
    names = []
    for package in PACKAGES:
        for root, dirs, files in os.walk(os.path.join(REPO, package)):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            rel = os.path.relpath(root, REPO).replace(os.sep, ".")
            names += [rel if f == "__init__.py" else f"{rel}.{f[:-3]}" for f in sorted(files) if f.endswith(".py")]
    return names


# What the pipeline commands import (run, plan, compile) and must not: ``tfx.v1`` imports every standard component
# and extension (~10 s more than the TFX modules the pipeline uses) and TFX's Vertex executor
# ``google.cloud.aiplatform`` (~7 s), needed only when Vertex AI Training is enabled.
COMMAND_MODULES = ["pipeline.cloud.kubeflow_v2_runner", "pipeline.local.local_runner", "pipeline.local.plan"]
HEAVY = ["tfx.v1", "google.cloud.aiplatform"]


def test_importing_every_module_touches_no_network():
    """Also, in the same interpreter and before anything else: the modules behind ``albert-pipeline
    run/plan/compile``, with the sample DAG built, import none of ``HEAVY``."""
    modules = _modules()
    assert "pipeline.cli" in modules and "trainer.task" in modules and "components.node_shell" in modules
    assert set(COMMAND_MODULES) <= set(modules)
    env = {**os.environ, "PYTHONPATH": REPO, "TF_CPP_MIN_LOG_LEVEL": "3"}
    done = subprocess.run([sys.executable, "-c", _NO_NETWORK, json.dumps(modules), json.dumps(COMMAND_MODULES),
                           json.dumps(HEAVY)], cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, done.stderr[-3000:]
    result = json.loads(lines[-1][len("RESULT "):])
    assert result["attempts"] == [], result["attempts"]
    assert result["failed"] == {}, result["failed"]
    assert result["imported"] == len(modules)
    assert result["heavy_loaded_by_the_commands"] == [], result
