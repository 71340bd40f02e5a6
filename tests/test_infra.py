"""infra/: the image installs the package exactly as CI does (same lock, same command), carries no credentials,
runs as a non-root user, and the Cloud Build image tag flows into `albert-pipeline compile --image`."""
import os
import re
import shlex

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def read(*parts):
    with open(os.path.join(ROOT, *parts)) as f:
        return f.read()


def instructions(text):
    """Dockerfile instructions as (KEYWORD, argument) with continuations joined and comments dropped."""
    lines, current = [], ""
    for raw in text.splitlines():
        line = raw.strip()
        if not current and (not line or line.startswith("#")):
            continue
        if line.startswith("#"):
            continue
        current += (" " if current else "") + line.rstrip("\\").strip()
        if not line.endswith("\\"):
            keyword, _, arg = current.partition(" ")
            lines.append((keyword.upper(), arg.strip()))
            current = ""
    return lines


@pytest.fixture(scope="module")
def dockerfile():
    return instructions(read("infra", "Dockerfile"))


def run_commands(dockerfile):
    return [cmd.strip() for kw, arg in dockerfile if kw == "RUN" for cmd in re.split(r"&&|;", arg)]


def build_env_commands():
    """The uv commands of infra/build_env.sh by phase (the recipe the Dockerfile runs)."""
    text = read("infra", "build_env.sh")
    return {phase: shlex.split(cmd.replace('"${UV:-uv}"', "uv"))
            for phase, cmd in re.findall(r"^\s*(deps|project)\)\s+(.+?)\s*;;", text, re.M)}


def test_dockerfile_installs_with_uv_sync_frozen_from_the_committed_lock(dockerfile):
    """The build stage runs infra/build_env.sh: the lock's dependencies first, then the project as a wheel from the
    whole build context; the image copies only the virtualenv (tests/test_install_check.py builds it and checks
    what it holds)."""
    commands = build_env_commands()
    assert set(commands) == {"deps", "project"}
    for phase, words in commands.items():
        assert words[:3] == ["uv", "sync", "--frozen"], f"{phase}: the image must use the committed lock unchanged"
        assert "--no-editable" in words and "--no-dev" in words, phase
        assert not {"--upgrade", "-U", "--upgrade-package", "--refresh"} & set(words)
    assert "--no-install-project" in commands["deps"] and "--no-install-project" not in commands["project"]
    # No other installer sneaks packages past the lock (pip only installs uv itself).
    for cmd in run_commands(dockerfile):
        if re.search(r"\bpip\b.*\binstall\b", cmd):
            assert re.fullmatch(r"pip install --no-cache-dir \"?uv[^\s\"]*\"?", cmd), cmd
    runs = [arg for kw, arg in dockerfile if kw == "RUN" and "build_env.sh" in arg]
    assert [shlex.split(r)[:2] for r in runs] == [["infra/build_env.sh", "deps"], ["infra/build_env.sh", "project"]]
    # The lock is copied before the dependencies are installed, the whole context (no list of packages) before the
    # project, and the final stage takes the virtualenv, not source folders.
    order = [(kw, arg) for kw, arg in dockerfile if kw in ("COPY", "RUN", "FROM")]
    deps = next(i for i, (kw, arg) in enumerate(order) if kw == "RUN" and "build_env.sh deps" in arg)
    project = next(i for i, (kw, arg) in enumerate(order) if kw == "RUN" and "build_env.sh project" in arg)
    assert any("uv.lock" in arg.split() for kw, arg in order[:deps] if kw == "COPY")
    assert ("COPY", ". .") in order[deps:project]
    final = max(i for i, (kw, _) in enumerate(order) if kw == "FROM")
    final_copies = [arg for kw, arg in order[final:] if kw == "COPY"]
    assert "--from=build /opt/albert-tfx/.venv /opt/albert-tfx/.venv" in final_copies
    for arg in final_copies:
        for package in ("albert", "config", "pipeline", "components", "trainer"):
            assert not arg.startswith(package), f"COPY {arg}: the image installs packages from the wheel only"
    assert any(c == "python -m pipeline.tasks.install_check" for c in run_commands(dockerfile))
    assert "ALBERT_TFX_HOME=/opt/albert-tfx" in read("infra", "Dockerfile")


