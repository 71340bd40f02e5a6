"""The downstream benchmarks, GLUE, SQuAD v1.1/v2.0 and RACE: from their original files to the official scores.

Pure cores (NumPy and the standard library; importing them loads neither TensorFlow, Beam nor TFX, which
``tests/test_eval_squad.py`` checks). They read each benchmark's files,
featurize examples into fixed-shape int32 arrays with a tokenizer passed in (such as
:class:`components.text.tokenization.AlbertTokenizer`), turn model outputs back into predictions and score them
with the benchmark's official metric definitions:

* :mod:`.glue`    – task registry, TSV readers, pair featurization, GLUE submission files.
* :mod:`.metrics` – accuracy, F1, Matthews correlation, Pearson, Spearman; per-task GLUE scores; arm comparison.
* :mod:`.squad`   – a package, one module per stage: ``reading``, ``alignment``, ``features``, ``decoding``,
  ``scoring``.
* :mod:`.race`    – RACE reader, 4-way multiple-choice featurization, per-level accuracy.
* :mod:`.task_spec`, :mod:`.clue` – any classification task described by a spec (``benchmarks.tasks``), and CLUE's
  tasks in their released formats (classification specs, C3 as RACE examples, CMRC2018 as SQuAD's);
  ``squad.cmrc2018`` is CMRC2018's official character-level scorer.
* :mod:`.score`   – ``albert-pipeline score``: score a predictions file against a dataset.

Fine-tuning and export (these import TensorFlow when loaded):

* :mod:`.heads`, :mod:`.finetune`, :mod:`.init_check` – the official task heads, the fine-tuning loop and seed
  protocol, the step-0 check that fine-tuning starts from the exported encoder.
* :mod:`.run_glue`, :mod:`.run_squad`, :mod:`.run_race`, :mod:`.run_benchmark` – one driver per benchmark and
  the entry point the benchmark nodes call.
* :mod:`.serving`, :mod:`.transform`, :mod:`.tfma_eval` – the raw-text serving export of a GLUE classifier, its
  tf.Transform preprocessing (run as a Beam pipeline) and TFMA on it.
"""
