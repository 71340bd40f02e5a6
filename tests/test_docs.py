"""Docs that run: every command line in the ```bash blocks of README.md and docs/**/*.md is executed here.

How each kind of line is executed:

* ``albert-pipeline …`` (with or without ``.venv/bin/``): the real CLI (``pipeline.cli.run_cli``) in this process, in a
  temporary folder, with no network (sockets refuse to connect) and anonymous Google credentials; Vertex AI requests
  are recorded at the gapic RPC methods and KFP requests at the HTTP pool (the fixtures of ``test_cloud.py``), and
  the test asserts what each command would send. ``compile`` really compiles; ``submit``/``schedule`` read what it
  wrote. Documentation placeholders are given values: ``P`` → ``albert-proj``, ``B``/``BUCKET`` → ``albert-bkt``,
  ``SCHEDULE_ID`` → ``42``, ``$IMAGE`` → a registry path, ``$(git rev-parse --short HEAD)`` → ``abc1234``;
  optional ``[--flag value]`` parts are kept.
* ``albert-pipeline run …`` (minutes to days): parsed by the real parser and its configuration built and validated
  (``--config FILE`` gets a small YAML file); the run itself is ``tests/test_cli_run.py`` (the sample preset through
  the CLI) and ``tests/test_pipeline_e2e.py``.
* ``make sample`` / ``make test``: ``make -n`` must show the command that is tested elsewhere (``run --preset sample``:
  the shared sample run of tests/conftest.py, and ``make sample`` itself in test_cli_run.py; ``pytest tests`` is CI
  itself).
* ``export``/assignments: applied to the environment of the following lines.
* ``.venv/bin/python -m benchmarks.NAME …`` or ``-m experiments.NAME …``: measurements of minutes to hours (kept out of CI on purpose); the script's
  real ``--help`` runs and every flag the line uses must be one it accepts.
* ``gcloud``, ``docker``, ``kubectl``, ``kfp``: cloud CLIs this machine does not have and a test must not call; each
  block is checked by ``bash -n`` and the files and substitutions the lines name must exist.
"""
import json
import os
import re
import shlex
import subprocess

import pytest

from test_cloud import kfp_client, no_network, vertex_rpcs  # noqa: F401  (fixtures)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = ("README.md", *sorted(
    os.path.relpath(os.path.join(d, f), REPO) for d, _, files in os.walk(os.path.join(REPO, "docs"))
    for f in files if f.endswith(".md")))
EXTERNAL = ("gcloud", "docker", "kubectl", "kfp", "for", "done", "DOCKER_BUILDKIT=1")
PLACEHOLDERS = [(r"\bgs://B/", "gs://albert-bkt/"), (r"\bgs://BUCKET/", "gs://albert-bkt/"), (r"^P$", "albert-proj"),
                (r"^SCHEDULE_ID$", "42")]


def bash_blocks(path):
    with open(os.path.join(REPO, path), encoding="utf-8") as f:
        return re.findall(r"```bash\n(.*?)```", f.read(), re.S)


def command_lines(block):
    """Logical lines: continuation backslashes joined, comments and blank lines dropped."""
    text = re.sub(r"\\\n\s*", " ", block).replace("$(git rev-parse --short HEAD)", "abc1234")
    out = []
    for line in text.splitlines():
        words = shlex.split(line, comments=True)
        if words:
            out.append((line, words))
    return out


def all_commands():
    return [(doc, line, words) for doc in DOCS for block in bash_blocks(doc) for line, words in command_lines(block)]


def _substitute(words, env):
    out = []
    for w in words:
        for pattern, value in PLACEHOLDERS:
            w = re.sub(pattern, value, w)
        w = re.sub(r"\$\{?([A-Z_]+)\}?", lambda m: env.get(m.group(1), m.group(0)), w)
        out.append(w)
    # "[--display-name albert-tfx-vertex-dev]" → the optional part, kept
    return [w.strip("[]") for w in out]


def test_every_bash_block_is_valid_shell():
    for doc in DOCS:
        for block in bash_blocks(doc):
            done = subprocess.run(["bash", "-n"], input=block, capture_output=True, text=True)
            assert done.returncode == 0, (doc, block, done.stderr)


