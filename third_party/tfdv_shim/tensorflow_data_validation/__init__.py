"""Import stand-in for ``tensorflow_data_validation`` 1.21, which has no Linux wheel.

Why it exists: TFX 1.21's Trainer (and Transform) executors ``import tensorflow_data_validation``
at module load and use a few of its names in annotations, but only *call* it from
StatisticsGen/SchemaGen/ExampleValidator, which albert-tfx does not use. Every public name
resolves to a placeholder type so those imports succeed; using one (calling it, reading an
attribute of it) raises immediately, so nothing can silently compute wrong statistics.
Remove this package (and the override in pyproject.toml) once TFDV publishes a Linux wheel
matching the pinned TFX.
"""

__version__ = "0.0.0+albert-tfx-shim"

_MESSAGE = (
    "tensorflow_data_validation.{name} is unavailable: albert-tfx ships only an import stand-in "
    "(third_party/tfdv_shim) because TFDV 1.21 has no Linux wheel. StatisticsGen, SchemaGen and "
    "ExampleValidator cannot run in this environment."
)


class _UnavailableMeta(type):
    def __getattr__(cls, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        raise NotImplementedError(_MESSAGE.format(name=f"{cls.__name__}.{attr}"))

    def __call__(cls, *args, **kwargs):
        raise NotImplementedError(_MESSAGE.format(name=cls.__name__))


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    return _UnavailableMeta(name, (), {"__module__": __name__})
