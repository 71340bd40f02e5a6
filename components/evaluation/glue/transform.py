"""tf.Transform text preprocessing for fine-tuning: raw ``text_a`` / ``text_b`` → ALBERT inputs in TF ops.

:func:`make_preprocessing_fn` returns a tensorflow-transform ``preprocessing_fn`` that maps raw
strings to ``input_ids`` / ``input_mask`` / ``segment_ids`` (int64 ``[B, max_seq_length]``) inside
the TF graph, so a model exported with the Transform graph in front of it
(:func:`export_serving_model`) takes raw text. The graph reproduces, op by op,
:func:`components.evaluation.glue.glue_data.convert_glue_examples` with
:class:`components.text.tokenization.AlbertTokenizer`:

1. ``preprocess_text`` (:func:`normalize_text`): collapse whitespace (Python's ``str.split()``
   whitespace set), NFKD (``tensorflow_text.normalize_utf8``),
   drop combining characters, lowercase (``tf.strings.lower(encoding="utf-8")``).
   "Combining" is Python's ``unicodedata.combining(c) != 0`` (canonical combining class), *not*
   ``\\p{Mn}``: the two differ on a few hundred code points (e.g. U+034F is Mn with class 0), so the
   character class is built from ``unicodedata``'s, as the in-graph tokenizer's classes are
   (:func:`components.text.graph_tokenizer.char_class`: stored in ``unicode_ranges.json``, checked equal to
   ``unicodedata``). Likewise the whitespace class (``str.isspace``) and the digit class of step 3
   (``str.isdigit``).
2. ``tensorflow_text.SentencepieceTokenizer`` built from the bytes of ``spm.model`` (the model's own
   normalizer runs inside the op, as in the Python library).
3. ALBERT's digits-comma split (official ``encode_pieces``): a piece longer than one character
   ending in ``<digit>,`` (``▁1990,``) is re-encoded without the comma (and without ``▁``; the
   leading ``▁`` of the re-encoding is removed when the piece had none) and ``,`` appended.
4. ``[CLS] a [SEP] (b [SEP])`` with longest-first truncation to ``max_seq_length`` (closed form
   of :func:`components.evaluation.glue.glue_data.truncate_pair`: ties drop from ``b``), zero padding.

Known differences from the Python path (documented, none on the bundled GLUE samples — see
``tests/test_eval_transform.py``): ``tf.strings.lower`` applies ICU *simple* case mapping per code
point where Python's ``str.lower`` uses full mappings (only ``İ`` (U+0130) maps to two code points,
and NFKD has already decomposed it); ICU's NFKD tables may be a different Unicode version than
Python's ``unicodedata``.

Labels are not part of the Transform graph: it is pure featurisation, so the serving signature
needs nothing but text.
"""
from __future__ import annotations

import os
import tempfile
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple


import numpy as np
import pyarrow as pa
import tensorflow as tf
import tensorflow_text as tf_text
from tensorflow_metadata.proto.v0 import schema_pb2

from components.beam_options import LOCAL_RUNNER
from components.text.graph_tokenizer import char_class
from trainer.export import Untracked

__all__ = [
    "TEXT_A",
    "TEXT_B",
    "FEATURE_KEYS",
    "raw_feature_spec",
    "text_keys",
    "normalize_text",
    "AlbertTfTokenizer",
    "make_preprocessing_fn",
    "truncation_lengths",
    "analyze_and_transform",
    "transform_rows",
    "export_serving_model",
    "encode_inputs",
]

TEXT_A, TEXT_B = "text_a", "text_b"
FEATURE_KEYS = ("input_ids", "input_mask", "segment_ids")
SPIECE_UNDERLINE = "\u2581"
CLS_ID, SEP_ID = 2, 3  # checked against the model by AlbertTokenizer.check_special_ids


def normalize_text(text: tf.Tensor, lower: bool = True) -> tf.Tensor:
    """``components.text.normalize.preprocess_text`` (remove_space, no accents) in TF string ops."""
    ws = char_class("space")  # str.isspace
    text = tf.strings.regex_replace(text, f"^{ws}+|{ws}+$", "")
    text = tf.strings.regex_replace(text, f"{ws}+", " ")
    text = tf_text.normalize_utf8(text, "NFKD")
    text = tf.strings.regex_replace(text, char_class("combining"), "")  # unicodedata.combining != 0
    if lower:
        text = tf.strings.lower(text, encoding="utf-8")
    return text


