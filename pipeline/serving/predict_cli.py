"""``albert-pipeline serve`` and ``albert-pipeline predict``: one loader (served_model.py), so ``predict`` runs the
graph the server runs, on the same checked instances (serving_instances.py).

    albert-pipeline serve --model DIR [--port 8080] [--max-batch 32] [--max-wait-ms 5] ...
    albert-pipeline predict fill-mask|embed|classify|answer|choose --model DIR [TEXT ...]   (else JSON lines on stdin)

``predict`` writes one JSON line per instance on stdout. Positional texts: for ``fill-mask`` and ``embed`` each text
is an instance; for a task model they are one instance's inputs in the model's order (``classify`` TEXT_A TEXT_B;
``answer`` QUESTION CONTEXT; ``choose`` CONTEXT QUESTION OPTION...). Standard input: one JSON object per line, as the server's instances.
"""
from __future__ import annotations

import json
import re
import sys
from typing import Any, Dict, List

from config.errors import InputError

__all__ = ["cmd_serve", "cmd_predict", "add_serving_commands", "PREDICT_TASKS"]

PREDICT_TASKS = ("fill-mask", "embed", "classify", "answer", "choose")
_METHODS = {"fill-mask": "fill_mask", "embed": "embed"}
_BATCH = 32


def add_serving_commands(sub, add_config_args) -> None:
    """``serve``, ``predict`` and ``deploy`` on the CLI's subparsers (pipeline/cli.py; ``add_config_args``: its
    --preset/--config/--set flags)."""
    from pipeline.serving.vertex_serving import add_deploy_command  # lazy: pipeline.serving.vertex_serving (0.001 s)

    p = sub.add_parser("serve", help="serve a pushed version or a task model over HTTP with Vertex AI's "
                                     "custom-container contract (AIP_HTTP_PORT, AIP_HEALTH_ROUTE, AIP_PREDICT_ROUTE, "
                                     "AIP_STORAGE_URI)")
    p.add_argument("--model", help="a pushed version folder or a <TASK>/serving_model (default: $AIP_STORAGE_URI)")
    p.add_argument("--host", default=None, help="address to listen on (default 0.0.0.0)")
    p.add_argument("--port", type=int, default=None, help="port (default: $AIP_HTTP_PORT, else 8080)")
    p.add_argument("--max-instances", type=int, default=None, help="instances per request, more get 413 (default 64)")
    p.add_argument("--max-text-chars", type=int, default=None,
                   help="characters per text, more get 400 (default 10000)")
    p.add_argument("--truncate", action="store_true", default=None,
                   help="cut texts whose pieces do not fit the model's sequence as fine-tuning does, instead of "
                        "answering 400 naming the field")
    p.add_argument("--max-batch", type=int, default=None,
                   help="instances per model call when batching concurrent requests (default 32; 0: no batching)")
    p.add_argument("--max-wait-ms", type=float, default=None,
                   help="how long a batch's first request waits for others (default 5)")
    p.set_defaults(func=cmd_serve)

    p = sub.add_parser("predict", help="a model's predictions for raw text (arguments or JSON lines on stdin), "
                                       "as JSON lines: the graph `serve` runs")
    tasks = p.add_subparsers(dest="task", required=True)
    for task, takes in (("fill-mask", "texts holding [MASK]"), ("embed", "texts"),
                        ("classify", "TEXT_A [TEXT_B]"), ("answer", "QUESTION CONTEXT"),
                        ("choose", "CONTEXT QUESTION OPTION...")):
        t = tasks.add_parser(task, help=f"{task}: {takes}")
        t.add_argument("--model", required=True,
                       help="a pushed version folder (fill-mask, embed) or a task model folder, <TASK> or "
                            "<TASK>/serving_model (classify, answer, choose)")
        t.add_argument("--truncate", action="store_true",
                       help="cut texts that do not fit the model's sequence as fine-tuning does (default: exit 2)")
        t.add_argument("texts", nargs="*", metavar="TEXT", help=f"{takes} (default: JSON lines on standard input)")
        t.set_defaults(func=cmd_predict)
    add_deploy_command(sub, add_config_args)


def cmd_serve(args) -> int:
    from pipeline.serving import serving_app  # lazy: starlette (0.1 s)
    from pipeline.serving.served_model import load  # lazy: tensorflow, tensorflow_text (3 s)

    settings = serving_app.settings_from_env(model=args.model, host=args.host, port=args.port,
                                             max_instances=args.max_instances, max_text_chars=args.max_text_chars,
                                             max_batch=args.max_batch, max_wait_ms=args.max_wait_ms,
                                             truncate=args.truncate)
    model = load(settings.model)
    print(f"albert-pipeline serve: {model.path} ({model.kind}: {', '.join(sorted(model.methods))}) on "
          f"http://{settings.host}:{settings.port} (health GET {settings.health_route}, predict POST "
          f"{settings.predict_route})", file=sys.stderr, flush=True)
    serving_app.serve(model, settings)
    return 0


