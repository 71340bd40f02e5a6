"""Reading a compiled pipeline spec: the one place that knows its JSON layout.

``compile`` writes a Vertex ``PipelineJob`` JSON (``{"displayName", "pipelineSpec", "runtimeConfig"}``); a KFP
package is the bare ``PipelineSpec`` as YAML (:func:`pipeline.cloud.submit.kfp_package`). Both load here. Specs are
compiled with pipeline-spec schema 2.1 (TFX's ``use_pipeline_spec_2_1``): parameters are typed protobuf
``Value``s in ``runtimeConfig.parameterValues`` and ``runtimeValue.constant``, the only form the open-source KFP v2
driver fills. Schema 2.0 (``parameters`` with ``stringValue``/``intValue``) is still read, so an old spec can be
named in an error rather than misread.
"""
from __future__ import annotations

import json
from typing import Any, Dict, Optional, Tuple

from config.errors import UserError
from config.schema import ConfigError
from pipeline.settings.orchestration_config import MEMORY_UNITS

SCHEMA_VERSION = "2.1.0"


class SpecError(UserError, ValueError):
    """The file is not a compiled pipeline spec this version can run (a user error: the message says why)."""


def load(path: str) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """(the whole file, its ``PipelineSpec``) of a compiled ``.json`` job or a ``.yaml`` KFP package."""
    import yaml  # lazy: yaml (0.02 s)

    try:
        with open(path) as f:
            text = f.read()
        data = yaml.safe_load(text) if path.endswith((".yaml", ".yml")) else json.loads(text)
    except (OSError, ValueError, yaml.YAMLError) as exc:
        raise SpecError(f"{path}: cannot read a pipeline spec ({str(exc).splitlines()[0][:200]})") from None
    pipeline_spec = data.get("pipelineSpec", data) if isinstance(data, dict) else None
    if not isinstance(pipeline_spec, dict) or "root" not in pipeline_spec or "deploymentSpec" not in pipeline_spec:
        raise SpecError(f"{path} is not a compiled pipeline spec (no pipelineSpec.root/deploymentSpec)")
    return data, pipeline_spec


def constant(parameter: Dict[str, Any]) -> Any:
    """The value of a task's ``runtimeValue`` parameter (2.1 ``constant``, or 2.0 ``constantValue``), else None."""
    runtime = parameter.get("runtimeValue", {})
    if "constant" in runtime:
        return runtime["constant"]
    old = runtime.get("constantValue", {})
    for kind, cast in (("stringValue", str), ("intValue", int), ("doubleValue", float)):
        if kind in old:
            return cast(old[kind])
    return None


def parameter_defaults(data: Dict[str, Any]) -> Dict[str, Any]:
    """The pipeline parameters' compiled values (``runtimeConfig``, then the declared defaults), typed as declared."""
    pipeline_spec = data.get("pipelineSpec", data)
    declared = pipeline_spec.get("root", {}).get("inputDefinitions", {}).get("parameters", {})
    runtime = data.get("runtimeConfig", {})
    values: Dict[str, Any] = {name: d["defaultValue"] for name, d in declared.items() if "defaultValue" in d}
    values.update(runtime.get("parameterValues") or {})
    for name, old in (runtime.get("parameters") or {}).items():
        values[name] = constant({"runtimeValue": {"constantValue": old}})
    return {name: typed(value, declared.get(name, {})) for name, value in values.items()}


def typed(value: Any, declaration: Dict[str, Any]) -> Any:
    """``value`` as its declared ``parameterType`` has it (JSON numbers arrive as floats: 300.0 → 300)."""
    if declaration.get("parameterType") == "NUMBER_INTEGER" and isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def schema_version(pipeline_spec: Dict[str, Any]) -> str:
    return str(pipeline_spec.get("schemaVersion", ""))


def check_schema(path: str, pipeline_spec: Dict[str, Any], why: str) -> None:
    """Refuse a spec of another schema than :data:`SCHEMA_VERSION` (:class:`SpecError` naming ``why``)."""
    found = schema_version(pipeline_spec)
    if found != SCHEMA_VERSION:
        raise SpecError(f"{path} has pipeline-spec schema {found or 'unknown'}, not {SCHEMA_VERSION}: {why}; "
                        f"recompile it with `albert-pipeline compile`")


def _number_and_unit(quantity: str) -> Tuple[float, str]:
    unit = quantity.lstrip("0123456789.")
    return float(quantity[: len(quantity) - len(unit)]), unit


def container_resources(cpu_limit: Optional[str], memory_limit: Optional[str]) -> Dict[str, Any]:
    """A ``PipelineContainerSpec.ResourceSpec`` as the KFP 2 compiler writes it for ``set_cpu_limit`` /
    ``set_memory_limit``: the quantity as given (``resourceCpuLimit``, ``resourceMemoryLimit``) and as a number
    (``cpuLimit`` in CPUs, ``memoryLimit`` in GB), which older backends read."""
    out: Dict[str, Any] = {}
    if cpu_limit:
        number, unit = _number_and_unit(str(cpu_limit))
        out.update(resourceCpuLimit=str(cpu_limit), cpuLimit=number / 1000 if unit == "m" else number)
    if memory_limit:
        number, unit = _number_and_unit(str(memory_limit))
        out.update(resourceMemoryLimit=str(memory_limit), memoryLimit=number * MEMORY_UNITS[unit] / 10**9)
    return out


def set_task_resources(pipeline_spec: Dict[str, Any], limits: Dict[str, Tuple[Optional[str], Optional[str]]],
                       path: str) -> None:
    """Give each named task's container ``(cpu_limit, memory_limit)``; a name that is no container task of the spec
    is a :class:`ConfigError` listing those there are."""
    tasks = pipeline_spec["root"]["dag"]["tasks"]
    executors = pipeline_spec["deploymentSpec"]["executors"]
    containers = {}
    for name, task in tasks.items():
        label = pipeline_spec["components"][task["componentRef"]["name"]].get("executorLabel")
        if label and "container" in executors.get(label, {}):
            containers[name] = executors[label]["container"]
    for name, (cpu, memory) in limits.items():
        if name not in containers:
            raise ConfigError(f"task_resources.{name}: {path} has no container task {name!r} "
                              f"(its container tasks: {', '.join(sorted(containers))})")
        resources = container_resources(cpu, memory)
        if resources:
            containers[name]["resources"] = resources
