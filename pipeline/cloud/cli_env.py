"""The environment subcommands of ``albert-pipeline``: argument parsing and printing, wired in by ``pipeline/cli.py``.

``compile --env NAME``, ``env [show] [NAME]`` and ``schedules list|pause|resume --env NAME``. The environment model
and its validation live in :mod:`pipeline.cloud.environments`; ``submit``/``schedule --env`` go through
:mod:`pipeline.cloud.deploy` like their flag form (``pipeline/cli.py``). This module only turns command-line arguments into
calls and prints the results (JSON on stdout, human lines on stderr).
"""
from __future__ import annotations

import json
from typing import List, Optional

from pipeline.cloud.submit import CloudConfigError
from pipeline.cloud.environments import (Environment, beam_args, compile_for_env, environment_names, get_environment,
                                   list_env_schedules, pause_env_schedule, resume_env_schedule)


def env_from_args(args) -> Environment:
    return get_environment(args.env, getattr(args, "environments", None), getattr(args, "env_set", None) or [])


def env_name_from_words(words: List[str]) -> Optional[str]:
    """``env``, ``env NAME``, ``env show`` and ``env show NAME`` (docs/running-at-scale.md's form) → NAME or None."""
    words = list(words or [])
    if words and words[0] == "show":
        words = words[1:]
    if len(words) > 1:
        raise CloudConfigError(f"env [show] NAME takes at most one environment name (an entry of "
                               f"infra/environments.yaml), got {' '.join(words)}")
    return words[0] if words else None


def cmd_env_show(args) -> int:
    """``albert-pipeline env [show] [NAME]``: the resolved, validated environment and its Beam args, as JSON."""
    if getattr(args, "words", None) is not None:
        args.env = env_name_from_words(args.words)
    if not args.env:
        print(json.dumps(environment_names(getattr(args, "environments", None))))
        return 0
    env = env_from_args(args)
    print(json.dumps({**env.to_dict(), "beam_pipeline_args": beam_args(env)}, indent=2, sort_keys=True))
    return 0


def cmd_compile_env(args) -> int:
    env = env_from_args(args)
    from pipeline.cloud.kubeflow_v2_runner import DEFAULT_IMAGE, spec_summary  # lazy: tensorflow, apache_beam, tfx (6.2 s)

    image = getattr(args, "image", None)
    if image == DEFAULT_IMAGE:  # cli.main fills in the placeholder default; the environment's image wins
        image = None
    info = compile_for_env(env, args.output, config_file=args.config, overrides=args.overrides, image=image)
    print(json.dumps({**info, **spec_summary(args.output)}, indent=2))
    return 0


def cmd_schedules(args) -> int:
    """``albert-pipeline schedules list|pause|resume --env NAME [SCHEDULE]``."""
    env = env_from_args(args)
    if args.action == "list":
        rows = [{"name": s.resource_name, "display_name": s.display_name, "state": getattr(s.state, "name", s.state),
                 "cron": s.cron} for s in list_env_schedules(env, display_name=args.display_name)]
        print(json.dumps(rows, indent=2))
        return 0
    if not args.schedule:
        raise CloudConfigError(f"schedules {args.action} needs SCHEDULE, the schedule id or resource name "
                               "(`schedules list --env NAME` lists them)")
    if args.action == "pause":
        s = pause_env_schedule(env, args.schedule)
    else:
        s = resume_env_schedule(env, args.schedule, catch_up=args.catch_up)
    print(f"{args.action}d schedule: {s.resource_name}")
    return 0


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
