"""Typed-config machinery shared by every section: errors, checks, and plain data → dataclass coercion.

Kept free of TensorFlow and TFX so the CLI, the components and the Trainer can all import it cheaply.
"""
from __future__ import annotations

import copy
import dataclasses
import json
import types
import typing
from typing import Any, Dict

from config.errors import UserError


class ConfigError(UserError, ValueError):
    """A configuration value is missing, unknown or out of range."""


class FrozenConfigError(dataclasses.FrozenInstanceError):
    """An attempt to change a configuration after it was resolved and validated."""


_FROZEN_HINT = ("the configuration is frozen once resolved and validated (pipeline.settings.configs.build_config); "
                "pass the change to build_config as an override instead")


def check(ok: Any, name: str, value: Any, want: str) -> None:
    """Raise :class:`ConfigError` naming the dotted key when ``ok`` is false."""
    if not ok:
        raise ConfigError(f"config {name}={value!r} is invalid: expected {want}")


class Section:
    """Mixin of the typed sections: dict / canonical-JSON round trips with unknown keys rejected, and freezing.

    Canonical JSON (sorted keys, no spaces) is what a node receives as its parameter, so the same
    settings always give the same TFX cache key. :meth:`freeze` makes a section and everything in it
    read-only (:class:`FrozenConfigError` on any assignment, its lists and tables included), so what was
    validated is what runs; a ``copy.copy`` / ``copy.deepcopy`` of a frozen section is a new, unfrozen one.
    """

    def __setattr__(self, name: str, value: Any) -> None:
        if self.__dict__.get("_frozen"):
            raise FrozenConfigError(f"cannot set {type(self).__name__}.{name}: {_FROZEN_HINT}")
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        if self.__dict__.get("_frozen"):
            raise FrozenConfigError(f"cannot delete {type(self).__name__}.{name}: {_FROZEN_HINT}")
        object.__delattr__(self, name)

    def freeze(self):
        """Make this section and every value in it read-only; returns self."""
        for f in dataclasses.fields(self):
            object.__setattr__(self, f.name, _frozen(getattr(self, f.name)))
        object.__setattr__(self, "_frozen", True)
        return self

    @property
    def frozen(self) -> bool:
        return bool(self.__dict__.get("_frozen"))

    def __copy__(self):
        out = object.__new__(type(self))
        out.__dict__.update({k: v for k, v in self.__dict__.items() if k != "_frozen"})
        return out

    def __deepcopy__(self, memo):
        out = object.__new__(type(self))
        memo[id(self)] = out
        out.__dict__.update({k: copy.deepcopy(_thawed(v), memo) for k, v in self.__dict__.items() if k != "_frozen"})
        return out

    def to_dict(self) -> Dict[str, Any]:
        """Plain data (dicts, lists, scalars) of every field: what JSON and the overrides work on."""
        return {f.name: plain_data(getattr(self, f.name)) for f in dataclasses.fields(self)}

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


class FrozenList(list):
    """A list of a frozen configuration: reads like a list (and equals one), refuses every change."""

    def _refuse(self, *args, **kwargs):
        raise FrozenConfigError(f"cannot change the list {list(self)!r}: {_FROZEN_HINT}")

    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse
    append = extend = insert = pop = remove = clear = sort = reverse = _refuse

    def __reduce__(self):  # pickle / copy rebuild it whole instead of appending to it
        return (FrozenList, (list(self),))


class FrozenDict(dict):
    """A table of a frozen configuration (``benchmarks.hparams``): reads like a dict, refuses every change."""

    def _refuse(self, *args, **kwargs):
        raise FrozenConfigError(f"cannot change the table with keys {sorted(self)!r}: {_FROZEN_HINT}")

    __setitem__ = __delitem__ = __ior__ = _refuse
    clear = pop = popitem = setdefault = update = _refuse

    def __reduce__(self):
        return (FrozenDict, (dict(self),))


def _frozen(value: Any) -> Any:
    if isinstance(value, Section):  # a copy: a section shared with others (PAPER_FINETUNE's rows) stays as it is
        return copy.copy(value).freeze()
    if isinstance(value, list):
        return FrozenList(_frozen(v) for v in value)
    if isinstance(value, dict):
        return FrozenDict((k, _frozen(v)) for k, v in value.items())
    return value


def _thawed(value: Any) -> Any:
    if isinstance(value, FrozenList):
        return [_thawed(v) for v in value]
    if isinstance(value, FrozenDict):
        return {k: _thawed(v) for k, v in value.items()}
    return value


def plain_data(value: Any) -> Any:
    """Like ``dataclasses.asdict`` (every field of nested sections), with frozen containers as plain ones."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain_data(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (list, tuple)):
        return [plain_data(v) for v in value]
    if isinstance(value, dict):
        return {k: plain_data(v) for k, v in value.items()}
    return value


def deep_merge(base: Dict[str, Any], over: Dict[str, Any]) -> Dict[str, Any]:
    """``over`` merged into a copy of ``base``: nested mappings merge key by key, anything else replaces."""
    out = copy.deepcopy(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


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
        if isinstance(value, str) and value.strip().startswith("{"):  # --set key={a: 1, b: 2} (YAML flow mapping)
            import yaml  # lazy: on one branch; yaml (0.02 s)

            try:
                value = yaml.safe_load(value)
            except yaml.YAMLError:
                raise ConfigError(f"config {name}={value!r} is not a valid mapping") from None
        if not isinstance(value, dict):
            raise ConfigError(f"config {name} must be a mapping, got {value!r}")
        return {k: coerce(val_t, v, f"{name}.{k}") for k, v in value.items()}
    if origin in (list, typing.List):
        item_t = args[0] if args else Any
        if isinstance(value, str) and value.strip().startswith("["):  # --set key=[a, b] (YAML flow list)
            import yaml  # lazy: on one branch; yaml (0.02 s)

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


def without_defaults(section, data: Dict[str, Any], names) -> Dict[str, Any]:
    """``data`` (the section's fields) less the ``names`` still at their defaults: a setting added later, or a named
    deviation, moves no cache key while it is at its default."""
    defaults = {f.name: f.default for f in dataclasses.fields(section)}
    return {k: v for k, v in data.items() if k not in names or v != defaults[k]}


def replace(section, **changes):
    """``dataclasses.replace`` for sections (kept here so callers need not import dataclasses)."""
    return dataclasses.replace(section, **changes)
