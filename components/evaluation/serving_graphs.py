"""The benchmark's featurisation and decoding of each task family restated in TensorFlow ops, for raw-text serving.

Each function here is the in-graph twin of a NumPy/Python function the benchmark runs, and gives the same result for
the same ids (``tests/test_serving_graphs.py`` compares them on random inputs):

* :func:`pack_classification` — :func:`components.evaluation.glue.glue_data.convert_glue_examples`:
  ``[CLS] a [SEP] (b [SEP])``, the pair truncated longest first (ties drop from b), zero padding.
* :func:`squad_windows` — :func:`components.evaluation.squad.squad_features.convert_squad_examples` outside
  training: the question cut to ``max_query_length`` pieces, the context in windows of
  ``max_seq_length - len(question) - 3`` pieces, ``doc_stride`` apart, each ``[CLS] q [SEP] window [SEP]``, and the
  official "max context" flag of every context piece of every window.
* :func:`decode_spans` — :func:`components.evaluation.squad.decoding.postprocess_squad` (SQuAD v1.1's decoding):
  per window the ``n_best_size`` highest start and end logits over all positions (ties to the lower position, as
  the stable sort), kept when both are context pieces of the window, the start is max-context there, start <= end
  and the span is at most ``max_answer_length`` pieces; the best sum of the two logits (float64) over the
  question's windows, the first one met in (window, start rank, end rank) order on a tie.
* :func:`decode_beam_spans` — :func:`components.evaluation.squad.decoding.postprocess_squad_v2` (SQuAD v2.0's beam
  head, one evaluation) with the dev-tuned null threshold: the same choice over the beam's (start, end) pairs,
  scored by their log-probabilities, and the question unanswered when the minimum ``cls_logits`` of its windows
  is not below the threshold.
* :func:`pack_choices` — :func:`components.evaluation.race.race_data.convert_race_examples`: per option
  ``[CLS] context [SEP] question+option [SEP]`` ("_" in the question replaced by the option, else the option
  appended after a space), the question+option keeping its last ``max_qa_length`` pieces, the context its first
  pieces that fit.

Ids come from a tokenizer object with ``tokenize(strings) -> RaggedTensor`` and
``tokenize_with_offsets(strings) -> (ids, begin, end)`` (byte offsets into the original strings):
:class:`components.text.graph_tokenizer.GraphTokenizer`. Features are int32 ``[rows, max_seq_length]``, what the
task heads take.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

import tensorflow as tf

from components.evaluation.glue.transform import truncation_lengths

__all__ = ["pack_classification", "squad_windows", "check_squad_lengths", "decode_spans", "decode_beam_spans",
           "pack_choices", "qa_texts", "strip_spaces", "CLS_ID", "SEP_ID"]

CLS_ID, SEP_ID = 2, 3  # ALBERT's special ids, checked for both vocabulary kinds (tokenization / vocab_files)
_NO_CANDIDATE = -1e9  # postprocess_squad's score when no span is valid (a candidate must beat it strictly)

Placement = Tuple[tf.Tensor, tf.Tensor]  # (indices [K, 2] as (row, column), values [K])


def _i64(x) -> tf.Tensor:
    return tf.cast(x, tf.int64)


def _place(ids: tf.RaggedTensor, first: tf.Tensor, count: tf.Tensor, column: tf.Tensor) -> Placement:
    """Ids ``first[r] .. first[r] + count[r] - 1`` of each row ``r`` of ``ids``, placed at columns ``column[r]``,
    ``column[r] + 1``, ... of row ``r``."""
    splits, values = _i64(ids.row_splits), _i64(ids.flat_values)
    rows = _i64(ids.value_rowids())
    position = tf.range(tf.size(values, out_type=tf.int64)) - tf.gather(splits, rows)
    start = tf.gather(first, rows)
    keep = tf.logical_and(position >= start, position < start + tf.gather(count, rows))
    rows, position = tf.boolean_mask(rows, keep), tf.boolean_mask(position, keep)
    return tf.stack([rows, tf.gather(column - first, rows) + position], 1), tf.boolean_mask(values, keep)


def _token(token_id: int, column: tf.Tensor) -> Placement:
    """One special token per row at ``column[r]``."""
    rows = tf.range(tf.size(column, out_type=tf.int64))
    return tf.stack([rows, column], 1), tf.fill(tf.shape(rows), tf.constant(token_id, tf.int64))


def _pack(parts: List[Placement], rows: tf.Tensor, length: int, total: tf.Tensor,
          second_from: Optional[tf.Tensor]) -> Dict[str, tf.Tensor]:
    """input_ids / input_mask / segment_ids int32 ``[rows, length]`` from placed ids; the mask covers the first
    ``total[r]`` columns, segment 1 the columns from ``second_from[r]`` within them."""
    indices, values = (tf.concat(list(x), 0) for x in zip(*parts))
    ids = tf.scatter_nd(indices, values, tf.stack([rows, tf.constant(length, tf.int64)]))
    columns = tf.range(length, dtype=tf.int64)[tf.newaxis, :]
    inside = columns < total[:, tf.newaxis]
    second = (tf.logical_and(inside, columns >= second_from[:, tf.newaxis]) if second_from is not None
              else tf.zeros_like(inside))
    out = {"input_ids": tf.cast(ids, tf.int32), "input_mask": tf.cast(inside, tf.int32),
           "segment_ids": tf.cast(second, tf.int32)}
    for v in out.values():
        v.set_shape([None, length])
    return out


def pack_classification(a: tf.RaggedTensor, b: Optional[tf.RaggedTensor], max_seq_length: int
                        ) -> Dict[str, tf.Tensor]:
    """``[CLS] a [SEP] (b [SEP])`` of token ids, as ``convert_glue_examples``."""
    rows = _i64(a.nrows())
    zeros = tf.zeros([rows], tf.int64)
    if b is None:
        la = tf.minimum(_i64(a.row_lengths()), max_seq_length - 2)
        lb, total = zeros, la + 2
    else:
        la, lb = truncation_lengths(_i64(a.row_lengths()), _i64(b.row_lengths()), max_seq_length - 3)
        total = la + lb + 3
    parts = [_token(CLS_ID, zeros), _place(a, zeros, la, zeros + 1), _token(SEP_ID, la + 1)]
    if b is not None:
        parts += [_place(b, zeros, lb, la + 2), _token(SEP_ID, total - 1)]
    return _pack(parts, rows, max_seq_length, total, la + 2 if b is not None else None)


def squad_windows(question: tf.RaggedTensor, context: tf.RaggedTensor, max_seq_length: int, doc_stride: int,
                  max_query_length: int) -> Dict[str, tf.Tensor]:
    """The rows (windows) of ``convert_squad_examples`` for questions and contexts of token ids.

    Returns the features (int32 ``[R, max_seq_length]``, with v2's ``p_mask``: 0 on ``[CLS]`` and the window's
    context, 1 elsewhere) and, per row: ``example`` (its question's index),
    ``doc_start`` (its first context piece, an index into the context's pieces), ``doc_offset`` (the column of that
    piece: question length + 2), ``doc_length``, and ``max_context`` (bool ``[R, max_seq_length]``: true at the
    columns of the context pieces for which this window is the official best context).
    ``max_seq_length - max_query_length - 3`` must be at least 1 (:func:`check_squad_lengths`).
    """
    batch = _i64(question.nrows())
    lq = tf.minimum(_i64(question.row_lengths()), max_query_length)
    n = _i64(context.row_lengths())
    room = max_seq_length - lq - 3  # max_tokens_for_doc
    step = tf.minimum(room, doc_stride)
    windows = tf.where(n <= room, tf.ones_like(n), 1 + (n - room + step - 1) // step)
    example = tf.repeat(tf.range(batch), windows)
    first_row = tf.cumsum(windows, exclusive=True)
    index = tf.range(tf.size(example, out_type=tf.int64)) - tf.gather(first_row, example)  # window index
    q_len, n_e, room_e, step_e = (tf.gather(x, example) for x in (lq, n, room, step))
    start = index * step_e
    length = tf.minimum(n_e - start, room_e)
    rows = tf.size(example, out_type=tf.int64)
    zeros = tf.zeros([rows], tf.int64)
    offset = q_len + 2
    parts = [_token(CLS_ID, zeros), _place(tf.gather(question, example), zeros, q_len, zeros + 1),
             _token(SEP_ID, q_len + 1), _place(tf.gather(context, example), start, length, offset),
             _token(SEP_ID, offset + length)]
    features = _pack(parts, rows, max_seq_length, offset + length + 1, offset)
    # Max context: the window w' of the question (among all of its windows) with the highest
    # min(pos - s', s' + l' - 1 - pos) + 0.01 * l', the first on a tie; float64 as Python's arithmetic.
    most = tf.reduce_max(windows)
    other = tf.range(most)[tf.newaxis, tf.newaxis, :]  # [1, 1, W]
    columns = tf.range(max_seq_length, dtype=tf.int64)[tf.newaxis, :]
    pos = (start[:, tf.newaxis] + columns - offset[:, tf.newaxis])[:, :, tf.newaxis]  # [R, L, 1]
    o_start = other * step_e[:, tf.newaxis, tf.newaxis]
    o_length = tf.minimum(n_e[:, tf.newaxis, tf.newaxis] - o_start, room_e[:, tf.newaxis, tf.newaxis])
    contains = tf.logical_and(tf.logical_and(pos >= o_start, pos < o_start + o_length),
                              other < tf.gather(windows, example)[:, tf.newaxis, tf.newaxis])
    score = (tf.cast(tf.minimum(pos - o_start, o_start + o_length - 1 - pos), tf.float64)
             + 0.01 * tf.cast(o_length, tf.float64))
    score = tf.where(contains, score, tf.constant(-float("inf"), tf.float64))
    best = tf.reduce_max(score, axis=-1, keepdims=True)
    first_best = tf.reduce_min(tf.where(tf.logical_and(contains, tf.equal(score, best)), other, most), axis=-1)
    in_window = tf.logical_and(columns >= offset[:, tf.newaxis], columns < (offset + length)[:, tf.newaxis])
    max_context = tf.logical_and(in_window, tf.equal(first_best, index[:, tf.newaxis]))
    p_mask = tf.cast(tf.logical_not(tf.logical_or(in_window, tf.equal(columns, 0))), tf.int32)  # v2's answer mask
    return {**features, "p_mask": p_mask, "example": example, "doc_start": start, "doc_offset": offset,
            "doc_length": length,
            "max_context": max_context}


def check_squad_lengths(max_seq_length: int, max_query_length: int) -> None:
    """The shortest room a window can have must hold a piece (``convert_squad_examples`` raises otherwise)."""
    if max_seq_length - max_query_length - 3 < 1:
        raise ValueError(f"max_seq_length {max_seq_length} leaves no room for the context after a "
                         f"{max_query_length}-piece question")


def decode_spans(start_logits: tf.Tensor, end_logits: tf.Tensor, windows: Dict[str, tf.Tensor], batch: tf.Tensor,
                 n_best_size: int, max_answer_length: int) -> Dict[str, tf.Tensor]:
    """The best span of each question, as ``postprocess_squad`` (v1.1) chooses it.

    Returns per question: ``found`` (a valid span exists), ``first_piece`` / ``last_piece`` (indices into the
    context's pieces, -1 without a span) and ``score`` (start + end logit, float64; -1e9 without a span)."""
    start64, end64 = tf.cast(start_logits, tf.float64), tf.cast(end_logits, tf.float64)
    length = tf.shape(start64, out_type=tf.int64)[1]
    k = tf.cast(tf.minimum(tf.constant(n_best_size, tf.int64), length), tf.int32)
    top_s = _i64(tf.math.top_k(start64, k).indices)  # [R, k], ties: the lower position
    top_e = _i64(tf.math.top_k(end64, k).indices)
    s = top_s[:, :, tf.newaxis] + 0 * top_e[:, tf.newaxis, :]  # [R, k, k]: start rank, then end rank
    e = top_e[:, tf.newaxis, :] + 0 * top_s[:, :, tf.newaxis]
    score = (tf.gather(start64, top_s, batch_dims=1)[:, :, tf.newaxis]
             + tf.gather(end64, top_e, batch_dims=1)[:, tf.newaxis, :])
    best = _best_span(s, e, score, windows, batch, max_answer_length, floor=_NO_CANDIDATE)
    best["score"] = tf.where(best["found"], best["score"], tf.constant(_NO_CANDIDATE, tf.float64))
    return best


def decode_beam_spans(outputs: Dict[str, tf.Tensor], windows: Dict[str, tf.Tensor], batch: tf.Tensor,
                      max_answer_length: int, null_threshold: float) -> Dict[str, tf.Tensor]:
    """The answer of each question, as ``postprocess_squad_v2`` gives it with ``null_threshold`` (SQuAD v2.0's
    beam head, one evaluation): the best start+end log-probability pair of the beam over the question's windows
    (the first in (window, start beam, end beam) order on a tie), and ``null_odds`` the minimum over its windows of
    ``cls_logits`` (at most 1e6); ``found`` only where a span is valid and ``null_odds < null_threshold``."""
    s = _i64(outputs["start_top_index"])
    k_s = tf.shape(s)[1]
    e = tf.reshape(_i64(outputs["end_top_index"]), [tf.shape(s)[0], k_s, -1])
    e_lp = tf.reshape(tf.cast(outputs["end_top_log_probs"], tf.float64), tf.shape(e))
    score = tf.cast(outputs["start_top_log_probs"], tf.float64)[:, :, tf.newaxis] + e_lp
    s = s[:, :, tf.newaxis] + 0 * e
    best = _best_span(s, e, score, windows, batch, max_answer_length)
    null_odds = tf.minimum(tf.math.unsorted_segment_min(tf.cast(outputs["cls_logits"], tf.float64),
                                                        windows["example"], batch), 1e6)
    answered = tf.logical_and(best["found"], null_odds < null_threshold)
    minus = -tf.ones_like(best["first_piece"])
    return {"found": answered, "first_piece": tf.where(answered, best["first_piece"], minus),
            "last_piece": tf.where(answered, best["last_piece"], minus), "score": best["score"],
            "null_odds": null_odds}


def _best_span(s: tf.Tensor, e: tf.Tensor, score: tf.Tensor, windows: Dict[str, tf.Tensor], batch: tf.Tensor,
               max_answer_length: int, floor: float = -float("inf")) -> Dict[str, tf.Tensor]:
    """Per question, the candidate (start column ``s``, end column ``e``, ``score``, each ``[R, a, b]``) with the
    highest score among the valid ones of its windows: both in the window's context, the start max-context there,
    start <= end, at most ``max_answer_length`` pieces, and above ``floor``; the first in row-major order on a tie."""
    lo = windows["doc_offset"][:, tf.newaxis, tf.newaxis]
    hi = lo + windows["doc_length"][:, tf.newaxis, tf.newaxis]
    shape = tf.shape(s, out_type=tf.int64)
    rows, a, b = shape[0], shape[1], shape[2]
    s_flat = tf.reshape(s, [rows, -1])
    start_ok = tf.reshape(tf.gather(windows["max_context"], s_flat, batch_dims=1), tf.shape(s))
    ok = tf.logical_and(tf.logical_and(s >= lo, s < hi), start_ok)
    ok = tf.logical_and(ok, tf.logical_and(e >= s, e < hi))
    ok = tf.logical_and(ok, tf.logical_and(e - s + 1 <= max_answer_length, score > floor))
    flat = tf.reshape(tf.where(ok, score, tf.constant(-float("inf"), tf.float64)), [-1])  # rows, then a, then b
    segment = tf.repeat(windows["example"], a * b)
    best = tf.math.unsorted_segment_max(flat, segment, batch)
    order = tf.range(tf.size(flat, out_type=tf.int64))
    hit = tf.logical_and(tf.math.is_finite(flat), tf.equal(flat, tf.gather(best, segment)))
    big = tf.size(flat, out_type=tf.int64)
    first = tf.math.unsorted_segment_min(tf.where(hit, order, big), segment, batch)
    found = first < big
    first = tf.where(found, first, tf.zeros_like(first))
    row = first // (a * b)
    s_col = tf.gather(tf.reshape(s, [-1]), first)
    e_col = tf.gather(tf.reshape(e, [-1]), first)
    base = tf.gather(windows["doc_start"] - windows["doc_offset"], row)
    minus = -tf.ones_like(first)
    return {"found": found, "first_piece": tf.where(found, base + s_col, minus),
            "last_piece": tf.where(found, base + e_col, minus), "score": tf.where(found, best, 0.0)}


def strip_spaces(text: tf.Tensor, whitespace_class: str) -> tf.Tensor:
    """``str.strip()`` of each string (``whitespace_class``: an RE2 class of the ``str.isspace`` characters)."""
    return tf.strings.regex_replace(text, f"^{whitespace_class}+|{whitespace_class}+$", "")


def qa_texts(question: tf.Tensor, options: tf.Tensor) -> tf.Tensor:
    """RACE's question+option text per option (``[B]``, ``[B, K]`` → ``[B, K]``): every "_" of the question
    replaced by the option where it has one, else ``question + " " + option``."""
    k = tf.shape(options)[1]
    questions = tf.repeat(question, k)  # [B*K], row-major as options
    flat_options = tf.reshape(options, [-1])
    parts = tf.strings.split(questions, "_")
    rows = parts.value_rowids()
    last = tf.equal(tf.range(tf.size(parts.flat_values, out_type=rows.dtype)) + 1,
                    tf.gather(parts.row_splits[1:], rows))
    filled = tf.where(last, parts.flat_values, parts.flat_values + tf.gather(flat_options, rows))
    joined = tf.strings.reduce_join(parts.with_flat_values(filled), axis=1)
    has_blank = tf.strings.regex_full_match(questions, "(?s).*_.*")
    return tf.reshape(tf.where(has_blank, joined, questions + " " + flat_options), tf.shape(options))


def pack_choices(context: tf.RaggedTensor, qa: tf.RaggedTensor, num_options: tf.Tensor, max_seq_length: int,
                 max_qa_length: int) -> Dict[str, tf.Tensor]:
    """``[CLS] context [SEP] qa [SEP]`` per option, as ``convert_race_examples``: ``context`` ``[B, (T)]``,
    ``qa`` ``[B*K, (T)]`` (options of a question consecutive); features ``[B*K, max_seq_length]``."""
    max_qa_length = min(max_qa_length, max_seq_length - 3)
    ctx = tf.gather(context, tf.repeat(tf.range(_i64(context.nrows())), num_options))
    rows = _i64(qa.nrows())
    zeros = tf.zeros([rows], tf.int64)
    n_qa = _i64(qa.row_lengths())
    l_qa = tf.minimum(n_qa, max_qa_length)
    l_ctx = tf.minimum(_i64(ctx.row_lengths()), max_seq_length - 3 - l_qa)
    parts = [_token(CLS_ID, zeros), _place(ctx, zeros, l_ctx, zeros + 1), _token(SEP_ID, l_ctx + 1),
             _place(qa, n_qa - l_qa, l_qa, l_ctx + 2), _token(SEP_ID, l_ctx + l_qa + 2)]
    return _pack(parts, rows, max_seq_length, l_ctx + l_qa + 3, l_ctx + 2)