def _rows_and_positions(row_splits: tf.Tensor, size: tf.Tensor) -> Tuple[tf.Tensor, tf.Tensor]:
    """(row, position within that row) of each of ``size`` values split by ``row_splits``: the row is
    ``RaggedTensor.value_rowids`` in one op, the position the value's offset from its row's start."""
    index = tf.range(size, dtype=row_splits.dtype)
    rows = tf.searchsorted(row_splits[1:], index, side="right", out_type=row_splits.dtype)
    return rows, index - tf.gather(row_splits, rows)


class AlbertTfTokenizer:
    """Normalise → SentencePiece → digits-comma split, all in TF ops; ``tokenize`` gives ragged ids.

    The ids are computed on the flat values and row splits (gathers, one scatter), not with ragged
    broadcasting or ``tf.ragged.boolean_mask``: those build hundreds of shape-checking ops, and this
    graph is traced, saved, loaded and served several times for every GLUE task (tf.Transform, the
    serving export, TFMA)."""

    def __init__(self, model_proto: bytes, do_lower_case: bool = True):
        self.do_lower_case = do_lower_case
        self.sp = tf_text.SentencepieceTokenizer(model=model_proto, out_type=tf.string)

    def _ids(self, pieces: tf.Tensor) -> tf.Tensor:
        return tf.cast(self.sp.string_to_id(pieces), tf.int64)

    def tokenize(self, text: tf.Tensor) -> tf.RaggedTensor:
        pieces = self.sp.tokenize(normalize_text(text, self.do_lower_case))  # [B, (P)] strings
        flat = pieces.flat_values
        n = tf.size(flat, out_type=tf.int64)
        # Digits-comma split: len(piece) > 1 and piece[-1] == "," and piece[-2].isdigit().
        quirk = tf.logical_and(tf.strings.length(flat, unit="UTF8_CHAR") > 1,
                               tf.strings.regex_full_match(flat, f"(?s).*{char_class('digit')},"))
        quirk_at = tf.reshape(tf.where(quirk), [-1])  # [Q] piece index of each quirk piece, in order
        quirk_pieces = tf.gather(flat, quirk_at)
        q = tf.size(quirk_at, out_type=tf.int64)
        stem = tf.strings.regex_replace(quirk_pieces, ",$", "")  # drop the final ','
        sub = self.sp.tokenize(tf.strings.regex_replace(stem, SPIECE_UNDERLINE, ""))  # [Q, (S)]
        sub_values, sub_splits = sub.flat_values, tf.cast(sub.row_splits, tf.int64)
        s = tf.size(sub_values, out_type=tf.int64)
        sub_rows, sub_position = _rows_and_positions(sub_splits, s)
        # If the piece did not start with '▁' but its re-encoding does: strip that '▁' (drop a lone '▁').
        starts = tf.strings.regex_full_match(quirk_pieces, f"(?s){SPIECE_UNDERLINE}.*")
        fix = tf.logical_and(tf.equal(sub_position, 0), tf.logical_not(tf.gather(starts, sub_rows)))
        fix = tf.logical_and(fix, tf.strings.regex_full_match(sub_values, f"(?s){SPIECE_UNDERLINE}.*"))
        replaced = tf.where(fix, tf.strings.regex_replace(sub_values, f"^{SPIECE_UNDERLINE}", ""), sub_values)
        keep = tf.logical_not(tf.logical_and(fix, tf.equal(replaced, "")))
        kept_ids = self._ids(tf.boolean_mask(replaced, keep))
        kept_rows = tf.boolean_mask(sub_rows, keep)
        kept_count = tf.math.unsorted_segment_sum(tf.ones_like(kept_rows), kept_rows, q)
        # Stitch: every piece becomes a list of ids (itself, or its kept re-encoding then ','), in order.
        piece_len = tf.tensor_scatter_nd_update(tf.ones([n], tf.int64), tf.expand_dims(quirk_at, 1), kept_count + 1)
        piece_splits = tf.concat([tf.zeros([1], tf.int64), tf.cumsum(piece_len)], 0)
        quirk_start = tf.gather(piece_splits, quirk_at)
        kept_splits = tf.concat([tf.zeros([1], tf.int64), tf.cumsum(kept_count)], 0)
        kept_pos = (tf.gather(quirk_start, kept_rows) + tf.range(tf.size(kept_rows, out_type=tf.int64))
                    - tf.gather(kept_splits, kept_rows))
        single = tf.logical_not(quirk)
        positions = tf.concat([tf.boolean_mask(piece_splits[:-1], single), kept_pos, quirk_start + kept_count], 0)
        values = tf.concat([tf.boolean_mask(self._ids(flat), single), kept_ids,
                            tf.fill(tf.expand_dims(q, 0), self._ids(tf.constant(",")))], 0)
        ids = tf.scatter_nd(tf.expand_dims(positions, 1), values, piece_splits[-1:])
        return tf.RaggedTensor.from_row_splits(ids, tf.gather(piece_splits, tf.cast(pieces.row_splits, tf.int64)),
                                               validate=False)


