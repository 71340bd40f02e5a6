"""Raw text in: the TF Hub pair (``preprocess/`` and ``encoder/``) and ``text_model/`` of a pushed version, built
from the model's ``albert/`` folder (config, checkpoint, vocabulary) with the project's model code.

Tokenization runs in the graph (:class:`components.text.graph_tokenizer.GraphTokenizer`, TF Text ops), so a process
that imports only ``tensorflow`` and ``tensorflow_text`` (as TF Serving, which links TF Text's ops) serves raw
strings with the ids the project's own tokenizer gives.

- ``preprocess/``: TF Hub's BERT preprocessor convention. ``serving_default``: ``{"text": string [None]}`` →
  ``input_word_ids`` / ``input_mask`` / ``input_type_ids`` (int32 [batch, seq_length]); ``pair``: ``{"text_a",
  "text_b"}`` → the same for ``[CLS] a [SEP] b [SEP]``; callable attributes ``tokenize(strings)`` (int32 ragged
  [batch, (pieces)]), ``tokenize_with_offsets(strings)`` and ``bert_pack_inputs(segments, seq_length)`` (one or two
  ragged segments; ``seq_length`` an int32 scalar), ``id_to_piece(ids)``; ``seq_length`` the default length (the
  model's pretraining ``max_seq_length``, else 128).
- ``encoder/``: ``serving_default`` and ``__call__``: ``{input_word_ids, input_mask, input_type_ids}`` →
  ``{pooled_output, sequence_output, default}`` (``default`` is ``pooled_output``, as TF Hub's).
- ``text_model/``: ``embed``: ``{"text"}`` → ``{"pooled_output"}``; ``fill_mask`` (a model with its MLM head):
  ``{"text"}`` with the vocabulary's mask token (``[MASK]``) → ``tokens`` string, ``scores`` float32 (softmax
  probabilities), ``token_ids`` int32, each [batch, masks, K] (K = :data:`TOP_K`), padded with "" / 0 / -1 where a
  text has fewer masks, and ``mask_count`` int32 [batch]. The text is cut at each mask token and each part
  tokenized on its own (the mask is one id between them), as the mask token is no text the tokenizers keep whole.
"""
from __future__ import annotations

import posixpath
from typing import List, Optional

import tensorflow as tf

from components.text.graph_tokenizer import GraphTokenizer, pack_inputs, shared_tokenizer
from config.tokenizer_spec import TokenizerSpec
from trainer.convert import load_albert_dir
from trainer.export import Untracked
from trainer.files import TOKENIZER_SPEC_FILE
from trainer.modeling_albert import AlbertForPreTraining
from trainer.vocabulary import vocabulary_file

PREPROCESS_DIR, ENCODER_DIR, TEXT_MODEL_DIR = "preprocess", "encoder", "text_model"
DEFAULT_SEQ_LENGTH = 128  # TF Hub's preprocessors' default, for a model whose pretraining length is unknown
TOP_K = 5
_RAGGED = tf.RaggedTensorSpec([None, None], tf.int32, ragged_rank=1, row_splits_dtype=tf.int64)


def folder_spec(albert_dir: str, do_lower_case: bool = True) -> TokenizerSpec:
    """The folder's ``tokenizer.json``, else English's SentencePiece with ``do_lower_case`` (its export's)."""
    path = posixpath.join(albert_dir, TOKENIZER_SPEC_FILE)
    if not tf.io.gfile.exists(path):
        return TokenizerSpec.from_json(None, do_lower_case)
    with tf.io.gfile.GFile(path) as f:
        return TokenizerSpec.from_json(f.read())


