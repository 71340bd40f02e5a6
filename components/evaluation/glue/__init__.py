"""The GLUE node's family (``GlueBenchmark``): sentence(-pair) classification and regression, GLUE's tasks, CLUE's
classification tasks and any task described by a spec.

Pure cores: ``glue_data`` (GLUE's task registry, TSV readers, featurization, submission files), ``clue`` (CLUE's
files, C3 and CMRC2018 included, as the other families read them), ``task_spec`` (a task as plain configuration:
``benchmarks.tasks``) and ``task_spec_reader`` (reading its files). Driver: ``run_glue``; the raw-text serving model
and TFMA: ``transform``, ``serving``, ``tfma_eval``. The component and settings the benchmark nodes share:
``components.evaluation.benchmark_component`` and ``components.evaluation.benchmark_config``.
"""