def truncation_lengths(len_a: tf.Tensor, len_b: tf.Tensor, budget: int):
    """Lengths kept by longest-first truncation of a pair to ``budget`` tokens (ties drop from b).

    Closed form of :func:`components.evaluation.glue.glue_data.truncate_pair`: nothing if ``a + b <= budget``;
    else the shorter is kept whole when it fits in half the budget (the longer gets the rest),
    otherwise a keeps ``ceil(budget / 2)`` and b ``floor(budget / 2)``.
    """
    budget = tf.constant(budget, len_a.dtype)
    fits = len_a + len_b <= budget
    short = tf.minimum(len_a, len_b)
    half_lo, half_hi = budget // 2, budget - budget // 2
    short_fits = 2 * short <= budget
    a_short = len_a <= len_b
    new_a = tf.where(short_fits, tf.where(a_short, len_a, budget - len_b), half_hi)
    new_b = tf.where(short_fits, tf.where(a_short, budget - len_a, len_b), half_lo)
    return tf.where(fits, len_a, new_a), tf.where(fits, len_b, new_b)


def _columns(ids: tf.RaggedTensor, kept: tf.Tensor, offset: tf.Tensor):
    """(indices ``[K, 2]``, values ``[K]``) placing the first ``kept[r]`` ids of each row ``r`` of ``ids`` at
    columns ``offset[r]``, ``offset[r] + 1``, ... of row ``r``."""
    rows, position = _rows_and_positions(tf.cast(ids.row_splits, tf.int64), tf.size(ids.flat_values, out_type=tf.int64))
    keep = position < tf.gather(kept, rows)
    rows = tf.boolean_mask(rows, keep)
    return (tf.stack([rows, tf.gather(offset, rows) + tf.boolean_mask(position, keep)], 1),
            tf.boolean_mask(ids.flat_values, keep))


def encode_inputs(tokenizer: AlbertTfTokenizer, text_a: tf.Tensor, text_b: Optional[tf.Tensor],
                  max_seq_length: int) -> Dict[str, tf.Tensor]:
    """``[CLS] a [SEP] (b [SEP])`` → int64 input_ids / input_mask / segment_ids ``[B, max_seq_length]``
    (each token scattered to its column: no ragged concatenation)."""
    a = tokenizer.tokenize(text_a)
    batch = tf.size(text_a, out_type=tf.int64)
    rows = tf.range(batch)
    if text_b is None:
        la = tf.minimum(a.row_lengths(), max_seq_length - 2)
        total = la + 2
    else:
        b = tokenizer.tokenize(text_b)
        la, lb = truncation_lengths(a.row_lengths(), b.row_lengths(), max_seq_length - 3)
        total = la + lb + 3
    cls, sep = (tf.fill([batch], tf.constant(i, tf.int64)) for i in (CLS_ID, SEP_ID))
    parts = [(tf.stack([rows, tf.zeros_like(rows)], 1), cls), _columns(a, la, tf.ones_like(rows)),
             (tf.stack([rows, la + 1], 1), sep)]
    if text_b is not None:
        parts += [_columns(b, lb, la + 2), (tf.stack([rows, total - 1], 1), sep)]
    indices, values = (tf.concat(list(x), 0) for x in zip(*parts))
    input_ids = tf.scatter_nd(indices, values, tf.stack([batch, tf.constant(max_seq_length, tf.int64)]))
    input_ids.set_shape([None, max_seq_length])
    columns = tf.range(max_seq_length, dtype=tf.int64)[tf.newaxis, :]
    in_sequence = columns < total[:, tf.newaxis]
    second = columns >= (la + 2)[:, tf.newaxis] if text_b is not None else tf.zeros_like(in_sequence)
    return {
        "input_ids": input_ids,
        "input_mask": tf.cast(in_sequence, tf.int64),
        "segment_ids": tf.cast(tf.logical_and(in_sequence, second), tf.int64),
    }


