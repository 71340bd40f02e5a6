"""SQuAD v1.1 / v2.0, one module per stage; each is imported from its own module (nothing is re-exported here).

* :mod:`.reading`   – the official JSON format: articles, :class:`~.reading.SquadExample`, answer validation.
* :mod:`.alignment` – character ↔ SentencePiece-piece alignment, exactly as the official code computes it.
* :mod:`.features`  – ``[CLS] question [SEP] window [SEP]`` rows over a sliding window (doc stride).
* :mod:`.decoding`  – model outputs → answer text: v1.1 n-best spans, v2.0 beam outputs and null odds, the
  prediction files.
* :mod:`.scoring`   – the official v1.1 and v2.0 metrics (EM/F1, HasAns/NoAns, best threshold).

All five are NumPy and the standard library (alignment and features also take a tokenizer argument); none
imports TensorFlow, Beam or TFX (``tests/test_eval_squad.py`` checks it). The fine-tuning driver that runs a
model over the features is :mod:`components.evaluation.squad.run_squad`.
"""
