"""The serving contract's defaults; a prediction request's body, checked against the inputs of the method it
calls; the answer's rows.

The request is TF Serving's and Vertex AI's row format: ``{"instances": [...]}`` where each instance is an object
``{input name: value}`` (or, for a method with one input, the bare value), optionally with TF Serving's
``"signature_name"`` (or Vertex's ``"parameters": {"signature_name": ...}``) naming the method. Every check names
the field it failed on (``instances[3].text_b: missing``) and becomes a 4xx with ``{"error": "<one line>"}``, the
shape TF Serving answers errors in. Nothing here imports TensorFlow: the server checks a request before it queues
it, and a test checks every rule without a model.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

__all__ = ["InputSpec", "RequestError", "Request", "parse_body", "check_instance", "stack", "rows"]

# Vertex AI's contract where its variables are not set (AIP_HTTP_PORT, AIP_HEALTH_ROUTE, AIP_PREDICT_ROUTE), and
# what `deploy` declares in the model's container spec.
DEFAULT_PORT = 8080
DEFAULT_HEALTH_ROUTE = "/health"
DEFAULT_PREDICT_ROUTE = "/predict"
# A text longer than this many characters is refused (400), whatever the model's sequence: no ALBERT sequence
# (512 tokens at most) reads that far, and tokenizing it would only cost the server time. Shorter texts whose
# pieces do not fit the model's sequence get a 400 naming the field (served_model.fits_rule), unless the server
# runs with --truncate (then they are cut inside the graph, as in training and TF Hub's bert_pack_inputs).
DEFAULT_MAX_TEXT_CHARS = 10_000
DEFAULT_MAX_INSTANCES = 64  # per request; Vertex AI's own limit is 1.5 MB of body


class RequestError(ValueError):
    """A bad request: ``status`` (400, 413) and the one-line message naming the field."""

    def __init__(self, field: str, message: str, status: int = 400):
        super().__init__(f"{field}: {message}")
        self.field, self.status = field, status

    def body(self) -> Dict[str, str]:
        return {"error": str(self)}


@dataclass(frozen=True)
class InputSpec:
    """One input of a method: its name, dtype (``string``, ``int32``, ``float32``, …) and the shape of one
    instance (the signature's shape without its batch dimension; ``None`` where any length goes)."""

    name: str
    dtype: str
    shape: Tuple[Optional[int], ...] = ()

    def describe(self) -> str:
        dims = ",".join("?" if d is None else str(d) for d in self.shape)
        return f"{self.name} ({self.dtype}{'[' + dims + ']' if self.shape else ''})"


@dataclass(frozen=True)
class Request:
    instances: List[Any]
    signature_name: Optional[str]


def parse_body(body: bytes, max_instances: int = DEFAULT_MAX_INSTANCES) -> Request:
    """The instances (and the method asked for) of a request body; a :class:`RequestError` otherwise."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RequestError("body", f"not UTF-8 (byte {exc.start}): send JSON in UTF-8") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RequestError("body", f"not JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None
    if not isinstance(data, dict):
        raise RequestError("body", 'must be a JSON object {"instances": [...]}')
    if "instances" not in data:
        raise RequestError("instances", 'missing: the body is {"instances": [...]}'
                           + (' (TF Serving\'s columnar "inputs" is not supported)' if "inputs" in data else ""))
    instances = data["instances"]
    if not isinstance(instances, list):
        raise RequestError("instances", f"must be a list, got {_type(instances)}")
    if not instances:
        raise RequestError("instances", "empty: send at least one instance")
    if len(instances) > max_instances:
        raise RequestError("instances", f"{len(instances)} instances, more than the server's limit of "
                           f"{max_instances} per request (serve --max-instances)", status=413)
    parameters = data.get("parameters") or {}
    if not isinstance(parameters, dict):
        raise RequestError("parameters", f"must be an object, got {_type(parameters)}")
    name = data.get("signature_name", parameters.get("signature_name"))
    if name is not None and not isinstance(name, str):
        raise RequestError("signature_name", f"must be a string, got {_type(name)}")
    return Request(instances, name)


def check_instance(inputs: Sequence[InputSpec], index: int, instance: Any,
                   max_text_chars: int = DEFAULT_MAX_TEXT_CHARS) -> Dict[str, np.ndarray]:
    """Instance ``index`` as one array per input (strings as UTF-8 ``bytes`` objects), checked against ``inputs``."""
    where = f"instances[{index}]"
    if not isinstance(instance, dict):
        if len(inputs) != 1:
            raise RequestError(where, f"must be an object with {', '.join(i.name for i in inputs)}, got "
                               f"{_type(instance)}")
        instance = {inputs[0].name: instance}
    names = {spec.name for spec in inputs}
    for key in instance:
        if key not in names:
            raise RequestError(f"{where}.{key}", f"not an input of this model (it takes "
                               f"{', '.join(spec.describe() for spec in inputs)})")
    out = {}
    for spec in inputs:
        if spec.name not in instance:
            raise RequestError(f"{where}.{spec.name}", f"missing (this model takes "
                               f"{', '.join(s.describe() for s in inputs)})")
        out[spec.name] = _value(spec, instance[spec.name], f"{where}.{spec.name}", max_text_chars)
    return out


def _value(spec: InputSpec, value: Any, field: str, max_text_chars: int) -> np.ndarray:
    shape = _shape_of(value, len(spec.shape), field)
    for got, want in zip(shape, spec.shape):
        if want is not None and got != want:
            raise RequestError(field, f"has shape {list(shape)}, the model takes {spec.describe()}")
    flat = np.asarray(value, dtype=object).reshape(-1) if spec.shape else [value]
    if spec.dtype == "string":
        for v in flat:
            if not isinstance(v, str):
                raise RequestError(field, f"must be a string, got {_type(v)}")
            if len(v) > max_text_chars:
                raise RequestError(field, f"a text of {len(v)} characters, more than the server's limit of "
                                   f"{max_text_chars} (serve --max-text-chars)")
        encoded = [v.encode("utf-8") for v in flat]
        array = np.empty(len(encoded), dtype=object)
        array[:] = encoded
        return array.reshape(shape)
    if spec.dtype.startswith(("int", "uint")):
        for v in flat:
            if isinstance(v, bool) or not isinstance(v, int):
                raise RequestError(field, f"must be {'integers' if spec.shape else 'an integer'}, got {_type(v)}")
        return np.asarray(value, dtype=spec.dtype).reshape(shape)
    if spec.dtype.startswith("float"):
        for v in flat:
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise RequestError(field, f"must be {'numbers' if spec.shape else 'a number'}, got {_type(v)}")
        return np.asarray(value, dtype=spec.dtype).reshape(shape)
    if spec.dtype == "bool":
        for v in flat:
            if not isinstance(v, bool):
                raise RequestError(field, f"must be true or false, got {_type(v)}")
        return np.asarray(value, dtype=bool).reshape(shape)
    raise RequestError(field, f"the model's input dtype {spec.dtype} cannot be sent as JSON")


def _shape_of(value: Any, rank: int, field: str) -> Tuple[int, ...]:
    """The shape of a nested list of rank ``rank`` (rectangular), or a RequestError naming ``field``."""
    shape: List[int] = []
    level = [value]
    for depth in range(rank):
        if not all(isinstance(v, list) for v in level):
            odd = next(v for v in level if not isinstance(v, list))
            raise RequestError(field, f"must be a list nested {rank} deep, got {_type(odd)} at depth {depth}")
        lengths = {len(v) for v in level}
        if len(lengths) != 1:
            raise RequestError(field, "ragged: its lists must have equal lengths")
        length = lengths.pop()
        if length == 0:
            raise RequestError(field, "empty list")
        shape.append(length)
        level = [item for v in level for item in v]
    if any(isinstance(v, (list, dict)) for v in level):
        raise RequestError(field, f"nested deeper than the model's {rank} dimension(s)")
    return tuple(shape)


def batch_key(arrays: Dict[str, np.ndarray]) -> Tuple:
    """Instances with equal keys stack into one batch (equal shapes per input)."""
    return tuple(sorted((name, a.shape) for name, a in arrays.items()))


def stack(instances: Sequence[Dict[str, np.ndarray]]) -> Dict[str, np.ndarray]:
    """Instances of one :func:`batch_key` as one batch per input."""
    return {name: np.stack([i[name] for i in instances]) for name in instances[0]}


def rows(outputs: Dict[str, np.ndarray], count: int) -> List[Dict[str, Any]]:
    """A batch's outputs as ``count`` JSON-ready rows, one object per instance (strings decoded as UTF-8)."""
    return [{name: _jsonable(np.asarray(value)[i]) for name, value in sorted(outputs.items())} for i in range(count)]


def _jsonable(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return [_jsonable(v) for v in value]
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, np.generic):
        return value.item()
    return value


def _type(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", int: "an integer",
            float: "a number", type(None): "null"}.get(type(value), type(value).__name__)