def text_keys(has_text_b: bool) -> List[str]:
    """The raw string features, in order: ``text_a`` (and ``text_b`` for pair tasks)."""
    return [TEXT_A] + ([TEXT_B] if has_text_b else [])


def raw_feature_spec(has_text_b: bool) -> Dict[str, tf.io.FixedLenFeature]:
    return {k: tf.io.FixedLenFeature([], tf.string) for k in text_keys(has_text_b)}


def make_preprocessing_fn(model_proto: bytes, max_seq_length: int, do_lower_case: bool = True,
                          has_text_b: bool = False) -> Callable[[Mapping[str, tf.Tensor]], Dict[str, tf.Tensor]]:
    """A tf.Transform ``preprocessing_fn``: {text_a[, text_b]} (string ``[B]``) → ALBERT inputs.

    No analyzers are needed (the vocabulary is the SentencePiece model, embedded in the graph as
    the op's ``model`` attribute), so the Transform graph is the same for any dataset.
    """
    if max_seq_length < 3:
        raise ValueError(f"max_seq_length must be >= 3, got {max_seq_length}")
    model_proto = bytes(model_proto)

    def preprocessing_fn(inputs):
        tokenizer = AlbertTfTokenizer(model_proto, do_lower_case)
        text_a = tf.reshape(inputs[TEXT_A], [-1])
        text_b = tf.reshape(inputs[TEXT_B], [-1]) if has_text_b else None
        return encode_inputs(tokenizer, text_a, text_b, max_seq_length)

    return preprocessing_fn


# ---------------------------------------------------------------------------------------------
# Beam: analyze + transform (in memory, FnApiRunner) and write the Transform graph


ROW_INDEX = "__row_index__"
RECORD_BATCH_ROWS = 1024  # rows per Arrow RecordBatch fed to tf.Transform


def _record_batches(rows: Sequence[Mapping[str, str]], has_text_b: bool, batch_rows: int = RECORD_BATCH_ROWS):
    """The rows as Arrow RecordBatches and the ``TensorAdapterConfig`` that reads them (tf.Transform's TFXIO input).

    Each text feature is a ``large_list<large_binary>`` column holding one value per row, read as a dense string
    tensor ``[B]`` (what ``tfxio.TFExampleRecord`` decodes a ``FixedLenFeature([], tf.string)`` to, without
    going through serialized ``tf.Example``s); ``__row_index__`` is an int64 column of the same shape that the
    tensor representations leave out, so only the pass-through sees it."""
    from tfx_bsl.public import tfxio  # lazy: tfx_bsl (1.1 s)

    keys = text_keys(has_text_b)
    data = _encoded_rows(rows, has_text_b)
    text_type, index_type = pa.large_list(pa.large_binary()), pa.large_list(pa.int64())
    schema = pa.schema([pa.field(k, text_type) for k in keys] + [pa.field(ROW_INDEX, index_type)])
    batches = []
    for start in range(0, len(data), batch_rows):
        chunk = data[start:start + batch_rows]
        columns = [pa.array([[r[k]] for r in chunk], type=text_type) for k in keys]
        columns.append(pa.array([[i] for i in range(start, start + len(chunk))], type=index_type))
        batches.append(pa.RecordBatch.from_arrays(columns, schema=schema))
    representations = {k: schema_pb2.TensorRepresentation(
        dense_tensor=schema_pb2.TensorRepresentation.DenseTensor(column_name=k, shape=schema_pb2.FixedShape()))
        for k in keys}
    return batches, tfxio.TensorAdapterConfig(schema, representations)


def _serialized(batch_and_unary) -> bytes:
    """A transformed ``(RecordBatch, pass-through)`` as one Arrow IPC stream (a TFRecord's record)."""
    batch = batch_and_unary[0]
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, batch.schema) as writer:
        writer.write_batch(batch)
    return sink.getvalue().to_pybytes()