def test_make_install_and_ci_use_the_same_lock_and_command():
    makefile = read("Makefile")
    install = makefile.split("\ninstall:", 1)[1].split("\n\n", 1)[0]
    assert re.search(r"\$\(UV\) sync --frozen\b", install), "make install must run `uv sync --frozen`"
    ci = read(".ci", "run")
    assert "make test" in ci
    assert re.search(r"^test: install\b", makefile, re.M), "CI's `make test` goes through `make install`"
    # Same resolution knobs: no Python downloads in either place.
    assert "UV_PYTHON_DOWNLOADS := never" in makefile
    assert "UV_PYTHON_DOWNLOADS=never" in read("infra", "Dockerfile")


def test_dockerfile_copies_third_party_the_lock_refers_to(dockerfile):
    pyproject = read("pyproject.toml")
    path_sources = re.findall(r'path\s*=\s*"([^"]+)"', pyproject)
    assert path_sources, "expected the tfdv shim path dependency"
    copies = [arg.split() for kw, arg in dockerfile if kw == "COPY" and not arg.startswith("--from")]
    copied = {src.rstrip("/") for args in copies for src in args[:-1]}
    for source in path_sources:
        assert source.split("/")[0] in copied or source in copied, f"{source} (a uv source) is not copied"
    assert "third_party" in copied


def test_image_python_and_beam_match_the_lock(dockerfile):
    lock = read("uv.lock")
    beam_version = re.search(r'\[\[package\]\]\nname = "apache-beam"\nversion = "([^"]+)"', lock).group(1)
    args = dict(arg.split("=", 1) for kw, arg in dockerfile if kw == "ARG" and "=" in arg)
    assert args["BEAM_VERSION"] == beam_version
    requires = re.search(r'requires-python = "([^"]+)"', read("pyproject.toml")).group(1)
    assert ">=3.11" in requires and args["BASE_IMAGE"].startswith("python:3.11")
    froms = [arg for kw, arg in dockerfile if kw == "FROM"]
    assert froms[0].startswith("apache/beam_python3.11_sdk:${BEAM_VERSION}")
    assert any(arg.startswith("--from=beam_sdk /opt/apache/beam") for kw, arg in dockerfile if kw == "COPY")
    # Dataflow / portable runners start the SDK harness through the Beam boot program.
    assert [arg for kw, arg in dockerfile if kw == "ENTRYPOINT"] == ['["/opt/apache/beam/boot"]']


def test_the_same_image_serves_with_the_command_deploy_sets(dockerfile):
    """No second image: Vertex AI starts `albert-pipeline serve` (the container spec's command overrides the Beam
    ENTRYPOINT), the console script the image's virtualenv installs, on the port the image exposes."""
    from pipeline.serving.serving_instances import DEFAULT_PORT
    from pipeline.serving.vertex_serving import SERVE_COMMAND

    assert SERVE_COMMAND == ["albert-pipeline", "serve"]
    assert re.search(r'^albert-pipeline = "pipeline\.cli:main"$', read("pyproject.toml"), re.M)
    assert [arg for kw, arg in dockerfile if kw == "EXPOSE"] == [str(DEFAULT_PORT)]
    assert sum(kw == "FROM" for kw, _ in dockerfile) == 3  # beam_sdk, build, the image: one image comes out


