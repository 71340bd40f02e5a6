"""Pure core of ALBERT pretraining-data generation (SOP pairs, n-gram masking, tf.train.Example bytes).

Plain Python + NumPy, no Beam/TFX/TensorFlow, so the same code runs in unit tests, in a Beam DoFn and
in benchmarks, and every random choice comes from an explicit per-document ``np.random.Generator``:
output bytes depend only on (global seed, document id, pass), never on worker count or order.

Modules: ``instances`` (pairing, truncation, masking), ``features`` (TFRecord spec and a hand-written
``tf.train.Example`` encoder), ``stats`` (mergeable statistics), ``generate`` (the per-document entry point).
"""