def test_every_command_line_is_of_a_kind_this_test_runs():
    kinds = {"albert-pipeline", ".venv/bin/albert-pipeline", "make", "export"} | set(EXTERNAL)
    for doc, line, words in all_commands():
        first = words[0]
        assert first in kinds or re.fullmatch(r"[A-Z_]+=.*", first) or _benchmark_script(words), (doc, line)


def _benchmark_script(words):
    """``[VAR=… ]* .venv/bin/python -m benchmarks.X|experiments.X …`` → (module, its arguments), else None."""
    rest = [w for w in words if not re.fullmatch(r"[A-Z_]+=.*", w)]
    if len(rest) >= 3 and rest[:2] == [".venv/bin/python", "-m"] and re.fullmatch(r"(benchmarks|experiments)\.\w+",
                                                                                 rest[2]):
        return rest[2], rest[3:]
    return None


def test_benchmark_lines_use_flags_their_script_accepts():
    import sys

    seen = 0
    for doc, line, words in all_commands():
        found = _benchmark_script(words)
        if not found:
            continue
        script, args = found
        done = subprocess.run([sys.executable, "-m", script, "--help"], cwd=REPO, capture_output=True, text=True,
                              timeout=300, env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
        assert done.returncode == 0, (doc, line, done.stderr[-2000:])
        for flag in (a.split("=", 1)[0] for a in args if a.startswith("--")):
            assert re.search(rf"(^|[\s,\[]){re.escape(flag)}\b", done.stdout), (doc, line, flag)
        seen += 1
    assert seen >= 1


def test_make_targets_run_the_tested_commands():
    made = {w[1] for _, _, w in all_commands() if w[0] == "make"}
    assert made == {"sample", "test"}
    sample = subprocess.run(["make", "-n", "sample"], cwd=REPO, capture_output=True, text=True)
    assert ".venv/bin/albert-pipeline run --preset sample --output-dir outputs/sample" in sample.stdout
    test = subprocess.run(["make", "-n", "test"], cwd=REPO, capture_output=True, text=True)
    assert ".venv/bin/python -m pytest tests -q" in test.stdout


def test_external_cloud_cli_lines_name_files_that_exist():
    with open(os.path.join(REPO, "infra", "cloudbuild.yaml"), encoding="utf-8") as f:
        cloudbuild = f.read()
    for doc, line, words in all_commands():
        if words[0] == "gcloud" and words[1:3] == ["builds", "submit"]:
            config = words[words.index("--config") + 1]
            assert os.path.isfile(os.path.join(REPO, config)), line
            subs = [w for w in words if w.startswith("--substitutions=")]
            for item in subs[0].split("=", 1)[1].split(",") if subs else []:
                assert "${%s}" % item.split("=")[0] in cloudbuild, (item, line)
        if "docker" in words and "build" in words:
            assert os.path.isfile(os.path.join(REPO, words[words.index("-f") + 1])), line


@pytest.fixture
def docs_env(monkeypatch, tmp_path):
    for key in ("ALBERT_GCP_REGION", "ALBERT_IMAGE_TAG", "ALBERT_KFP_ENDPOINT", "ALBERT_KFP_PIPELINE_ROOT",
                "ALBERT_TFX_ENVIRONMENTS", "ALBERT_GCP_PROJECT", "ALBERT_GCS_BUCKET", "ALBERT_IMAGE"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("ALBERT_TFX_LOG_DIR", str(tmp_path / "logs"))
    monkeypatch.setenv("IMAGE", "europe-west4-docker.pkg.dev/albert-proj/albert/albert-tfx:abc1234")
    monkeypatch.setenv("ALBERT_IMAGE", "registry.example/albert-tfx:abc1234")  # kfp-flink's image
    monkeypatch.chdir(tmp_path)
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import aiplatform

    monkeypatch.setattr(aiplatform.initializer.global_config, "_credentials", AnonymousCredentials())
    corpus = (f"corpus:\n  wikipedia_dir: {REPO}/data/sample/wikipedia\n  books_dir: {REPO}/data/sample/books\n"
              "  min_doc_chars: 300\n")  # what a user's corpus file holds: where the raw text is
    (tmp_path / "my_corpus.yaml").write_text(corpus)
    (tmp_path / "corpus.yaml").write_text(corpus)
    (tmp_path / "data").symlink_to(os.path.join(REPO, "data"))  # the bundled configs, as from the checkout's root
    return tmp_path


def test_every_documented_albert_pipeline_line_runs(docs_env, vertex_rpcs, kfp_client, capsys):  # noqa: F811
    from pipeline import cli
    from pipeline.settings.resolve import config_from_args

    _, pool = kfp_client
    env = dict(os.environ)
    ran = []
    for doc, line, words in all_commands():
        if words[0] == "export" or re.fullmatch(r"[A-Z_]+=[^ ]*", words[0]) and len(words) == 1:
            for item in words[1:] if words[0] == "export" else words:
                key, value = item.split("=", 1)
                value = _substitute([value], env)[0]
                env[key] = value
                os.environ[key] = value
            continue
        if words[0] not in ("albert-pipeline", ".venv/bin/albert-pipeline"):
            continue
        argv = _substitute(words[1:], env)
        if argv[0] == "schedule" and "outputs/albert_paper.json" in argv and not os.path.exists(argv[-1]):
            # The paper spec the docs schedule is compiled like the dev one.
            assert cli.run_cli(["compile", "--env", "vertex-paper", "--output", "outputs/albert_paper.json"]) == 0
        if argv[0] == "run":  # long: configuration only; the run is test_cli_run.py / test_pipeline_e2e.py
            args = cli.build_parser().parse_args(argv)
            config = config_from_args(args)
            ran.append((argv, config))
            continue
        if argv[0] == "ingest" and any(a.startswith("--beam-arg=--runner=") for a in argv):
            # A Dataflow job: its parsed settings and Beam options only; the job is tests/test_ingest.py (gs:// too).
            from components.corpus.ingest_tool import pipeline_options

            args = cli.build_parser().parse_args(argv)
            ran.append((argv, config_from_args(args), pipeline_options(args.workers, args.beam_arg).get_all_options()))
            continue
        if argv[0] == "make-pretraining-data" and not os.path.exists(argv[argv.index("--input") + 1]):
            # Documents an earlier line of the block downloads from a bucket: configuration only (the command is
            # tests/test_cli_errors.py, tests/test_datagen_memory.py).
            args = cli.build_parser().parse_args(argv)
            ran.append((argv, config_from_args(args)))
            continue
        calls_before = len(vertex_rpcs)
        capsys.readouterr()
        code = cli.run_cli(argv)
        out, err = capsys.readouterr()
        assert code == 0, (doc, line, err[-2000:])
        ran.append((argv, out, vertex_rpcs[calls_before:]))

    by_cmd = {}
    for item in ran:
        by_cmd.setdefault(" ".join(item[0][:2]), []).append(item)
    # docs/architecture.md: the two run examples build the configurations they describe.
    runs = [item for key, items in by_cmd.items() if key.startswith("run") for item in items]
    assert [c.train.num_train_steps for _, c in runs[:1]] == [500] and runs[0][1].datagen.sop_mode == "pure"
    assert runs[1][1].preset == "paper" and runs[1][1].corpus.min_doc_chars == 300
    # docs/running-at-scale.md: compile with --beam-arg writes the Dataflow args into the spec.
    paper_spec = json.load(open("outputs/albert_pipeline.json"))
    args = [a for e in paper_spec["pipelineSpec"]["deploymentSpec"]["executors"].values() if "container" in e
            for a in e["container"].get("args", [])]
    assert "--runner=DataflowRunner" in args and "--temp_location=gs://albert-bkt/tmp" in args
    # docs/running-at-scale.md §6: ingest on Dataflow replaces the local runner with the documented options;
    # datagen on one VM.
    (argv, config, options), = by_cmd["ingest --wikipedia"]
    assert (options["runner"], options["region"], options["max_num_workers"]) == ("DataflowRunner", "europe-west4", 32)
    assert options["temp_location"] == "gs://albert-bkt/albert-tfx/dataflow/temp" and "direct_num_workers" not in [
        a.split("=")[0].lstrip("-") for a in argv]
    assert options["sdk_container_image"] == os.environ["IMAGE"] and config.corpus.num_shards == 256
    assert argv[argv.index("--output") + 1] == "gs://albert-bkt/documents/enwiki"
    (_, datagen), = [item for item in by_cmd["make-pretraining-data --input"] if "enwiki" in item[0]]
    assert (datagen.datagen.max_seq_length, datagen.datagen.num_shards) == (512, 1024)
    # docs/running-at-scale.md §2: env show (the documented form) resolves vertex-dev.
    shown = json.loads(by_cmd["env show"][0][1])
    assert shown["project"] == "my-albert-project" and shown["name"] == "vertex-dev"
    # compile --env vertex-dev wrote a spec whose executors run the environment's image.
    spec = json.load(open("outputs/albert_dev.json"))
    executors = spec["pipelineSpec"]["deploymentSpec"]["executors"]
    assert {e["container"]["image"] for e in executors.values() if "container" in e} == {
        "europe-west4-docker.pkg.dev/my-albert-project/albert/albert-tfx:abc1234"}
    # submit --env vertex-dev: one CreatePipelineJob with the documented parameter, root and account.
    submits = [rpcs for argv, _, rpcs in by_cmd["submit --env"] if "vertex-dev" in argv]
    job = [kw for n, kw in submits[0] if n == "create_pipeline_job"][0]["pipeline_job"]
    # Schema 2.1: the job carries the compiled values (the documented line passes no --parameters).
    assert dict(job.runtime_config.parameter_values) == spec["runtimeConfig"]["parameterValues"]
    assert len(job.runtime_config.parameters) == 0
    assert job.display_name == "albert-tfx-vertex-dev"
    assert job.runtime_config.gcs_output_directory == (
        "gs://my-albert-project-albert-tfx/albert-tfx/vertex-dev/pipeline_root")
    assert job.service_account == "albert-pipelines@my-albert-project.iam.gserviceaccount.com"
    # submit without an environment: the flags' project, root, account and label.
    flags = [rpcs for argv, _, rpcs in by_cmd["submit --spec"]][0]
    job = [kw for n, kw in flags if n == "create_pipeline_job"][0]
    assert job["parent"] == "projects/albert-proj/locations/europe-west4"
    assert job["pipeline_job"].labels["env"] == "dev"
    assert job["pipeline_job"].runtime_config.gcs_output_directory == (
        "gs://albert-bkt/albert-tfx/vertex-dev/pipeline_root")
    # submit --env kfp-flink: POST /apis/v2beta1/runs to the environment's endpoint, and the .kfp.yaml package
    # that the documented `kfp run create --package-file` line takes.
    runs_posted = [r for r in pool.requests if r["method"] == "POST" and r["url"].endswith("/apis/v2beta1/runs")]
    assert len(runs_posted) == 1 and runs_posted[0]["url"].startswith("http://ml-pipeline-ui.kubeflow:80/")
    assert os.path.isfile("outputs/albert_dev.kfp.yaml")
    # schedule: vertex-paper's cron and concurrency from infra/environments.yaml, then the documented flags.
    created = [kw["schedule"] for argv, _, rpcs in by_cmd["schedule --env"] for n, kw in rpcs if n == "create_schedule"]
    assert created[0].cron == "TZ=UTC 0 2 1 * *" and created[0].max_concurrent_run_count == 1
    assert created[1].cron == "TZ=Europe/Paris 0 3 * * 1" and created[1].max_run_count == 12
    # schedules list | pause | resume --catch-up
    names = [n for argv, _, rpcs in by_cmd["schedules list"] + by_cmd["schedules pause"] + by_cmd["schedules resume"]
             for n, _ in rpcs if n != "get_schedule"]  # the SDK reads the schedule back after each change
    assert names == ["list_schedules", "pause_schedule", "resume_schedule"]
    resume = [kw for _, _, rpcs in by_cmd["schedules resume"] for n, kw in rpcs if n == "resume_schedule"][0]
    assert resume == {"name": "projects/my-albert-project/locations/europe-west4/schedules/42", "catch_up": True}
