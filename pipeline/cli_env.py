"""The environment subcommands of ``albert-pipeline``: argument parsing and printing, wired in by ``pipeline/cli.py``.

``compile|submit|schedule --env NAME``, ``env [show] [NAME]`` and ``schedules list|pause|resume --env NAME``. The
environment model, its validation and the requests live in :mod:`pipeline.environments`; this module only turns
command-line arguments into calls of it and prints the results (JSON on stdout, human lines on stderr).
"""
from __future__ import annotations

import json
from typing import Any, Dict, List, Optional

from pipeline.cloud import CloudConfigError
from pipeline.environments import (Environment, beam_args, compile_for_env, environment_names, get_environment,
                                   list_env_schedules, pause_env_schedule, resume_env_schedule, schedule_env,
                                   submit_env)


def _env_from_args(args) -> Environment:
    return get_environment(args.env, getattr(args, "environments", None), getattr(args, "env_set", None) or [])


def _json_params(args) -> Dict[str, Any]:
    text = getattr(args, "parameters", None)
    if not text:
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CloudConfigError(f"--parameters is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise CloudConfigError("--parameters must be a JSON object")
    return value


def env_name_from_words(words: List[str]) -> Optional[str]:
    """``env``, ``env NAME``, ``env show`` and ``env show NAME`` (infra/README.md's form) → NAME or None."""
    words = list(words or [])
    if words and words[0] == "show":
        words = words[1:]
    if len(words) > 1:
        raise CloudConfigError(f"env takes at most one environment name, got {' '.join(words)}")
    return words[0] if words else None


def cmd_env_show(args) -> int:
    """``albert-pipeline env [show] [NAME]``: the resolved, validated environment and its Beam args, as JSON."""
    if getattr(args, "words", None) is not None:
        args.env = env_name_from_words(args.words)
    if not args.env:
        print(json.dumps(environment_names(getattr(args, "environments", None))))
        return 0
    env = _env_from_args(args)
    print(json.dumps({**env.to_dict(), "beam_pipeline_args": beam_args(env)}, indent=2, sort_keys=True))
    return 0


def cmd_compile_env(args) -> int:
    env = _env_from_args(args)
    from pipeline.kubeflow_v2_runner import DEFAULT_IMAGE, spec_summary

    image = getattr(args, "image", None)
    if image == DEFAULT_IMAGE:  # cli.main fills in the placeholder default; the environment's image wins
        image = None
    info = compile_for_env(env, args.output, config_file=args.config, overrides=args.overrides, image=image)
    print(json.dumps({**info, **spec_summary(args.output)}, indent=2))
    return 0


def cmd_submit_env(args) -> int:
    env = _env_from_args(args)
    result = submit_env(env, args.spec, run_name=_run_name(args), parameters=_json_params(args))
    if env.kind == "kfp":
        print(f"submitted KFP run: {getattr(result, 'run_id', result)}")
    else:
        print(f"submitted Vertex AI PipelineJob: {result.resource_name}")
    return 0


def cmd_schedule_env(args) -> int:
    env = _env_from_args(args)
    schedule, _ = schedule_env(env, args.spec, run_name=_run_name(args), parameters=_json_params(args),
                               cron=args.cron, max_concurrent_run_count=args.max_concurrent,
                               max_run_count=args.max_runs, start_time=args.start_time, end_time=args.end_time)
    print(f"created schedule: {schedule.resource_name}")
    return 0


def cmd_schedules(args) -> int:
    """``albert-pipeline schedules list|pause|resume --env NAME [SCHEDULE]``."""
    env = _env_from_args(args)
    if args.action == "list":
        rows = [{"name": s.resource_name, "display_name": s.display_name, "state": getattr(s.state, "name", s.state),
                 "cron": s.cron} for s in list_env_schedules(env, display_name=args.display_name)]
        print(json.dumps(rows, indent=2))
        return 0
    if not args.schedule:
        raise CloudConfigError(f"schedules {args.action} needs the schedule id or resource name")
    if args.action == "pause":
        s = pause_env_schedule(env, args.schedule)
    else:
        s = resume_env_schedule(env, args.schedule, catch_up=args.catch_up)
    print(f"{args.action}d schedule: {s.resource_name}")
    return 0


def _run_name(args) -> Optional[str]:
    name = getattr(args, "run_name", None)
    return None if name in (None, "", "albert-tfx") else name


def add_env_arguments(p) -> None:
    """``--env`` / ``--environments`` / ``--env-set`` for ``compile``, ``submit`` and ``schedule``."""
    p.add_argument("--env", help="environment from infra/environments.yaml: its project, region, pipeline root, "
                                 "image, service account, labels and Beam args are used")
    p.add_argument("--environments", help="environments file (default: $ALBERT_TFX_ENVIRONMENTS or "
                                          "infra/environments.yaml)")
    p.add_argument("--env-set", dest="env_set", action="append", default=[], metavar="FIELD=VALUE",
                   help="override one environment field, e.g. project=my-proj or beam.max_num_workers=50 "
                        "(repeatable)")


def add_cli_subcommands(sub) -> None:
    """The ``env`` and ``schedules`` subcommands."""
    p = sub.add_parser("env", help="show an environment of infra/environments.yaml, resolved and validated "
                                   "(`env [show] NAME`; no name: list them)")
    p.add_argument("words", nargs="*", metavar="[show] NAME", help="environment name, optionally after 'show'")
    p.add_argument("--environments", help="environments file")
    p.add_argument("--env-set", dest="env_set", action="append", default=[], metavar="FIELD=VALUE")
    p.set_defaults(func=cmd_env_show, env=None)

    p = sub.add_parser("schedules", help="list, pause or resume Vertex AI pipeline schedules of an environment")
    p.add_argument("action", choices=["list", "pause", "resume"])
    p.add_argument("schedule", nargs="?", help="schedule id or projects/P/locations/R/schedules/ID (pause/resume)")
    p.add_argument("--env", required=True, help="a vertex environment of infra/environments.yaml")
    p.add_argument("--environments", help="environments file")
    p.add_argument("--env-set", dest="env_set", action="append", default=[], metavar="FIELD=VALUE")
    p.add_argument("--display-name", help="list: only schedules with this display name")
    p.add_argument("--catch-up", action="store_true", help="resume: backfill the runs missed while paused")
    p.set_defaults(func=cmd_schedules)