class Preprocess(tf.Module):
    """TF Hub's BERT preprocessor (the module docstring)."""

    def __init__(self, tokenizer: GraphTokenizer, seq_length: int):
        super().__init__(name="preprocess")
        self.tokenizer = tokenizer
        self.seq_length = tf.Variable(seq_length, dtype=tf.int32, trainable=False, name="seq_length")  # saved
        self._length = seq_length
        self.tokenize = tokenizer.tokenize
        self.tokenize_with_offsets = tokenizer.tokenize_with_offsets
        self.id_to_piece = tokenizer.id_to_piece
        self.vocab_size, self.cls_id, self.sep_id, self.pad_id, self.mask_id = (
            tf.Variable(getattr(tokenizer, k), dtype=tf.int32, trainable=False, name=k)  # saved, as seq_length
            for k in ("vocab_size", "cls_id", "sep_id", "pad_id", "mask_id"))

    @tf.function(autograph=False)
    def bert_pack_inputs(self, segments, seq_length):
        return pack_inputs(segments, seq_length, self.tokenizer.cls_id, self.tokenizer.sep_id,
                           self.tokenizer.pad_id)

    @tf.function(autograph=False, input_signature=[tf.TensorSpec([None], tf.string, name="text")])
    def single(self, text):
        return pack_inputs([self.tokenizer.tokenize(text)], self._length, self.tokenizer.cls_id,
                           self.tokenizer.sep_id, self.tokenizer.pad_id)

    @tf.function(autograph=False, input_signature=[tf.TensorSpec([None], tf.string, name="text_a"),
                                  tf.TensorSpec([None], tf.string, name="text_b")])
    def pair(self, text_a, text_b):
        return pack_inputs([self.tokenizer.tokenize(text_a), self.tokenizer.tokenize(text_b)], self._length,
                           self.tokenizer.cls_id, self.tokenizer.sep_id, self.tokenizer.pad_id)


_ENCODER_INPUTS = {name: tf.TensorSpec([None, None], tf.int32, name=name)
                   for name in ("input_word_ids", "input_mask", "input_type_ids")}


class Encoder(tf.Module):
    """The encoder under TF Hub's names."""

    def __init__(self, encoder):
        super().__init__(name="encoder")
        self.model_variables = list(encoder.variables)  # as trainer/export.py: track variables, not Keras layers
        self._encoder = Untracked(encoder)

    def outputs(self, inputs):
        out = self._encoder.model({"input_ids": inputs["input_word_ids"], "input_mask": inputs["input_mask"],
                                   "segment_ids": inputs["input_type_ids"]}, training=False)
        pooled = tf.cast(out["pooled_output"], tf.float32)
        return {"pooled_output": pooled, "sequence_output": tf.cast(out["sequence_output"], tf.float32),
                "default": pooled}

    @tf.function(autograph=False, input_signature=[_ENCODER_INPUTS])
    def __call__(self, inputs):
        return self.serve(**inputs)  # a call of serve's graph: the model is traced once

    @tf.function(autograph=False, input_signature=[_ENCODER_INPUTS["input_word_ids"], _ENCODER_INPUTS["input_mask"],
                                                   _ENCODER_INPUTS["input_type_ids"]])
    def serve(self, input_word_ids, input_mask, input_type_ids):
        return self.outputs({"input_word_ids": input_word_ids, "input_mask": input_mask,
                             "input_type_ids": input_type_ids})


