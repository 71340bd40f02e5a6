"""The in-graph featurisation and decoding of raw-text task models (components/evaluation/serving_graphs.py) against
the benchmark's own NumPy code, on the same ids: GLUE pairs, SQuAD windows with their max-context flags, SQuAD v1.1
span decoding (ties included), RACE option packing."""
import random

import numpy as np
import pytest
import tensorflow as tf

from components.evaluation import serving_graphs as graphs
from components.evaluation.glue.glue_data import GlueExample, convert_glue_examples
from components.evaluation.race.race_data import RaceExample, _qa_text, convert_race_examples
from components.evaluation.squad.decoding import postprocess_squad, postprocess_squad_v2
from components.evaluation.squad.reading import SquadExample
from components.evaluation.squad.squad_features import convert_squad_examples
from components.text.wordpiece import WordPieceTokenizer

LETTERS = "abcdefghij"
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "_"] + list(LETTERS) + ["##" + c for c in LETTERS]


@pytest.fixture(scope="module")
def tok():
    return WordPieceTokenizer.from_serialized("\n".join(VOCAB).encode(), do_lower_case=True)


def _text(rng, words):
    return " ".join("".join(rng.choice(LETTERS) for _ in range(rng.randint(1, 3))) for _ in range(words))


def _ragged(tok, texts):
    return tf.ragged.constant([tok.encode(t) for t in texts], dtype=tf.int64, ragged_rank=1,
                              row_splits_dtype=tf.int64) if texts else None


def test_classification_packing_equals_convert_glue_examples(tok):
    rng = random.Random(0)
    examples = [GlueExample(str(i), _text(rng, rng.randint(0, 30)), _text(rng, rng.randint(0, 30)), "0")
                for i in range(40)]
    for pair in (False, True):
        ex = [GlueExample(e.guid, e.text_a, e.text_b if pair else None, e.label) for e in examples]
        want = convert_glue_examples(ex, tok, 24, "MRPC" if pair else "SST-2")
        got = graphs.pack_classification(_ragged(tok, [e.text_a for e in ex]),
                                         _ragged(tok, [e.text_b for e in ex]) if pair else None, 24)
        for key in ("input_ids", "input_mask", "segment_ids"):
            np.testing.assert_array_equal(got[key].numpy(), want[key], err_msg=f"{key} pair={pair}")


def _squad_examples(rng, count):
    return [SquadExample(str(i), "t", _text(rng, rng.randint(1, 12)), _text(rng, rng.randint(0, 60)))
            for i in range(count)]


def test_squad_windows_and_decoding_equal_the_benchmark(tok):
    rng = random.Random(1)
    examples = _squad_examples(rng, 30)
    length, stride, max_query = 32, 7, 6
    want, metas = convert_squad_examples(examples, tok, length, stride, max_query, is_training=False)
    windows = graphs.squad_windows(_ragged(tok, [e.question for e in examples]),
                                   _ragged(tok, [e.context for e in examples]), length, stride, max_query)
    for key in ("input_ids", "input_mask", "segment_ids", "p_mask"):
        np.testing.assert_array_equal(windows[key].numpy(), want[key], err_msg=key)
    assert windows["example"].numpy().tolist() == [m.example_index for m in metas]
    assert windows["doc_start"].numpy().tolist() == [m.doc_start for m in metas]
    assert windows["doc_offset"].numpy().tolist() == [m.doc_offset for m in metas]
    flags = windows["max_context"].numpy()
    for r, m in enumerate(metas):
        np.testing.assert_array_equal(flags[r, m.doc_offset:m.doc_offset + m.doc_length], m.max_context)
        assert flags[r].sum() == m.max_context.sum()
    # Decoding: integer logits make ties, which both must break the same way.
    np_rng = np.random.default_rng(2)
    for n_best, max_answer in ((20, 30), (3, 2)):
        start = np_rng.integers(-4, 5, size=want["input_ids"].shape).astype(np.float32)
        end = np_rng.integers(-4, 5, size=want["input_ids"].shape).astype(np.float32)
        predictions, _ = postprocess_squad(examples, metas, start, end, n_best, max_answer)
        best = graphs.decode_spans(tf.constant(start), tf.constant(end), windows, tf.constant(len(examples), tf.int64),
                                   n_best, max_answer)
        first, last = best["first_piece"].numpy(), best["last_piece"].numpy()
        for i, ex in enumerate(examples):
            spans = {m.doc_start + j: m.char_spans[j] for m in metas if m.example_index == i
                     for j in range(m.doc_length)}
            text = ex.context[spans[first[i]][0]:spans[last[i]][1]].strip() if first[i] >= 0 else ""
            assert text == predictions[ex.qid], (i, n_best)


