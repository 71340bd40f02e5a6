"""``albert-pipeline``: the one command-line entry point.

    albert-pipeline run [--preset sample|paper] [--config FILE.yaml] [--set section.key=value ...] [--output-dir D]
                        [--wait [SECONDS]]   (one run per output folder: pipeline/local/run_lock.py)
    albert-pipeline plan [same flags as run]   (CACHED / WILL RUN per node, and why; runs nothing)
    albert-pipeline compile --output spec.json --image IMAGE [...]
    albert-pipeline rehearse --spec spec.json [--output-dir D] [--parameters JSON] [--python ENV/bin/python] [--cold]
    albert-pipeline submit  --spec spec.json (--endpoint HOST | --project P --region R --pipeline-root gs://...)
    albert-pipeline schedule --spec spec.json --cron "0 3 * * 1" --project P --region R --pipeline-root gs://...
    albert-pipeline compile|submit|schedule --env vertex-dev ...   (environments in infra/environments.yaml)
    albert-pipeline env [show] [NAME] | schedules list|pause|resume --env NAME
    albert-pipeline make-pretraining-data --input DOCS --vocab FILE --output DIR [--workers N] [--set datagen.x=y]
    albert-pipeline ingest --wikipedia DIR --books DIR --output DIR [--workers N] [--set corpus.x=y]
    albert-pipeline pretrain --examples DIR --output DIR [--set train.num_train_steps=N ...]
    albert-pipeline model-info [--size albert-base] [-E 128] [-H 768] [-L 12] [--sharing all] [--groups 1]
    albert-pipeline convert hf-to-albert|albert-to-hf|tf1-to-albert SRC DST
    albert-pipeline convert albert-to-onnx|albert-to-litert SRC DST [--with-mlm-head]
    albert-pipeline score squad|squad2|cmrc2018|glue|race DATASET PREDICTIONS [--task T] [--na-prob F]
    albert-pipeline serve --model DIR [--port 8080]   (Vertex AI's custom-container contract; docs/serving.md)
    albert-pipeline predict fill-mask|embed|classify|answer|choose --model DIR [TEXT ...]   (JSON lines out)
    albert-pipeline deploy --model gs://DIR --image IMAGE --vertex-model projects/P/locations/R/models/M [--dry-run]

Heavy imports (TFX costs ~30 s) happen inside the subcommands that need them. Results are JSON on stdout; progress
and errors are lines on stderr (``pipeline/local/logs.py``). A bad input or setting ends with one line naming the file or
setting, exit code 2, and the path of the log file that holds the full traceback; nothing is left under the output.
A span the data gate stops (``DataGateError``) adds one line per failed check after that line.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import re
import sys
import traceback
from typing import List, Optional

from components.corpus.corpus_config import BOOKS_GLOBS, WIKIPEDIA_FORMATS, WIKIPEDIA_GLOBS
from config.errors import InputError, MissingInputError  # noqa: F401 (pipeline.cli.InputError: the same class)
from config.errors import UserError, user_error_names
from pipeline import cli_tools
from pipeline.settings.configs import ConfigError, LATEST_BLESSED, PRESETS, build_config
from pipeline.settings.continuation import local_choice
from pipeline.settings.resolve import built_from_args, config_from_args, resolve_config
from trainer import gc_tuning

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

LOG = logging.getLogger("albert_tfx.cli")


def _add_config_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--preset", default="sample", choices=sorted(PRESETS),
                   help="configuration preset (paper = paper-v1, the Table 2 setting; paper-v2 = the v2 release's)")
    p.add_argument("--config", help="YAML file merged over the preset (parsed with yaml.safe_load)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="SECTION.KEY=VALUE",
                   help="override one value, e.g. --set train.num_train_steps=200 (repeatable)")


def cmd_run(args) -> int:
    from pipeline.local import run_lock  # lazy: socket (0.004 s)

    built = built_from_args(args, output_dir=args.output_dir)
    wait = _wait_seconds(args.wait)
    # The store's lock first, then what exists: a run that waited (--wait) resolves the spans and the latest
    # blessed model as they are when it starts, after the run it waited for; one that is refused has imported
    # nothing heavy (TensorFlow, TFX) and read nothing.
    metadata_path = os.path.abspath(built.metadata_path)
    new_folder = not os.path.exists(os.path.dirname(metadata_path))
    try:
        with run_lock.exclusive_run(metadata_path, wait=wait):
            config = resolve_config(built, local=True)
            from pipeline.local.local_runner import run_locked, run_release, run_report  # lazy: tensorflow, apache_beam, tfx (6.1 s)

            paths = run_locked(config, runner=args.runner)
    except BaseException:
        if new_folder:  # a run that stopped before writing anything leaves no folder behind (only its lock file)
            run_lock.remove_if_alone(metadata_path)
        raise
    # The report and the release of the run this process made (its pipeline_run context), never a newer run's.
    report_dir = run_report(paths["metadata_path"], paths["run_id"])
    release = run_release(paths["metadata_path"], paths["run_id"])
    print(json.dumps({"pipeline_root": paths["pipeline_root"], "metadata_path": paths["metadata_path"],
                      "report": os.path.join(report_dir, "report.md"),
                      "report_html": os.path.join(report_dir, "report.html"), "release": release}, indent=2))
    LOG.info("Report: %s", os.path.join(report_dir, "report.md"))
    if release:
        LOG.info("Release: %s%s: %s%s", "BLESSED" if release["blessed"] else "NOT_BLESSED",
                 " (forced)" if release["forced"] else "", release["reason"],
                 f"; version {release['version']}: {release['path']}" if "version" in release else "; not pushed")
    return 0


def _wait_seconds(value: Optional[float]) -> float:
    """``run --wait [SECONDS]``: absent 0 (refuse at once), bare ``--wait`` without limit, else that many seconds."""
    if value is None:
        return 0.0
    if not value >= 0:  # NaN too
        raise ConfigError(f"--wait must be a number of seconds >= 0, got {value:g}")
    return value


def cmd_releases(args) -> int:
    """The pushed versions of a destination (default: the config's), oldest first, with scores and reasons."""
    destination = args.destination or config_from_args(args, output_dir=args.output_dir).push_destination
    from components.release.versions import is_destination, list_versions  # lazy: tensorflow (2.8 s)

    if not is_destination(destination):
        raise InputError(f"{destination}: no such release destination (nothing was pushed there)")
    versions = list_versions(destination)
    for v in versions:
        scores = ", ".join(f"{task} {score:.2f}" for task, score in sorted((v.get("scores") or {}).items()))
        registered = f"  registry version {v['registry']['version_id']}" if v["registry"] else ""
        print(f"{v['version']:>4}  {v.get('pushed_at', '')[:19]}  {'forced' if v.get('forced') else 'blessed'}  "
              f"{scores or 'no scores'}  ({v.get('reason')}){registered}", file=sys.stderr)
    print(json.dumps({"destination": destination,
                      "versions": [{k: v.get(k) for k in ("version", "path", "pushed_at", "forced", "reason",
                                                          "scores", "model", "baseline", "registry")}
                                   for v in versions]},
                     indent=2, sort_keys=True))
    return 0


def cmd_plan(args) -> int:
    """Which nodes ``run`` with the same flags would take from the cache, and why the others would run."""
    config = config_from_args(args, output_dir=args.output_dir, local=True)
    from pipeline.local.plan import format_plan, plan  # lazy: pipeline.local.plan (0.002 s)

    rows = plan(config)
    print(format_plan(rows), file=sys.stderr)
    out = {"metadata_path": config.metadata_path, "pipeline_root": config.pipeline_root,
           "nodes": [r.to_dict() for r in rows]}
    base = _planned_base(args, config)
    if base is not None:
        print(f"Trainer base (train.init_from={base['setting']}): {base['base']}: {base['why']}", file=sys.stderr)
        out["init_from"] = base
    print(json.dumps(out, indent=2))
    return 0


def _planned_base(args, config):
    """With ``train.init_from=latest_blessed``: {setting, base, why}, what the run's Trainer would start from and
    why (:func:`pipeline.settings.continuation.local_choice`, the rule the run resolves it with); else None."""
    if build_config(args.preset, args.config, args.overrides).train.init_from != LATEST_BLESSED:
        return None

    _, why = local_choice(config)
    return {"setting": LATEST_BLESSED, "base": config.train.init_from, "why": why}


def cmd_compile(args) -> int:
    if args.env:
        from pipeline.cloud.cli_env import cmd_compile_env  # lazy: on one branch; yaml, pipeline.cloud.cli_env (0.02 s)

        return cmd_compile_env(args)
    config = config_from_args(args, pipeline_root=args.pipeline_root, beam_args=args.beam_arg or None)
    from pipeline.cloud.kubeflow_v2_runner import compile_pipeline, spec_summary  # lazy: tensorflow, apache_beam, tfx (6.1 s)

    compile_pipeline(config, args.output, image=args.image)
    print(json.dumps({"spec": args.output, **spec_summary(args.output)}, indent=2))
    return 0


def cmd_rehearse(args) -> int:
    from pipeline.rehearsal import rehearsal  # lazy: pipeline.rehearsal.rehearsal, subprocess, tempfile, uuid (0.02 s)
    from pipeline.cloud.deploy import parse_parameters  # lazy: yaml, pipeline.cloud.deploy (0.02 s)

    try:
        summary = rehearsal.rehearse(args.spec, args.output_dir, parameter_values=parse_parameters(args.parameters),
                                     python=args.python, cold=args.cold,
                                     log=lambda line: print(f"albert-pipeline rehearse: {line}", file=sys.stderr))
    except rehearsal.TaskFailed as exc:
        print(f"albert-pipeline rehearse: failed: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(summary, indent=2, sort_keys=True))
    return 0


def _hint_rehearsal(spec_path: str) -> None:
    """A hint, not a gate: `submit`/`schedule` of a spec that never passed `rehearse` on this machine. Printed after
    the command succeeded, so a refused submission still ends with its one error line."""
    from pipeline.rehearsal import rehearsal  # lazy: pipeline.rehearsal.rehearsal, subprocess, tempfile, uuid (0.02 s)

    if os.path.exists(spec_path) and not rehearsal.was_rehearsed(spec_path):
        print(f"albert-pipeline: hint: {spec_path} has not been rehearsed; `albert-pipeline rehearse --spec "
              f"{spec_path}` runs its tasks here the way the backend starts them", file=sys.stderr)


def _deployment(args):
    """(the target of ``submit``/``schedule``, the environment it came from or None): from ``--env`` or from the
    flags, one :class:`pipeline.cloud.deploy.Deployment` either way."""
    from pipeline.cloud import deploy  # lazy: yaml, pipeline.cloud.deploy (0.02 s)

    if not args.env:
        return deploy.from_flags(args), None
    from pipeline.cloud.cli_env import env_from_args  # lazy: yaml, pipeline.cloud.cli_env (0.02 s)

    given = [f"--{name.replace('_', '-')}" for name in TARGET_FLAGS if getattr(args, name, None)]
    if given:
        raise deploy.CloudConfigError(f"{', '.join(given)} cannot be combined with --env {args.env}: the "
                                      f"environment sets the target (change a field with --env-set FIELD=VALUE)")
    env = env_from_args(args)
    return deploy.from_environment(env, args.run_name, deploy.parse_parameters(args.parameters),
                                   enable_caching=False if args.no_cache else None), env


# The flags that name a target; with --env the environment names it (see `_deployment`).
TARGET_FLAGS = ("project", "region", "pipeline_root", "service_account", "network", "label", "endpoint", "experiment")


def cmd_submit(args) -> int:
    from pipeline.cloud import deploy  # lazy: yaml, pipeline.cloud.deploy (0.02 s)

    deployment, _ = _deployment(args)
    result = deploy.submit(deployment, args.spec)
    if deployment.kind == "kfp":
        print(f"submitted KFP run: {getattr(result, 'run_id', result)}")
    else:
        print(f"submitted Vertex AI PipelineJob: {result.resource_name}")
    return 0


def cmd_schedule(args) -> int:
    from pipeline.cloud import submit as cloud  # lazy: pipeline.cloud.submit (0.003 s)
    from pipeline.cloud import deploy  # lazy: yaml, pipeline.cloud.deploy (0.02 s)

    deployment, env = _deployment(args)
    if env is not None:
        spec = env.schedule_spec(deployment.run_name, cron=args.cron, max_concurrent_run_count=args.max_concurrent,
                                 max_run_count=args.max_runs, start_time=args.start_time, end_time=args.end_time)
    else:
        if not args.cron:
            raise cloud.CloudConfigError("schedule needs --cron (or --env with a schedule.cron)")
        spec = cloud.ScheduleSpec(cron=args.cron, display_name=deployment.run_name,
                                  max_concurrent_run_count=args.max_concurrent or 1, max_run_count=args.max_runs,
                                  start_time=args.start_time, end_time=args.end_time)
    schedule, _ = deploy.schedule(deployment, args.spec, spec)
    print(f"created schedule: {schedule.resource_name}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="albert-pipeline", description=__doc__.split("\n")[0])
    parser.add_argument("--log-file", help="where the full log (with tracebacks) goes; default: "
                                           "$ALBERT_TFX_LOG_DIR or the temp folder, `run`: OUTPUT_DIR/logs")
    parser.add_argument("-v", "--verbose", action="store_true", help="every library's INFO lines on stderr too")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("run", help="run the whole DAG locally (LocalDagRunner or BeamDagRunner, sqlite MLMD)")
    _add_config_args(p)
    p.add_argument("--runner", default="local", choices=["local", "beam"])
    p.add_argument("--output-dir", help="put the pipeline root and the MLMD sqlite here (default: the config's "
                                        "pipeline_root and metadata_path)")
    p.add_argument("--wait", type=float, nargs="?", const=float("inf"), metavar="SECONDS",
                   help="while another run holds the output folder, wait for it (up to SECONDS, or as long as it "
                        "takes) instead of refusing at once")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("plan", help="list each node as CACHED or WILL RUN (and why) for `run` with the same flags; "
                                    "runs nothing")
    _add_config_args(p)
    p.add_argument("--output-dir", help="as for run")
    p.set_defaults(func=cmd_plan)

    p = sub.add_parser("releases", help="list the pushed model versions (scores, blessing reasons) of a release "
                                        "destination")
    _add_config_args(p)
    p.add_argument("--output-dir", help="as for run (the default destination is <pipeline root>/releases)")
    p.add_argument("--destination", help="a release destination (folder or gs://); default: the config's "
                                         "release.push_destination")
    p.set_defaults(func=cmd_releases)

    p = sub.add_parser("compile", help="compile to a Kubeflow Pipelines v2 / Vertex AI pipeline spec (JSON)")
    _add_config_args(p)
    p.add_argument("--output", default="outputs/albert_pipeline.json")
    p.add_argument("--image", default=None, help="container image with this package installed")
    p.add_argument("--pipeline-root", help="gs:// root recorded in the spec")
    p.add_argument("--beam-arg", action="append",
                   help="Beam arg for the Beam components; write --beam-arg=--runner=DataflowRunner (with '=')")
    from pipeline.cloud.cli_env import add_cli_subcommands, add_env_arguments  # lazy: yaml, pipeline.cloud.cli_env (0.02 s)

    add_env_arguments(p)
    p.set_defaults(func=cmd_compile)

    p = sub.add_parser("rehearse", help="run a compiled spec's tasks here, the way Vertex AI / Kubeflow Pipelines "
                                        "start them (before submit)")
    p.add_argument("--spec", required=True, help="compiled pipeline spec (compile's JSON or a KFP .yaml package)")
    p.add_argument("--output-dir", default=os.path.join("outputs", "rehearsal"),
                   help="the rehearsal's pipeline root goes under D/pipeline_root")
    p.add_argument("--parameters", help="JSON object of pipeline parameter values (e.g. local data folders)")
    p.add_argument("--python", help="interpreter of the environment the tasks run in (default: this one's); "
                                    "e.g. a virtualenv built like the image by infra/build_env.sh")
    p.add_argument("--cold", action="store_true",
                   help="start each task as a new interpreter, as a backend's container does, instead of forking it "
                        "from one that imported TFX's entrypoint once (pipeline/tasks/task_launcher.py; slower)")
    p.set_defaults(func=cmd_rehearse)

    for name, func, helptext in (("submit", cmd_submit, "submit a compiled spec to Vertex AI or a KFP endpoint"),
                                 ("schedule", cmd_schedule, "create a Vertex AI cron schedule for a compiled spec")):
        p = sub.add_parser(name, help=helptext)
        p.add_argument("--spec", required=True, help="compiled pipeline spec JSON")
        p.add_argument("--run-name", help="display name (default: albert-tfx, or albert-tfx-ENV with --env)")
        p.add_argument("--parameters", help="JSON object of pipeline parameter values")
        p.add_argument("--no-cache", action="store_true", help="run every task even where the backend has a cached "
                                                               "result (default: the environment's enable_caching, "
                                                               "else caching on)")
        p.add_argument("--project")
        p.add_argument("--region")
        p.add_argument("--pipeline-root")
        p.add_argument("--service-account")
        p.add_argument("--network")
        p.add_argument("--label", action="append", help="key=value (repeatable)")
        if name == "submit":
            p.add_argument("--endpoint", help="KFP API host: submit there instead of Vertex AI (`kfp run submit` path)")
            p.add_argument("--experiment", help="KFP experiment (default: albert-tfx)")
        else:
            p.add_argument("--cron", help='cron expression, e.g. "TZ=Europe/Paris 0 3 * * 1" (default: the --env schedule)')
            p.add_argument("--max-concurrent", type=int, default=None)
            p.add_argument("--max-runs", type=int)
            p.add_argument("--start-time")
            p.add_argument("--end-time")
        add_env_arguments(p)
        p.set_defaults(func=func)
    add_cli_subcommands(sub)  # `env [NAME]`, `schedules list|pause|resume`

    p = sub.add_parser("make-pretraining-data", help="documents → masked SOP TFRecords (same Beam code as the DAG)")
    _add_config_args(p)
    p.add_argument("--input", required=True, nargs="+", help="documents folder(s) or text files (official format)")
    p.add_argument("--vocab", "--spm-model", dest="vocab", required=True,
                   help="the vocabulary: a SentencePiece model or a WordPiece vocab.txt (the kind read from the file)")
    p.add_argument("--output", required=True)
    p.add_argument("--workers", type=int, default=1, help="DirectRunner worker processes")
    p.set_defaults(func=cli_tools.cmd_make_pretraining_data)

    p = sub.add_parser("tokenize", help="each line of the input (or stdin) as pieces and ids, JSON lines: check a "
                                        "vocabulary and the language settings (--set language=...) before pretraining")
    _add_config_args(p)  # language, vocab.do_lower_case, vocab.normalization, vocab.strip_accents
    p.add_argument("--vocab", required=True, help="a SentencePiece model or a WordPiece vocab.txt")
    p.add_argument("--input", nargs="+", help="UTF-8 text files, one text a line (default: standard input)")
    p.set_defaults(func=cli_tools.cmd_tokenize)

    p = sub.add_parser("ingest", help="raw Wikipedia (XML dumps or WikiExtractor output) and book folders → "
                                      "documents (CorpusGen's Beam code, no TFX); per-source counts as JSON")
    _add_config_args(p)  # corpus.min_doc_chars, corpus.dedupe, corpus.num_shards, corpus.book_encoding_fallback
    p.add_argument("--wikipedia", help="folder of pages-articles*.xml[.bz2|.gz] dumps or WikiExtractor AA/wiki_NN files")
    p.add_argument("--books", help="folder tree of books: *.txt, *.txt.gz, *.txt.bz2")
    p.add_argument("--output", required=True, help="documents folder (must not exist or be empty); local or gs://")
    p.add_argument("--workers", type=int, default=1, help="DirectRunner worker processes")
    p.add_argument("--wikipedia-format", choices=list(WIKIPEDIA_FORMATS),
                   help="auto: each file's format from its content, logged (default: corpus.wikipedia_format, auto)")
    p.add_argument("--wikipedia-glob", action="append", help="pattern under --wikipedia (repeatable; default: "
                                                             f"corpus.wikipedia_glob, {' and '.join(WIKIPEDIA_GLOBS)})")
    p.add_argument("--books-glob", action="append", help="pattern under --books (repeatable; default: "
                                                         f"corpus.books_glob, {', '.join(BOOKS_GLOBS)})")
    p.add_argument("--beam-arg", action="append", help="Beam pipeline option, e.g. --beam-arg=--runner=DataflowRunner "
                                                       "(write the '='; replaces the local runner)")
    p.set_defaults(func=cli_tools.cmd_ingest)

    p = sub.add_parser("pretrain", help="pretrain from make-pretraining-data output (the Trainer's run_fn, no TFX)")
    _add_config_args(p)
    p.add_argument("--examples", required=True, help="folder written by make-pretraining-data")
    p.add_argument("--output", required=True, help="model, logs and checkpoints (rerun to resume)")
    p.set_defaults(func=cli_tools.cmd_pretrain)

    p = sub.add_parser("model-info", help="parameter counts of a configuration, as JSON")
    p.add_argument("--size", default="albert-base")
    p.add_argument("-E", type=int, help="embedding size")
    p.add_argument("-H", type=int, help="hidden size")
    p.add_argument("-L", type=int, help="number of layers")
    p.add_argument("--heads", type=int)
    p.add_argument("--ffn", type=int)
    p.add_argument("--sharing", choices=["all", "attention", "ffn", "none", "groups"])
    p.add_argument("--groups", type=int)
    p.add_argument("--inner-groups", type=int)
    p.add_argument("--vocab-size", type=int)
    p.add_argument("--include-heads", action="store_true", help="count the pretraining heads in total")
    p.set_defaults(func=cli_tools.cmd_model_info)

    p = sub.add_parser("convert", help="Hugging Face ALBERT <-> albert dir; official TF1 checkpoint -> albert dir; "
                                       "albert dir -> ONNX / LiteRT (docs/exports.md)")
    p.add_argument("kind", choices=["hf-to-albert", "albert-to-hf", "tf1-to-albert", "albert-to-onnx",
                                    "albert-to-litert"])
    p.add_argument("src", help="a folder; for albert-to-onnx/-litert an albert folder, a pushed version or a "
                               "Trainer model")
    p.add_argument("dst", help="a new (or empty) folder")
    p.add_argument("--with-mlm-head", action="store_true",
                   help="albert-to-onnx/-litert: export the MLM head too (mlm_logits at every position)")
    p.set_defaults(func=cli_tools.cmd_convert)

    p = sub.add_parser("score", help="score predictions in the official formats")
    p.add_argument("benchmark", choices=["squad", "squad2", "cmrc2018", "glue", "race"])
    p.add_argument("dataset")
    p.add_argument("predictions")
    p.add_argument("--task", help="GLUE task name")
    p.add_argument("--na-prob", help="SQuAD 2.0 no-answer probabilities JSON")
    p.set_defaults(func=cli_tools.cmd_score)
    from pipeline.serving.predict_cli import add_serving_commands  # lazy: numpy, pipeline.serving (0.02 s)

    add_serving_commands(sub, _add_config_args)  # `serve`, `predict`, `deploy`
    return parser


def run_cli(argv: Optional[List[str]] = None) -> int:
    """Parse, set up logging, run one subcommand; returns the exit code (``main`` exits with it)."""
    gc_tuning.tune()
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    # `schedules pause --env E ID` (docs/running-at-scale.md's order): argparse fills the optional positional ID before it
    # reaches the options, so an ID after them arrives here as an extra argument.
    if extra and args.command == "schedules" and args.schedule is None and len(extra) == 1 \
            and not extra[0].startswith("-"):
        args.schedule, extra = extra[0], []
    if extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    from pipeline.local import logs  # lazy: tempfile, pipeline.local.logs (0.005 s)

    log_path = args.log_file or logs.default_log_path(
        args.command, os.path.join(args.output_dir, "logs") if args.command == "run" and
        not os.environ.get(logs.LOG_DIR_VAR) else None)
    logs.setup(log_path, verbose=args.verbose)
    if args.command in _TENSORFLOW_COMMANDS and not args.verbose:
        logs.import_tensorflow(log_path)
    if args.command == "compile" and not args.image:  # imports TFX (and TensorFlow): after the line above
        from pipeline.cloud.kubeflow_v2_runner import DEFAULT_IMAGE  # lazy: tensorflow, apache_beam, tfx (6.1 s)

        args.image = DEFAULT_IMAGE
    LOG.debug("albert-pipeline %s", " ".join(sys.argv[1:] if argv is None else argv))
    try:
        code = args.func(args)
        if code == 0 and args.command in ("submit", "schedule"):
            _hint_rehearsal(args.spec)
        return code
    except KeyboardInterrupt:
        print(f"albert-pipeline {args.command}: interrupted (log: {log_path})", file=sys.stderr)
        return 130
    except Exception as exc:  # one line on the terminal; the traceback goes to the log file
        _write_traceback(log_path, exc)
        if os.environ.get("ALBERT_TFX_TRACEBACK"):
            raise
        message, user_error = describe_error(exc)
        kind = "error" if user_error else "internal error"
        first, *more = message.splitlines() or [""]  # more: a DataGateError's line per failed check
        print(f"albert-pipeline {args.command}: {kind}: {first} (full traceback: {log_path})", file=sys.stderr)
        for line in more:
            print(line, file=sys.stderr)
        return 2 if user_error else 1


# make-pretraining-data is not one: it never loads TensorFlow (~0.6 GB of its peak RSS when it did).
_TENSORFLOW_COMMANDS = {"run", "plan", "compile", "pretrain", "model-info", "convert", "serve", "predict"}


def _write_traceback(log_path: str, exc: BaseException) -> None:
    for handler in logging.getLogger().handlers:
        handler.flush()
    os.makedirs(os.path.dirname(log_path) or ".", exist_ok=True)
    with open(log_path, "a", encoding="utf-8") as f:
        f.write("Traceback of the error reported on the terminal:\n")
        traceback.print_exception(type(exc), exc, exc.__traceback__, file=f)


def describe_error(exc: BaseException):
    """(one-line message, is it the user's input or settings?) for an exception from a subcommand.

    A user error is a :class:`config.errors.UserError` anywhere in the cause/context chain; anything else is an
    internal error (a bug must never be reported as bad input). Errors raised inside Beam or TFX arrive wrapped
    (Beam re-raises a worker's error as a new one with the remote traceback in its message); there the class name
    in the text decides, against :func:`config.errors.user_error_names`.
    """
    chain, seen = [], set()
    current: Optional[BaseException] = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        chain.append(current)
        current = current.__cause__ or current.__context__
    for error in chain:
        if isinstance(error, UserError):
            if getattr(error, "all_lines", False):  # the data gate's: a line per failed check
                return _BEAM_STEP.sub("", str(error).strip()), True
            return _first_line(error), True
    # Beam's DirectRunner re-raises a worker's exception as a new one whose text holds the original.
    names = user_error_names() | _USER_ERROR_NAMES
    for line in reversed(str(exc).splitlines()):
        name = line.split(":", 1)[0].strip().rsplit(".", 1)[-1]
        if name.endswith(("Error", "Exception")) and ":" in line:
            message = _BEAM_STEP.sub("", line.split(":", 1)[1].strip())
            return (message, True) if name in names else (f"{name}: {message}", False)
    return f"{type(exc).__name__}: {_first_line(exc)}", False


# The family's class names, for a worker's error re-raised as text in a process that never imported the class
# (user_error_names() knows only the loaded ones). tests/test_cli_errors.py checks it equals the whole family.
_USER_ERROR_NAMES = frozenset({
    "UserError", "InputError", "MissingInputError", "MissingExtraError", "OutputExistsError", "ConfigError",
    "CorruptInputError",
    "SpecialIdError", "VocabSizeMismatchError", "RaceFormatError", "SquadFormatError", "CheckpointMismatchError",
    "ClusterError", "CloudConfigError", "CloudAuthError", "EnvironmentConfigError", "SpecError", "RehearsalError",
    "RegistryAuthError", "RunInProgressError", "VocabularyError", "DataGateError", "ExamplesGateError",
    "SegmenterError"})  # RegistryAuthError, RunInProgressError: components/release/registry.py,
# pipeline/local/run_lock.py; VocabularyError: components/text/vocab_files.py; DataGateError, ExamplesGateError:
# components/datagate/datagate_result.py, examples_stats.py; SegmenterError: components/text/segmenters.py


_BEAM_STEP = re.compile(r" \[while running '[^']*'\]")


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    if isinstance(error, KeyError) and error.args:
        text = str(error.args[0])
    line = _BEAM_STEP.sub("", text.splitlines()[0] if text else type(error).__name__)
    return line if len(line) <= 1000 else line[:997] + "..."


def main(argv: Optional[List[str]] = None) -> None:
    _exit(run_cli(argv))


def _exit(code: int) -> None:
    """Flush and leave without interpreter teardown.

    TensorFlow/tf.Transform processes can segfault during teardown (a protobuf upb bug) after all
    work is done; the work's outcome is what the exit code must report.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    main()