class TextModel(tf.Module):
    """Raw text → the encoder's pooled output (``embed``) and masked-token predictions (``fill_mask``), both on
    ``encoder``'s graph (:class:`Encoder`: the model is traced once for the whole version), ``fill_mask`` with the MLM
    head of ``model`` on the gathered mask positions."""

    def __init__(self, tokenizer: GraphTokenizer, model, encoder: "Encoder", seq_length: int, top_k: int = TOP_K):
        super().__init__(name="text_model")
        self.tokenizer = tokenizer
        self.encoder = encoder
        self.model_variables = list(model.variables)
        self._model = Untracked(model)
        self._length, self._k = seq_length, top_k
        # Saved (a constant would not be): what a server checks a text's pieces against.
        self.seq_length = tf.Variable(seq_length, dtype=tf.int32, trainable=False, name="seq_length")
        self.has_mlm = isinstance(model, AlbertForPreTraining)

    def _pack(self, ids):
        t = self.tokenizer
        return pack_inputs([ids], self._length, t.cls_id, t.sep_id, t.pad_id)

    @tf.function(autograph=False, input_signature=[tf.TensorSpec([None], tf.string, name="text")])
    def embed(self, text):
        return {"pooled_output": self.encoder.serve(**self._pack(self.tokenizer.tokenize(text)))["pooled_output"]}

    def mask_ids(self, text):
        """Ids of ``text`` with each mask token one ``mask_id``: the parts between mask tokens tokenized alone."""
        t = self.tokenizer
        parts = tf.strings.split(text, t.mask_token)
        ids = t.tokenize(parts.flat_values)
        n = tf.shape(parts.flat_values, out_type=tf.int64)[0]
        last = tf.equal(tf.range(n), tf.gather(parts.row_limits(), parts.value_rowids()) - 1)
        one_each = tf.where(last, tf.zeros([n], tf.int64), tf.ones([n], tf.int64))  # a mask after all but the last
        mask = tf.RaggedTensor.from_row_lengths(tf.fill([tf.reduce_sum(one_each)], t.mask_id), one_each,
                                                validate=False)
        joined = tf.concat([ids, mask], axis=1)
        return tf.RaggedTensor.from_row_splits(joined, parts.row_splits, validate=False).merge_dims(1, 2)

    @tf.function(autograph=False, input_signature=[tf.TensorSpec([None], tf.string, name="text")])
    def fill_mask(self, text):
        t = self.tokenizer
        packed = self._pack(self.mask_ids(text))
        word_ids = packed["input_word_ids"]
        where = tf.where(tf.equal(word_ids, t.mask_id))  # [masks, 2] (row, position), row-major
        batch = tf.shape(word_ids, out_type=tf.int64)[0]
        positions = tf.RaggedTensor.from_value_rowids(tf.cast(where[:, 1], tf.int32), where[:, 0], nrows=batch,
                                                      validate=False)
        valid = tf.ones_like(positions, tf.bool).to_tensor(False)
        dense_positions = positions.to_tensor(0)
        sequence = self.encoder.serve(**packed)["sequence_output"]
        gathered = tf.gather(sequence, dense_positions, batch_dims=1)  # [B, M, H], as AlbertForPreTraining.call
        logits = self._model.model.predictions(gathered)
        probs = tf.nn.softmax(tf.cast(logits, tf.float32), axis=-1)  # [B, M, V]
        scores, ids = tf.math.top_k(probs, k=self._k)
        keep = valid[:, :, None]
        ids = tf.where(keep, ids, -tf.ones_like(ids))
        return {"tokens": tf.where(keep, t.id_to_piece(tf.maximum(ids, 0)), tf.constant("")),
                "scores": tf.where(keep, scores, tf.zeros_like(scores)), "token_ids": ids,
                "mask_count": tf.cast(positions.row_lengths(), tf.int32)}


class EncoderTextModel(TextModel):
    """A model imported without its MLM head (encoder only): ``embed`` alone (``tf.saved_model.save`` traces every
    tf.function a module holds, so ``fill_mask`` must not be one)."""

    fill_mask = None


def build(albert_dir: str, out: str, seq_length: Optional[int] = None, do_lower_case: bool = True) -> List[str]:
    """Write ``preprocess/``, ``encoder/`` and ``text_model/`` into ``out`` (a version's staging folder) from the
    albert folder; returns the folders written. ``seq_length``: the model's pretraining ``max_seq_length``
    (None: :data:`DEFAULT_SEQ_LENGTH`), at most its ``max_position_embeddings``."""
    model = load_albert_dir(albert_dir)
    length = min(int(seq_length or DEFAULT_SEQ_LENGTH), int(model.config.max_position_embeddings))
    vocab = vocabulary_file(albert_dir)
    tokenizer = shared_tokenizer(vocab, folder_spec(albert_dir, do_lower_case))
    pre = Preprocess(tokenizer, length)
    pre.bert_pack_inputs.get_concrete_function([_RAGGED], tf.TensorSpec([], tf.int32, name="seq_length"))
    pre.bert_pack_inputs.get_concrete_function([_RAGGED, _RAGGED], tf.TensorSpec([], tf.int32, name="seq_length"))
    tf.saved_model.save(pre, posixpath.join(out, PREPROCESS_DIR),
                        signatures={"serving_default": pre.single, "pair": pre.pair})
    encoder = model.albert if isinstance(model, AlbertForPreTraining) else model
    enc = Encoder(encoder)
    tf.saved_model.save(enc, posixpath.join(out, ENCODER_DIR), signatures={"serving_default": enc.serve})
    text = (TextModel if isinstance(model, AlbertForPreTraining) else EncoderTextModel)(tokenizer, model, enc, length)
    signatures = {"embed": text.embed}
    if text.has_mlm:
        signatures["fill_mask"] = text.fill_mask
    tf.saved_model.save(text, posixpath.join(out, TEXT_MODEL_DIR), signatures=signatures)
    return [PREPROCESS_DIR, ENCODER_DIR, TEXT_MODEL_DIR]
