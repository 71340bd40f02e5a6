"""The RACE node's family (``RaceBenchmark``): 4-way multiple choice, RACE and CLUE's C3.

Pure core: ``race_data`` (reader, featurization, per-level accuracy). Driver: ``run_race``. The component and settings
the benchmark nodes share: ``components.evaluation.benchmark_component`` and
``components.evaluation.benchmark_config``.
"""
