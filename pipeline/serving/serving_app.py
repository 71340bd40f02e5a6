"""The serving app: Vertex AI's custom-container contract as a Starlette ASGI app, run by uvicorn.

Vertex AI starts the container with ``AIP_HTTP_PORT`` (the port to listen on, 8080 by default),
``AIP_HEALTH_ROUTE`` (GET: 200 once the model is loaded), ``AIP_PREDICT_ROUTE`` (POST ``{"instances": [...]}`` →
``{"predictions": [...]}``) and ``AIP_STORAGE_URI`` (the model's folder, a copy of the uploaded ``artifact_uri``);
:func:`settings_from_env` reads them, and ``albert-pipeline serve`` flags override them. A bad request gets a 4xx
and ``{"error": "<field>: <what is wrong>"}`` (serving_instances.py), and the server goes on serving.
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from dataclasses import dataclass
from typing import Any, Dict, Mapping, Optional

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from pipeline.serving.micro_batcher import MicroBatcher
from pipeline.serving.serving_instances import (DEFAULT_HEALTH_ROUTE, DEFAULT_MAX_INSTANCES, DEFAULT_MAX_TEXT_CHARS,
                                                DEFAULT_PORT, DEFAULT_PREDICT_ROUTE, RequestError, batch_key,
                                                check_instance, parse_body)

__all__ = ["ServeSettings", "settings_from_env", "create_app"]

LOG = logging.getLogger("albert_tfx.serve")
MAX_BODY_BYTES = 1_500_000  # Vertex AI's online prediction limit (1.5 MB)


@dataclass(frozen=True)
class ServeSettings:
    model: Optional[str] = None  # a folder or gs:// URI; None: AIP_STORAGE_URI
    host: str = "0.0.0.0"
    port: int = DEFAULT_PORT
    health_route: str = DEFAULT_HEALTH_ROUTE
    predict_route: str = DEFAULT_PREDICT_ROUTE
    max_instances: int = DEFAULT_MAX_INSTANCES  # per request (more: 413)
    max_text_chars: int = DEFAULT_MAX_TEXT_CHARS  # per text (more: 400)
    max_batch: int = 32  # instances per model call; 0: no batching
    max_wait_ms: float = 5.0  # how long the first request of a batch waits for others
    truncate: bool = False  # texts whose pieces do not fit the model's sequence: False 400, True cut as in training


def settings_from_env(environ: Mapping[str, str] = os.environ, **flags: Any) -> ServeSettings:
    """Vertex AI's variables, then the non-None ``flags`` (``serve``'s) over them."""
    from config.errors import InputError  # lazy: on one branch (adds nothing)

    values: Dict[str, Any] = {"model": environ.get("AIP_STORAGE_URI") or None,
                              "health_route": environ.get("AIP_HEALTH_ROUTE") or DEFAULT_HEALTH_ROUTE,
                              "predict_route": environ.get("AIP_PREDICT_ROUTE") or DEFAULT_PREDICT_ROUTE}
    port = environ.get("AIP_HTTP_PORT")
    if port:
        if not port.isdigit() or not 0 < int(port) < 65536:
            raise InputError(f"AIP_HTTP_PORT={port!r} is not a port number")
        values["port"] = int(port)
    values.update({k: v for k, v in flags.items() if v is not None})
    settings = ServeSettings(**values)
    if not settings.model:
        raise InputError("no model: give serve --model DIR (or set AIP_STORAGE_URI, as Vertex AI does)")
    for var, route in (("AIP_HEALTH_ROUTE", settings.health_route), ("AIP_PREDICT_ROUTE", settings.predict_route)):
        if not route.startswith("/"):
            raise InputError(f"environment variable {var}={route!r} must start with '/'")
    if settings.max_instances < 1 or settings.max_text_chars < 1 or settings.max_batch < 0 or settings.max_wait_ms < 0:
        raise InputError("serve --max-instances and --max-text-chars must be >= 1, --max-batch and --max-wait-ms >= 0")
    return settings


def create_app(model, settings: ServeSettings) -> Starlette:
    """The app serving ``model`` (a :class:`pipeline.serving.served_model.ServedModel`, loaded before the port
    opens, so the health route is 200 from the first request it can answer)."""
    batcher = MicroBatcher(settings.max_batch, settings.max_wait_ms / 1000.0)

    async def health(request: Request) -> JSONResponse:
        return JSONResponse({"status": "ready", **model.describe(),
                             "batching": {"max_batch": settings.max_batch, "max_wait_ms": settings.max_wait_ms,
                                          "model_calls": batcher.batches, "instances": batcher.instances}})

    async def predict(request: Request) -> JSONResponse:
        try:
            body = await _read_body(request)
            parsed = parse_body(body, settings.max_instances)
            method = model.method(parsed.signature_name)
            chunks: Dict[Any, list] = {}
            for index, instance in enumerate(parsed.instances):
                arrays = check_instance(method.inputs, index, instance, settings.max_text_chars)
                method.check(index, arrays, settings.truncate)
                chunks.setdefault(batch_key(arrays), []).append((index, arrays))
            answers = await asyncio.gather(*(batcher.submit((method.name, key), method.run, [a for _, a in group])
                                             for key, group in chunks.items()))
        except RequestError as exc:
            return JSONResponse(exc.body(), status_code=exc.status)
        except Exception as exc:  # the model refused the batch: say so in one line, keep serving
            name = type(exc).__name__
            first = (str(exc).strip().splitlines() or [name])[0][:500]
            LOG.exception("predict failed")
            status = 400 if name == "InvalidArgumentError" else 500
            return JSONResponse({"error": f"{'instances' if status == 400 else 'model'}: {name}: {first}"},
                                status_code=status)
        predictions: list = [None] * len(parsed.instances)
        for group, rows in zip(chunks.values(), answers):
            for (index, _), row in zip(group, rows):
                predictions[index] = row
        return JSONResponse({"predictions": predictions})

    routes = [Route(settings.health_route, health, methods=["GET"]),
              Route(settings.predict_route, predict, methods=["POST"])]
    @contextlib.asynccontextmanager
    async def lifespan(app):
        yield
        batcher.close()

    app = Starlette(routes=routes, lifespan=lifespan)
    app.state.batcher = batcher
    return app


async def _read_body(request: Request) -> bytes:
    length = request.headers.get("content-length")
    if length and length.isdigit() and int(length) > MAX_BODY_BYTES:
        raise RequestError("body", f"{int(length)} bytes, more than {MAX_BODY_BYTES} (Vertex AI's limit)", 413)
    body = b""
    async for part in request.stream():
        body += part
        if len(body) > MAX_BODY_BYTES:
            raise RequestError("body", f"more than {MAX_BODY_BYTES} bytes (Vertex AI's limit)", 413)
    return body


def serve(model, settings: ServeSettings) -> None:
    """Serve until interrupted (uvicorn, one worker: the model is loaded once, in this process)."""
    import uvicorn  # lazy: uvicorn (only `serve` runs a server)

    uvicorn.run(create_app(model, settings), host=settings.host, port=settings.port, log_level="warning",
                access_log=False)
