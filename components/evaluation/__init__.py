"""Pure (NumPy-only) cores of the downstream benchmarks: GLUE, SQuAD v1.1/v2.0 and RACE.

Each module reads its benchmark's original files, featurizes examples into fixed-shape int32
arrays with :class:`components.text.tokenization.AlbertTokenizer`, turns model outputs back into
predictions and scores them with the benchmark's official metric definitions:

* :mod:`.glue`    – task registry, TSV readers, pair featurization, GLUE submission files.
* :mod:`.metrics` – accuracy, F1, Matthews correlation, Pearson, Spearman; per-task GLUE scores.
* :mod:`.squad`   – SQuAD JSON reader, sliding-window featurization, n-best decoding, EM/F1.
* :mod:`.race`    – RACE reader, 4-way multiple-choice featurization, per-level accuracy.
* :mod:`.score`   – ``albert-pipeline score``: score a predictions file against a dataset.

Nothing here imports TensorFlow, Beam or TFX, so these modules are cheap to test and reuse.
"""