def test_squad_v2_beam_decoding_equals_the_benchmark(tok):
    """SQuAD v2.0's beam outputs (random, integer log-probabilities so that ties occur) decoded with and without
    answering: the same text per question as postprocess_squad_v2 with that null threshold."""
    rng = random.Random(4)
    examples = _squad_examples(rng, 24)
    length, stride, max_query = 32, 7, 6
    want, metas = convert_squad_examples(examples, tok, length, stride, max_query, is_training=False)
    windows = graphs.squad_windows(_ragged(tok, [e.question for e in examples]),
                                   _ragged(tok, [e.context for e in examples]), length, stride, max_query)
    np_rng = np.random.default_rng(5)
    rows, k_s, k_e = want["input_ids"].shape[0], 5, 5
    def top(count, size):  # distinct positions per beam, as top_k gives them
        return np.stack([np_rng.permutation(length)[:size] for _ in range(count)]).astype(np.int32)

    outputs = {"start_top_index": top(rows, k_s),
               "start_top_log_probs": -np_rng.integers(0, 4, (rows, k_s)).astype(np.float32),
               "end_top_index": top(rows * k_s, k_e).reshape(rows, k_s * k_e),
               "end_top_log_probs": -np_rng.integers(0, 4, (rows, k_s * k_e)).astype(np.float32),
               "cls_logits": np_rng.normal(size=rows).astype(np.float32)}
    for threshold, max_answer in ((1e9, 30), (0.0, 3)):
        predictions, odds = postprocess_squad_v2(examples, metas, outputs, 20, max_answer, threshold)
        best = graphs.decode_beam_spans({k: tf.constant(v) for k, v in outputs.items()}, windows,
                                        tf.constant(len(examples), tf.int64), max_answer, threshold)
        np.testing.assert_allclose(best["null_odds"].numpy(), [odds[e.qid] for e in examples], rtol=1e-6)
        first, last = best["first_piece"].numpy(), best["last_piece"].numpy()
        for i, ex in enumerate(examples):
            spans = {m.doc_start + j: m.char_spans[j] for m in metas if m.example_index == i
                     for j in range(m.doc_length)}
            text = ex.context[spans[first[i]][0]:spans[last[i]][1]].strip() if first[i] >= 0 else ""
            assert text == predictions[ex.qid], (i, threshold)


def test_choice_packing_equals_convert_race_examples(tok):
    rng = random.Random(3)
    examples = []
    for i in range(12):
        question = _text(rng, rng.randint(0, 8))
        if i % 3 == 0:
            question = question + " _ " + _text(rng, 2) + (" _" if i % 2 else "")
        options = tuple(_text(rng, rng.randint(1, 5)) for _ in range(4))
        examples.append(RaceExample(str(i), "m", _text(rng, rng.randint(0, 40)), question, options, 0))
    want = convert_race_examples(examples, tok, 24, 12)
    qa = graphs.qa_texts(tf.constant([e.question for e in examples]), tf.constant([list(e.options) for e in examples]))
    texts = [t.decode() for t in qa.numpy().reshape(-1)]
    assert texts == [_qa_text(e.question, o) for e in examples for o in e.options]
    got = graphs.pack_choices(_ragged(tok, [e.article for e in examples]),
                              _ragged(tok, [t.decode() for t in qa.numpy().reshape(-1)]), 4, 24, 12)
    for key in ("input_ids", "input_mask", "segment_ids"):
        np.testing.assert_array_equal(got[key].numpy().reshape(want[key].shape), want[key], err_msg=key)
