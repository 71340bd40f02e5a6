"""Typed-config machinery shared by every section: errors, checks, and plain data → dataclass coercion.

Kept free of TensorFlow and TFX so the CLI, the components and the Trainer can all import it cheaply.
"""
from __future__ import annotations

import dataclasses
import json
import types
import typing
from typing import Any, Dict


class ConfigError(ValueError):
    """A configuration value is missing, unknown or out of range."""


def check(ok: Any, name: str, value: Any, want: str) -> None:
    """Raise :class:`ConfigError` naming the dotted key when ``ok`` is false."""
    if not ok:
        raise ConfigError(f"config {name}={value!r} is invalid: expected {want}")


class Section:
    """Mixin of the typed sections: dict / canonical-JSON round trips with unknown keys rejected.

    Canonical JSON (sorted keys, no spaces) is what a node receives as its parameter, so the same
    settings always give the same TFX cache key.
    """

    def to_dict(self) -> Dict[str, Any]:
        return dataclasses.asdict(self)

    def to_json(self) -> str:
        return canonical_json(self.to_dict())

    @classmethod
    def from_dict(cls, data: Dict[str, Any], prefix: str = ""):
        return from_dict(cls, data, prefix)

    @classmethod
    def from_json(cls, text: str, prefix: str = ""):
        return from_dict(cls, json.loads(text), prefix)


def canonical_json(data: Any) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"))


def from_dict(cls: type, data: Dict[str, Any], prefix: str = ""):
    """Build a (nested) dataclass from plain data, rejecting unknown keys by their dotted name."""
    if not isinstance(data, dict):
        raise ConfigError(f"config {prefix.rstrip('.') or cls.__name__} must be a mapping, got {data!r}")
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - names)
    if unknown:
        raise ConfigError(f"unknown config key(s): {', '.join(prefix + k for k in unknown)}")
    return cls(**{key: coerce(hints[key], value, prefix + key) for key, value in data.items()})


def field_choices(cls: type, name: str):
    """The ``choices`` a field declares in its metadata (used to tell the value "none" from null)."""
    for f in dataclasses.fields(cls):
        if f.name == name:
            return tuple(f.metadata.get("choices", ()))
    return ()


def coerce(hint: Any, value: Any, name: str) -> Any:
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        inner = [a for a in args if a is not type(None)]
        return coerce(inner[0], value, name)
    if dataclasses.is_dataclass(hint):
        if isinstance(value, hint):
            return value
        return from_dict(hint, value, name + ".")
    if origin in (dict, Dict):
        val_t = args[1] if args else Any
        if not isinstance(value, dict):
            raise ConfigError(f"config {name} must be a mapping, got {value!r}")
        return {k: coerce(val_t, v, f"{name}.{k}") for k, v in value.items()}
    if origin in (list, typing.List):
        item_t = args[0] if args else Any
        if isinstance(value, str) and value.strip().startswith("["):  # --set key=[a, b] (YAML flow list)
            import yaml

            try:
                value = yaml.safe_load(value)
            except yaml.YAMLError:
                raise ConfigError(f"config {name}={value!r} is not a valid list") from None
        elif isinstance(value, str):
            value = [v.strip() for v in value.split(",") if v.strip()]
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"config {name} must be a list, got {value!r}")
        return [coerce(item_t, v, name) for v in value]
    return _coerce_scalar(hint, value, name)


def _coerce_scalar(hint: Any, value: Any, name: str) -> Any:
    if hint is Any:
        return value
    try:
        if value is None:
            raise TypeError(value)
        if hint is bool:
            if isinstance(value, str):
                lowered = value.strip().lower()
                if lowered in ("1", "true", "yes", "on"):
                    return True
                if lowered in ("0", "false", "no", "off"):
                    return False
                raise ValueError(value)
            return bool(value)
        if hint is int:
            if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
                raise ValueError(value)
            return int(value)
        if hint is float:
            return float(value)
        if hint is str:
            return str(value)
    except (TypeError, ValueError):
        raise ConfigError(f"config {name}={value!r} is not a valid {getattr(hint, '__name__', hint)}") from None
    return value
