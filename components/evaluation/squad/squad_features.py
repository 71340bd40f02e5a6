"""SQuAD examples → fixed-shape int32 rows over a sliding window of the context (the features stage).

One row per window: ``[CLS] question [SEP] context-window [SEP]``, windows ``doc_stride`` pieces apart as in the
official ``convert_examples_to_features``; each row's :class:`FeatureMeta` maps it back to its example, with
the official "max context" flags and every piece's character span (:mod:`.alignment`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Sequence, Tuple

import numpy as np

from components.evaluation.squad.alignment import ContextAlignment, align_contexts
from components.evaluation.squad.reading import SquadExample

__all__ = ["FeatureMeta", "convert_squad_examples"]

_CONTEXT_BLOCK = 512                          # contexts aligned per call by convert_squad_examples


@dataclass
class FeatureMeta:
    """How one window (feature row) maps back to its example."""
    example_index: int
    qid: str
    window_index: int
    doc_offset: int            # feature position of the first context piece (len(query) + 2)
    doc_start: int             # index (in the example's context pieces) of the window's first piece
    doc_length: int            # number of context pieces in the window
    max_context: np.ndarray    # bool [doc_length]: this window is the best context for the piece
    char_spans: np.ndarray     # int32 [doc_length, 2]: original-context [start, end) of each piece (official)


def _windows(n_doc: int, max_tokens_for_doc: int, doc_stride: int) -> List[Tuple[int, int]]:
    spans = []
    start = 0
    while start < n_doc or (n_doc == 0 and not spans):
        length = min(n_doc - start, max_tokens_for_doc)
        spans.append((start, length))
        if start + length >= n_doc:
            break
        start += min(length, doc_stride)
    return spans


def _max_context_flags(windows: List[Tuple[int, int]], w: int) -> np.ndarray:
    start, length = windows[w]
    flags = np.zeros(length, dtype=bool)
    for j in range(length):
        pos = start + j
        best_score, best_w = None, None
        for wi, (s, l) in enumerate(windows):
            if pos < s or pos >= s + l:
                continue
            score = min(pos - s, s + l - 1 - pos) + 0.01 * l
            if best_score is None or score > best_score:
                best_score, best_w = score, wi
        flags[j] = best_w == w
    return flags


def convert_squad_examples(examples: Sequence[SquadExample], tokenizer, max_seq_length: int = 384,
                           doc_stride: int = 128, max_query_length: int = 64, is_training: bool = False
                           ) -> Tuple[Dict[str, np.ndarray], List[FeatureMeta]]:
    """``[CLS] question [SEP] context-window [SEP]`` rows, one per sliding window.

    Returns int32 arrays input_ids/input_mask/segment_ids/p_mask [N, L] and start_positions,
    end_positions, is_impossible [N], plus one :class:`FeatureMeta` per row. ``p_mask`` is the official
    v2 mask of positions that cannot hold an answer: 1 on the question, both ``[SEP]`` and padding, 0 on
    ``[CLS]`` (the no-answer position) and the context. Training rows whose
    window does not contain the answer (and rows of unanswerable questions) point at [CLS]
    (start = end = 0) and have is_impossible = 1; answerable rows have the answer's first/last
    piece positions. Outside training the positions are 0 and is_impossible is the example's flag.
    """
    rows_ids, rows_seg, starts, ends, impossible = [], [], [], [], []
    metas: List[FeatureMeta] = []
    # Questions share paragraphs: contexts are aligned in blocks of _CONTEXT_BLOCK (batched), in file order.
    contexts = list(dict.fromkeys(ex.context for ex in examples))
    block_of = {c: k // _CONTEXT_BLOCK for k, c in enumerate(contexts)}
    cache: Dict[str, Tuple[List[int], ContextAlignment]] = {}
    for ex_i, ex in enumerate(examples):
        q_ids = list(tokenizer.encode(ex.question))[:max_query_length]
        if ex.context not in cache:
            if len(cache) >= 4 * _CONTEXT_BLOCK:
                cache.clear()
            block = contexts[block_of[ex.context] * _CONTEXT_BLOCK:][:_CONTEXT_BLOCK]
            cache.update((c, ([tokenizer.piece_to_id(p) for p in a.pieces], a))
                         for c, a in zip(block, align_contexts(block, tokenizer)))
        doc_ids, alignment = cache[ex.context]
        spans = alignment.spans
        max_tokens_for_doc = max_seq_length - len(q_ids) - 3
        if max_tokens_for_doc <= 0:
            raise ValueError(f"max_seq_length {max_seq_length} leaves no room for the context after a "
                             f"{len(q_ids)}-piece question (question id {ex.qid})")
        tok_start = tok_end = -1
        if is_training and not ex.is_impossible:
            tok_start, tok_end = alignment.answer_pieces(ex.start_char, ex.end_char)
        windows = _windows(len(doc_ids), max_tokens_for_doc, doc_stride)
        for w, (d_start, d_len) in enumerate(windows):
            ids = [tokenizer.cls_id] + q_ids + [tokenizer.sep_id]
            seg = [0] * len(ids)
            doc_offset = len(ids)
            ids += doc_ids[d_start:d_start + d_len] + [tokenizer.sep_id]
            seg += [1] * (d_len + 1)
            start_pos = end_pos = 0
            row_impossible = int(ex.is_impossible)
            if is_training:
                if ex.is_impossible or tok_start < 0 or tok_start < d_start or tok_end >= d_start + d_len:
                    row_impossible = 1
                else:
                    start_pos = tok_start - d_start + doc_offset
                    end_pos = tok_end - d_start + doc_offset
            rows_ids.append(ids)
            rows_seg.append(seg)
            starts.append(start_pos)
            ends.append(end_pos)
            impossible.append(row_impossible)
            metas.append(FeatureMeta(
                example_index=ex_i, qid=ex.qid, window_index=w, doc_offset=doc_offset,
                doc_start=d_start, doc_length=d_len, max_context=_max_context_flags(windows, w),
                char_spans=spans[d_start:d_start + d_len].copy()))
    n = len(rows_ids)
    input_ids = np.zeros((n, max_seq_length), dtype=np.int32)
    input_mask = np.zeros((n, max_seq_length), dtype=np.int32)
    segment_ids = np.zeros((n, max_seq_length), dtype=np.int32)
    p_mask = np.ones((n, max_seq_length), dtype=np.int32)
    for i, (ids, seg, meta) in enumerate(zip(rows_ids, rows_seg, metas)):
        input_ids[i, :len(ids)] = ids
        input_mask[i, :len(ids)] = 1
        segment_ids[i, :len(seg)] = seg
        p_mask[i, 0] = 0
        p_mask[i, meta.doc_offset:meta.doc_offset + meta.doc_length] = 0
    arrays = {
        "input_ids": input_ids,
        "input_mask": input_mask,
        "segment_ids": segment_ids,
        "p_mask": p_mask,
        "start_positions": np.asarray(starts, dtype=np.int32).reshape(n),
        "end_positions": np.asarray(ends, dtype=np.int32).reshape(n),
        "is_impossible": np.asarray(impossible, dtype=np.int32).reshape(n),
    }
    return arrays, metas