def _read_rows(pattern: str) -> List[Dict[str, np.ndarray]]:
    """The transformed RecordBatches written under ``pattern``, as rows in ``__row_index__`` order."""
    paths = sorted(tf.io.gfile.glob(pattern))
    batches = [batch for record in (tf.data.TFRecordDataset(paths).as_numpy_iterator() if paths else [])
               for batch in pa.ipc.open_stream(record)]
    if not batches:
        return []
    table = pa.Table.from_batches(batches).combine_chunks()
    n = table.num_rows

    def values(name):  # a list<int64> column of equal-length rows → [n, length]
        return np.asarray(table.column(name).chunk(0).flatten()).reshape(n, -1)

    order = np.argsort(values(ROW_INDEX)[:, 0], kind="stable")
    arrays = {k: values(k)[order] for k in table.column_names if k != ROW_INDEX}
    return [{k: v[i] for k, v in arrays.items()} for i in range(n)]


def analyze_and_transform(rows: Sequence[Mapping[str, str]], preprocessing_fn, has_text_b: bool,
                          transform_output_dir: Optional[str] = None, temp_dir: Optional[str] = None
                          ) -> List[Dict[str, np.ndarray]]:
    """Run ``tft_beam.AnalyzeAndTransformDataset`` on in-memory rows (Beam's FnApiRunner, in this process).

    Returns the transformed rows (dicts of numpy arrays) in input order and, with
    ``transform_output_dir``, writes the transform function there (``tft.TFTransformOutput``).
    tf.Transform's TFXIO path end to end: Arrow RecordBatches in (:func:`_record_batches`), RecordBatches out
    (``output_record_batches=True``), written as Arrow IPC records and read back column by column; not its legacy
    instance dicts, which it converts to RecordBatches and back one row at a time. Rows carry an int64
    ``__row_index__`` as a pass-through column (never seen by the graph) so the order can be restored (Beam
    does not promise it).
    """
    import apache_beam as beam  # lazy: apache_beam (1.1 s)
    import tensorflow_transform.beam as tft_beam  # lazy: tensorflow_transform (1.2 s)

    temp_dir = temp_dir or tempfile.mkdtemp(prefix="tft_tmp_")
    batches, adapter_config = _record_batches(rows, has_text_b)
    out_prefix = os.path.join(temp_dir, "transformed", "rows")
    with beam.Pipeline(runner=LOCAL_RUNNER) as pipeline:  # not DirectRunner: components/beam_options.py
        with tft_beam.Context(temp_dir=temp_dir, force_tf_compat_v1=False, passthrough_keys={ROW_INDEX}):
            raw = pipeline | "RecordBatches" >> beam.Create(batches, reshuffle=False)
            (transformed, _), transform_fn = ((raw, adapter_config)
                                              | tft_beam.AnalyzeAndTransformDataset(preprocessing_fn,
                                                                                    output_record_batches=True))
            if transform_output_dir:
                _ = transform_fn | tft_beam.WriteTransformFn(transform_output_dir)
            _ = (transformed
                 | "ToArrowIpc" >> beam.Map(_serialized)
                 | "Write" >> beam.io.WriteToTFRecord(out_prefix, file_name_suffix=".tfrecord"))
    return _read_rows(out_prefix + "*.tfrecord")


def _encoded_rows(rows: Sequence[Mapping[str, str]], has_text_b: bool) -> List[Dict[str, bytes]]:
    keys = text_keys(has_text_b)
    return [{k: (r[k] if isinstance(r[k], bytes) else str(r[k]).encode("utf-8")) for k in keys} for r in rows]


def transform_rows(rows: Sequence[Mapping[str, str]], transform_output_dir: str, has_text_b: bool,
                   batch_size: int = 1024) -> List[Dict[str, np.ndarray]]:
    """Rows through a Transform graph already written (``TFTransformOutput.transform_raw_features``), in
    process: what :func:`analyze_and_transform` returns for them, without a Beam pipeline."""
    import tensorflow_transform as tft  # lazy: tensorflow_transform (0.05 s)

    tft_output = tft.TFTransformOutput(transform_output_dir)
    keys = text_keys(has_text_b)
    data = _encoded_rows(rows, has_text_b)
    out: List[Dict[str, np.ndarray]] = []
    for start in range(0, len(data), batch_size):
        chunk = data[start:start + batch_size]
        feats = tft_output.transform_raw_features({k: tf.constant([r[k] for r in chunk]) for k in keys})
        arrays = {k: feats[k].numpy() for k in FEATURE_KEYS}
        out.extend({k: arrays[k][i] for k in FEATURE_KEYS} for i in range(len(chunk)))
    return out


