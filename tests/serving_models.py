"""Tiny real model folders for the serving tests (tests/test_serving*.py): built with TensorFlow and TF Text, not
mocked, in the layouts ``pipeline/serving/served_model.py`` loads.

* :func:`pushed_version`: a pushed version as the Pusher writes one (the ids SavedModel of an untrained albert-tiny
  at the top, ``vocab/``, ``checkpoint/`` as trainer/export.py writes it), optionally with the raw-text folders
  (``preprocess/``, ``encoder/``, ``text_model/``) that components/release/raw_text.py builds.
* :func:`choice_model`: the same for multiple choice (``context``, ``question``, ``options``).
* :func:`task_model`: ``<TASK>/serving_model`` with a raw-text ``serving_default`` (``text_a`` [, ``text_b``] →
  ``class_ids``, ``probabilities``, ``logits``; TF Text tokenization and packing, the same encoder, a seeded head)
  and its ``serving_info.json``.

The vocabulary is the official 30k-clean SentencePiece model bundled with the sample data (lower-cased input).
"""
import functools
import json
import os
import shutil

WORDPIECE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "wordpiece", "vocab.txt")
WORDPIECE_SIZE = 581  # its lines
SEQ = 16  # the raw-text models' sequence length (texts are truncated to it, as TF Hub's bert_pack_inputs does)


@functools.lru_cache(maxsize=None)
def _tiny_model(seed, vocab_size=30000):
    """An untrained albert-tiny drawn with ``seed`` (built once per process: the folders share it)."""
    import tensorflow as tf

    from trainer.modeling_albert import AlbertConfig, AlbertForPreTraining

    tf.keras.utils.set_random_seed(seed)
    config = AlbertConfig.named("albert-tiny", vocab_size=vocab_size)
    model = AlbertForPreTraining(config)
    model(model.dummy_inputs(batch_size=1, seq_len=8, num_predictions=2))
    return model


def _vocab_path():
    from pipeline.settings.configs import SAMPLE_DATA

    return os.path.join(SAMPLE_DATA, "vocab", "30k-clean.model")


def _text_module(model, texts_in, num_labels=None):
    """A tf.Module whose ``serve`` takes the string inputs ``texts_in`` and runs the encoder on TF Text's ids."""
    import tensorflow as tf
    import tensorflow_text as tf_text

    from trainer.export import ServingModule

    with open(_vocab_path(), "rb") as f:
        proto = f.read()

    class TextModule(tf.Module):
        def __init__(self):
            super().__init__()
            self.encoder = ServingModule(model)
            self.tokenizer = tf_text.SentencepieceTokenizer(model=proto, out_type=tf.int32)
            if num_labels:
                self.head = tf.Variable(tf.random.stateless_normal([128, num_labels], seed=[7, 1]))

        def packed(self, texts):
            segments = [self.tokenizer.tokenize(tf.strings.lower(t)) for t in texts]
            trimmed = tf_text.RoundRobinTrimmer(max_seq_length=SEQ - 1 - len(segments)).trim(segments)
            ids, types = tf_text.combine_segments(trimmed, start_of_sequence_id=2, end_of_segment_id=3)
            input_ids, input_mask = tf_text.pad_model_inputs(ids, SEQ)
            segment_ids, _ = tf_text.pad_model_inputs(types, SEQ)
            return self.encoder.serve(input_ids, input_mask, segment_ids)

    module = TextModule()
    specs = [tf.TensorSpec([None], tf.string, name=name) for name in texts_in]
    if num_labels:
        def classify(*texts):
            pooled = module.packed(texts)["pooled_output"]
            logits = tf.matmul(pooled[:, :128], module.head)
            return {"logits": logits, "probabilities": tf.nn.softmax(logits),
                    "class_ids": tf.argmax(logits, axis=-1)}
        return module, tf.function(classify, input_signature=specs, autograph=False)

    def embed(text):
        return {"pooled_output": module.packed([text])["pooled_output"]}

    def fill_mask(text):
        """{text} → tokens, scores, token_ids [B, M, 5]: [MASK] becomes id 4 between the pieces around it."""
        parts = tf.strings.split(tf.strings.lower(text), "[mask]")  # [B, P]
        ids = module.tokenizer.tokenize(parts)  # [B, P, T]
        not_last = tf.ragged.range(parts.row_lengths()) < tf.expand_dims(parts.row_lengths() - 1, 1)
        flags = tf.cast(not_last.flat_values, tf.int64)
        masks = not_last.with_flat_values(tf.RaggedTensor.from_row_lengths(
            tf.fill([tf.reduce_sum(flags)], 4), flags))
        joined = tf.concat([ids, masks], axis=2).merge_dims(1, 2)[:, :SEQ - 2]
        input_ids, types = tf_text.combine_segments([joined], start_of_sequence_id=2, end_of_segment_id=3)
        input_ids, input_mask = tf_text.pad_model_inputs(input_ids, SEQ)
        logits = module.encoder.serve(input_ids, input_mask, tf.zeros_like(input_ids))["mlm_logits"]
        at_masks = tf.ragged.boolean_mask(logits, tf.equal(input_ids, 4)).to_tensor()  # [B, M, V]
        scores, token_ids = tf.math.top_k(tf.nn.softmax(at_masks), k=5)
        return {"tokens": module.tokenizer.id_to_string(token_ids), "scores": scores, "token_ids": token_ids}

    return module, {"embed": tf.function(embed, input_signature=specs, autograph=False),
                    "fill_mask": tf.function(fill_mask, input_signature=specs, autograph=False)}