def cmd_predict(args) -> int:
    from pipeline.serving import served_model  # lazy: tensorflow (2.8 s)
    from pipeline.serving.serving_instances import batch_key, stack  # lazy: numpy (the parser needs none of it)

    # What the folder's files say is checked before any graph is loaded: a wrong folder or argument fails at once.
    folder = served_model.inspect(args.model)
    if folder.kind:
        _check_kind(folder.kind, args.task, args.model)
    if args.texts and (args.task in _METHODS or folder.info.get("inputs")):
        provisional = served_model.Method(_METHODS.get(args.task, args.task), _declared_inputs(args.task, folder.info),
                                          run=None, source=folder.path,
                                          mask_token=served_model.MASK_TOKEN if args.task == "fill-mask" else None)
        _checked(args, provisional, *_instances(args, provisional))
    model = served_model.load(args.model)
    method = _method(model, args.task, args.model)
    checked = _checked(args, method, *(_instances(args, method) if args.texts else _stdin_instances()))
    for start in range(0, len(checked), _BATCH):
        part = checked[start:start + _BATCH]
        groups: Dict[Any, List[int]] = {}
        for i, arrays in enumerate(part):
            groups.setdefault(batch_key(arrays), []).append(i)
        out: List[Any] = [None] * len(part)
        for members in groups.values():
            for i, row in zip(members, method.run(stack([part[i] for i in members]), len(members))):
                out[i] = row
        for row in out:
            print(json.dumps(row, ensure_ascii=False))
    return 0


def _checked(args, method, instances, where) -> List[Dict[str, Any]]:
    """The instances as arrays, checked as the server checks them; an InputError naming the instance otherwise."""
    from pipeline.serving.serving_instances import RequestError, check_instance  # lazy: numpy (loaded by cmd_predict)

    checked = []
    for index, instance in enumerate(instances):
        try:
            arrays = check_instance(method.inputs, index, instance)
            method.check(index, arrays, args.truncate)
        except RequestError as exc:
            raise InputError(f"predict {args.task} --model {args.model}: {_where(str(exc), where)}") from None
        checked.append(arrays)
    return checked


def _declared_inputs(task: str, info: Dict[str, Any]):
    """The inputs a folder's files declare (fill-mask and embed: one text; a task model: serving_info.json's)."""
    from pipeline.serving.served_model import input_order  # lazy: tensorflow (loaded by the caller already)
    from pipeline.serving.serving_instances import InputSpec  # lazy: numpy (loaded by cmd_predict)

    if task in _METHODS:
        return (InputSpec("text", "string"),)
    names = input_order(info)[:len(info["inputs"])]
    return tuple(InputSpec(n, "string", (None,) if n == "options" else ()) for n in names)


def _check_kind(kind: str, task: str, path: str) -> None:
    if task in _METHODS and kind != "version":
        raise InputError(f"predict {task}: --model {path} is a {kind} model; {task} needs a pushed version folder "
                         f"(its text_model/, or its ids SavedModel and vocab/)")
    if task not in _METHODS and kind != task:
        what = "a pushed version (predict fill-mask, embed)" if kind == "version" else f"a {kind} model"
        raise InputError(f"predict {task}: --model {path} is {what}, not a {task} model")


def _method(model, task: str, path: str):
    _check_kind(model.kind, task, path)
    return model.methods[_METHODS[task]] if task in _METHODS else model.methods[model.default]


def _instances(args, method):
    """The positional texts as instances, and how to name instance i in a message."""
    inputs, texts = method.inputs, list(args.texts)
    if args.task in _METHODS and len(inputs) == 1 and not inputs[0].shape:
        return [{inputs[0].name: t} for t in texts], lambda i: f"TEXT {i + 1}"
    scalar = [spec for spec in inputs if not spec.shape]
    listed = [spec for spec in inputs if spec.shape]
    names = ", ".join(spec.name.upper() for spec in inputs)
    if len(texts) < len(inputs) or (not listed and len(texts) > len(inputs)):
        pair = " (a text pair for a single-text model)" if len(inputs) == 1 and len(texts) == 2 else ""
        raise InputError(f"predict {args.task}: {len(texts)} texts given{pair}, but --model {args.model} takes "
                         f"{len(inputs)}: {names}")
    instance = {spec.name: texts[i] for i, spec in enumerate(scalar)}
    if listed:
        instance[listed[0].name] = texts[len(scalar):]
    return [instance], lambda i: "the TEXT arguments"


def _stdin_instances():
    instances = []
    for number, raw in enumerate(sys.stdin.buffer, 1):
        if not raw.strip():
            continue
        try:
            instances.append(json.loads(raw.decode("utf-8")))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise InputError(f"standard input line {number}: not a JSON line in UTF-8 ({exc}); or give the texts "
                             f"as TEXT arguments") from None
    if not instances:
        raise InputError("no input: give TEXT arguments or JSON lines on standard input")
    return instances, lambda i: f"standard input instance {i + 1}"


def _where(message: str, where) -> str:
    """``instances[3].text: …`` → ``TEXT 4 (text): …`` (how the command line names instance 3)."""
    match = re.match(r"instances\[(\d+)\]\.?(\w*): ", message)
    if not match:
        return message
    return f"{where(int(match.group(1)))}{' (' + match.group(2) + ')' if match.group(2) else ''}: " \
           f"{message[match.end():]}"