def test_image_runs_as_a_non_root_user(dockerfile):
    users = [arg for kw, arg in dockerfile if kw == "USER"]
    assert users and users[-1] not in ("root", "0", "0:0")
    last_user = max(i for i, (kw, _) in enumerate(dockerfile) if kw == "USER")
    assert all(kw not in ("RUN", "COPY", "ADD") for kw, _ in dockerfile[last_user + 1:]), \
        "nothing may run as root after switching user"
    assert any("useradd" in c and users[-1] in c for c in run_commands(dockerfile))


def test_no_credentials_in_the_image(dockerfile):
    text = read("infra", "Dockerfile")
    for kw, arg in dockerfile:
        assert "GOOGLE_APPLICATION_CREDENTIALS" not in arg, (kw, arg)
        assert not re.search(r"(?i)(secret|password|token|api[_-]?key)\s*=", arg), (kw, arg)
        if kw in ("COPY", "ADD"):
            assert not re.search(r"(?i)(\.json|\.pem|\.p12|\.key|credentials|\.config/gcloud|\.ssh|\.env)\b",
                                 arg.replace("environments.yaml", "")), f"{kw} {arg} copies a credential-like file"
        assert kw != "ADD", "ADD can fetch remote content; use COPY"
    assert "gcloud auth" not in text
    ignore = read("infra", "Dockerfile.dockerignore")
    for pattern in (".venv", "outputs", "**/*credentials*.json", "**/*.pem", "**/.config/gcloud"):
        assert pattern in ignore.splitlines()


def test_cloud_build_builds_the_dockerfile_and_compiles_with_the_same_image():
    build = yaml.safe_load(read("infra", "cloudbuild.yaml"))
    steps = {step["id"]: step for step in build["steps"]}
    docker = steps["build"]
    assert docker["name"] == "gcr.io/cloud-builders/docker"
    assert docker["args"][:3] == ["build", "-f", "infra/Dockerfile"]
    assert docker["args"][docker["args"].index("-t") + 1] == "${_IMAGE}"
    assert build["images"] == ["${_IMAGE}"]
    # The freshly built image compiles the spec, and names itself as every executor's image.
    compile_step = steps["compile"]
    assert compile_step["name"] == "${_IMAGE}" and compile_step["entrypoint"] == "albert-pipeline"
    args = compile_step["args"]
    assert args[0] == "compile" and args[args.index("--image") + 1] == "${_IMAGE}"
    assert args[args.index("--output") + 1].startswith("/workspace/")
    subs = build["substitutions"]
    assert subs["_IMAGE"] == "${_REGION}-docker.pkg.dev/${PROJECT_ID}/${_REPOSITORY}/albert-tfx:${_TAG}"
    assert build["options"]["dynamicSubstitutions"] is True  # _IMAGE refers to other substitutions
    assert list(steps).index("build") < list(steps).index("compile") < list(steps).index("upload-spec")


def test_compile_cli_takes_image_and_beam_args():
    """The CLI flags that infra/cloudbuild.yaml and docs/running-at-scale.md use exist."""
    from pipeline.cli import build_parser

    args = build_parser().parse_args(["compile", "--preset", "sample", "--image", "reg/albert:1",
                                      "--pipeline-root", "gs://b/root", "--output", "/workspace/spec.json",
                                      "--beam-arg=--runner=DataflowRunner"])  # `=` form: the value starts with --
    assert (args.image, args.pipeline_root, args.beam_arg) == ("reg/albert:1", "gs://b/root",
                                                                 ["--runner=DataflowRunner"])


def test_running_at_scale_documents_the_walkthrough_and_iam():
    text = read("docs", "running-at-scale.md")
    for needle in ("gcloud builds submit --config infra/cloudbuild.yaml", "albert-pipeline compile",
                   "albert-pipeline submit", "albert-pipeline schedule", "kfp --endpoint", "run create",
                   "roles/aiplatform.user", "roles/storage.objectAdmin", "roles/dataflow.worker",
                   "roles/artifactregistry.reader", "roles/iam.serviceAccountUser", "pipeline_root",
                   "report.md", "ML Metadata", "infra/environments.yaml"):
        assert needle in text, needle
