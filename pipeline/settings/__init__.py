"""The run's configuration: the sections composed with the presets, YAML and ``--set`` (``configs``), resolved
against what exists (``resolve``: input folders, data spans in ``spans``, the model to continue from in
``continuation``), and where an installed copy finds its bundled files (``home``)."""