def choice_model(folder, seed=0):
    """``folder``/serving_model: a raw-text multiple-choice model (``context``, ``question``, ``options`` [K, any K]
    → ``scores`` [K], ``choice``): each option packed after the context and question, as RACE and C3 are."""
    import tensorflow as tf

    module, _ = _text_module(_tiny_model(seed), ["text"])
    module.head = tf.Variable(tf.random.stateless_normal([128, 1], seed=[7, 2]))

    @tf.function(autograph=False, input_signature=[tf.TensorSpec([None], tf.string, name="context"),
                                                   tf.TensorSpec([None], tf.string, name="question"),
                                                   tf.TensorSpec([None, None], tf.string, name="options")])
    def choose(context, question, options):
        k = tf.shape(options)[1]
        first = tf.repeat(tf.strings.join([context, question], " "), k)
        pooled = module.packed([first, tf.reshape(options, [-1])])["pooled_output"]
        scores = tf.reshape(tf.matmul(pooled[:, :128], module.head), [-1, k])
        return {"scores": scores, "choice": tf.argmax(scores, axis=-1, output_type=tf.int32)}

    serving = os.path.join(folder, "serving_model")
    tf.saved_model.save(module, serving, signatures={"serving_default": choose.get_concrete_function()})
    with open(os.path.join(serving, "serving_info.json"), "w") as f:
        json.dump({"kind": "choose", "inputs": ["context", "question", "options"], "outputs": ["choice", "scores"]}, f)
    return str(folder)


def pushed_version(folder, seed=0, text_model=False, wordpiece=False):
    """A pushed version folder (see the module's docstring); returns its path. ``wordpiece``: the Chinese-capable
    WordPiece fixture (tests/fixtures/wordpiece/vocab.txt, 581 tokens) with its ``tokenizer.json``, as a
    ``sample-zh`` version carries. ``text_model``: the raw-text folders the Pusher writes (TF Hub's pair and
    ``text_model/``), built by the product's own :func:`components.release.raw_text.build` at ``SEQ``."""
    from trainer.export import export

    model = _tiny_model(seed, WORDPIECE_SIZE if wordpiece else 30000)
    vocab = os.path.join(folder, "vocab")
    os.makedirs(vocab)
    if wordpiece:
        shutil.copy(WORDPIECE, os.path.join(vocab, "vocab.txt"))
        with open(os.path.join(vocab, "tokenizer.json"), "w") as f:
            json.dump({"do_lower_case": True, "kind": "wordpiece", "normalization": "none", "strip_accents": False}, f)
    else:
        shutil.copy(_vocab_path(), os.path.join(vocab, "spm.model"))
    checkpoint = os.path.join(folder, "checkpoint")
    export(model, folder, checkpoint, [os.path.join(vocab, name) for name in sorted(os.listdir(vocab))], {})
    if text_model:
        from components.release.raw_text import build

        build(checkpoint, folder, seq_length=SEQ)
    return str(folder)


def task_model(folder, pair=True, num_labels=3, seed=0):
    """``folder``/serving_model: a raw-text classifier with its serving_info.json; returns ``folder``."""
    import tensorflow as tf

    names = ["text_a", "text_b"] if pair else ["text_a"]
    module, classify = _text_module(_tiny_model(seed), names, num_labels)
    serving = os.path.join(folder, "serving_model")
    tf.saved_model.save(module, serving, signatures={"serving_default": classify.get_concrete_function()})
    with open(os.path.join(serving, "serving_info.json"), "w") as f:
        json.dump({"kind": "classify", "inputs": names, "outputs": ["class_ids", "probabilities", "logits"]}, f)
    return str(folder)
