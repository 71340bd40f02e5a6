"""The run report's parts; :mod:`components.report.report_lib` puts them together (``write_report``, ``load_result``).

* :mod:`.inputs`   – the artifacts read into a typed :class:`~.inputs.ReportInputs`: title and run settings,
  benchmark results, parameter count, pretraining facts and history, datagen statistics, MLMD ids.
* :mod:`.scores`   – the arithmetic: the Table-2 row and its Avg, the gains over baseline arms, the step-0 checks.
* :mod:`.sections` – what the report says: one function per section, from the inputs and scores to a
  :class:`~.document.Document`.
* :mod:`.data_gate` – the data gate's result (``gate.json``) in words and tables: the report's "Data gate" section
  and the model card's.
* :mod:`.document` – the document model (sections of paragraphs, tables and images) and its two renderers,
  Markdown and self-contained HTML.
* :mod:`.curves`   – the plots: pretraining curves, the data gate's distributions (matplotlib, imported only to
  draw).

Nothing is re-exported here; import from the module that holds a name. No TFX import; TensorFlow only lazily
(the parameter count, the history reader, ``gs://`` paths).
"""