# ---------------------------------------------------------------------------------------------
# Serving: Transform graph + fine-tuned classifier, signatures on raw text


class _ServingModule(tf.Module):
    def __init__(self, model, tft_layer, has_text_b: bool, num_labels: int, labels: Sequence[str] = ()):
        super().__init__()
        # The classifier's variables are tracked, not the Keras model: a tracked Keras model makes
        # tf.saved_model.save serialize each of its layers for Keras reloading (tracing their call functions),
        # seconds per export that nothing here loads. The Transform layer stays tracked (its tables and assets).
        self.model_variables = list(model.variables)
        self._model = Untracked(model)
        self.tft_layer = tft_layer
        self._has_text_b = has_text_b
        self._num_labels = num_labels
        self._labels = [str(x) for x in labels]

    def outputs(self, raw: Dict[str, tf.Tensor], classify: bool = False) -> Dict[str, tf.Tensor]:
        """The classifier's outputs; ``classify`` adds the common ``classify`` signature's (task_serving.py):
        ``label``, ``label_id``, ``scores``, or ``score`` for a regression task."""
        feats = self.tft_layer(raw)
        inputs = {k: tf.cast(feats[k], tf.int32) for k in FEATURE_KEYS}
        logits = self._model.model(inputs, training=False)["logits"]
        if self._num_labels == 1:
            return {"logits": logits, "predictions": logits[:, 0], **({"score": logits[:, 0]} if classify else {})}
        probs = tf.nn.softmax(logits, axis=-1)
        out = {"logits": logits, "probabilities": probs, "class_ids": tf.argmax(logits, axis=-1)}
        if self._num_labels == 2:
            out["positive_probability"] = probs[:, 1]
        if classify:
            label_id = tf.argmax(logits, axis=-1, output_type=tf.int32)
            out.update({"label_id": label_id, "scores": probs,
                        "label": tf.gather(tf.constant(self._labels or [""] * self._num_labels), label_id)})
        return out


def export_serving_model(model, transform_output_dir: str, export_dir: str, has_text_b: bool,
                         num_labels: int, labels: Sequence[str] = (), tokenizer=None) -> str:
    """SavedModel = Transform graph (``TFTransformOutput.transform_features_layer()``) + ``model``.

    Signatures: ``serving_default`` takes raw strings ``text_a`` (and ``text_b``), shape ``[None]``;
    ``serve_tf_examples`` takes serialized ``tf.Example``s with those features (what TFMA / the TFX
    Evaluator feed). Outputs: ``logits``; classification adds ``probabilities``, ``class_ids`` and,
    for two labels, ``positive_probability``; regression adds ``predictions``. ``serving_default`` also gives the
    common ``classify`` outputs (``label`` from ``labels``, ``label_id``, ``scores``; regression ``score``).
    ``tokenizer``: a :class:`~components.text.graph_tokenizer.GraphTokenizer` saved as the model's ``tokenizer``
    (as every task model's), so a server counts a text's pieces with the graph's own tokenization.
    """
    import tensorflow_transform as tft  # lazy: tensorflow_transform (0.05 s)

    tft_output = tft.TFTransformOutput(transform_output_dir)
    module = _ServingModule(model, tft_output.transform_features_layer(), has_text_b, num_labels, labels)
    if tokenizer is not None:
        module.tokenizer = tokenizer
    keys = text_keys(has_text_b)
    raw_spec = raw_feature_spec(has_text_b)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name=k) for k in keys], autograph=False)
    def serve_text(*texts):
        return module.outputs(dict(zip(keys, texts)), classify=True)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="examples")], autograph=False)
    def serve_tf_examples(examples):
        return module.outputs(tf.io.parse_example(examples, raw_spec))

    signatures = {"serving_default": serve_text.get_concrete_function(),
                  "serve_tf_examples": serve_tf_examples.get_concrete_function()}
    tf.saved_model.save(module, export_dir, signatures=signatures)
    return export_dir
