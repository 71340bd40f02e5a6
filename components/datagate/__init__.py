"""Pure core of the data gate: statistics of a pretraining span, drift against the last span that passed,
benchmark contamination, the checks, and their ``tensorflow_metadata`` protos (issue 55).

Plain Python + NumPy (the protos module alone imports ``tensorflow_metadata``), no Beam, TFX or TensorFlow, so the
same code runs in unit tests and inside a Beam ``CombineFn`` shell.

Modules:

* ``text_units``: words, content tokens, scripts, language labels and n-gram hashes (what every measure counts);
* ``sketches``: the bounded unigram counter (Misra–Gries);
* ``near_duplicates``: MinHash signatures and the bottom-k sample of documents that finds (near) duplicates;
* ``document_stats``: per-document measures and the mergeable span statistics (``SpanStatsCombiner``);
* ``drift``: Jensen–Shannon divergence, volume ratio, mix distance;
* ``contamination``: GPT-3's 13-gram overlap between benchmark dev passages and the corpus;
* ``checks``: ``GateLimits`` and ``check_span`` (per source location where the documents name theirs);
* ``examples_stats``: the second stage, the pretraining examples per language (``[UNK]`` rate, pieces per
  character, vocabulary coverage, padding and masked shares), node ``ExamplesGate``;
* ``protos``: statistics / schema / anomalies protos.
"""
