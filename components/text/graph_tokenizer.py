"""The project's tokenizer inside a TensorFlow graph (TF Text), so a SavedModel takes raw strings.

:class:`GraphTokenizer` gives the ids that :class:`~components.text.tokenization.AlbertTokenizer` (a SentencePiece
``spm.model`` with the vocabulary's ``normalization`` / ``strip_accents`` / ``do_lower_case``) or
:class:`~components.text.wordpiece.WordPieceTokenizer` (a WordPiece ``vocab.txt`` read as BERT's ``FullTokenizer``)
give in Python: the same steps, in the same order, as TF ops.

- Every character class (Python's ``str.isspace``, the combining marks, ``str.isdigit``, BERT's controls,
  punctuation and CJK ideographs, category Mn) is this Python's ``unicodedata``'s
  (:mod:`components.text.unicode_ranges`), so the graph and the Python tokenizer agree on them character for
  character.
- Unicode forms (NFKD/NFKC/NFC/NFD) are TF Text's ``normalize_utf8`` and lower-casing is ``tf.strings.lower`` with
  ``utf-8`` (both ICU, full case mapping with Greek final sigma, as ``str.lower``). Where ICU's Unicode version and
  Python's differ, characters assigned between the two versions may normalise differently.
- SentencePiece is TF Text's ``SentencepieceTokenizer`` over the same model bytes (the same library as the
  ``sentencepiece`` package), followed by ALBERT's digits-comma re-encoding ("▁1990," → "▁1990" ","); WordPiece is
  TF Text's ``FastWordpieceTokenizer`` (greedy longest match first, as BERT's) over BERT's basic-tokenizer words,
  with BERT's 200-character limit on a word.

The input must be valid UTF-8 (TF Text's normalisation fails on invalid bytes); the Python tokenizers take ``str``.

Offsets (:meth:`GraphTokenizer.tokenize_with_offsets`) are byte offsets into each ORIGINAL input string. Text is cut
into whitespace-separated words (and, for WordPiece, CJK ideographs) before it is normalised; inside a word whose
normalised form has the same byte length as the original (ASCII text lower-cased, most text without accents under
normalisations that keep it), a piece's offsets are exact. In a word that normalisation lengthens or shortens
(accents stripped, NFKC folding full-width forms, dropped control characters), every piece of the word gets the
whole word's span. SentencePiece's word-initial "▁" carries no bytes of its own.
"""
from __future__ import annotations

import collections
import functools
import hashlib
import threading
from typing import Dict, List, Sequence

import tensorflow as tf
import tensorflow_text as tf_text
from tensorflow_text.python.ops import regex_split_ops

from components.text import unicode_ranges, wordpiece
from components.text.vocab_files import CLS, MASK, PAD, SEP, read_wordpiece_vocab
from config.tokenizer_spec import TokenizerSpec

SPIECE_UNDERLINE = "\u2581"
SP_SPECIALS = {"pad": "<pad>", "cls": "[CLS]", "sep": "[SEP]", "mask": "[MASK]"}
WP_SPECIALS = {"pad": PAD, "cls": CLS, "sep": SEP, "mask": MASK}
# The longest word (in UTF-8 bytes) FastWordpieceTokenizer looks into; longer words are [UNK] as BERT's 200
# characters are (checked separately, in characters).
_MAX_WORD_BYTES = 4 * wordpiece.MAX_WORD_CHARS


def _char_class(ranges: List[List[int]]) -> str:
    """An RE2 character class (without brackets) of ``ranges``."""
    return "".join(f"\\x{{{lo:X}}}" if lo == hi else f"\\x{{{lo:X}}}-\\x{{{hi:X}}}" for lo, hi in ranges)


@functools.lru_cache(maxsize=None)
def _classes() -> Dict[str, str]:
    """Every character class the graph uses (:mod:`components.text.unicode_ranges`): its ranges and RE2 class."""
    return {name: (r, _char_class(r)) for name, r in unicode_ranges.all_ranges().items()}


def char_class(name: str) -> str:
    """The RE2 character class ``[...]`` of one of :func:`components.text.unicode_ranges.compute`'s classes
    (``space``, ``digit``, ``combining``, ...)."""
    return "[" + _classes()[name][1] + "]"


def _in_ranges(cps, ranges: List[List[int]]):
    """Whether each code point of ``cps`` (int32) lies in one of ``ranges``."""
    table = tf.constant(ranges, tf.int32)
    i = tf.searchsorted(table[:, 0], cps, side="right", out_type=tf.int32) - 1
    return tf.logical_and(i >= 0, cps <= tf.gather(table[:, 1], tf.maximum(i, 0)))


def _rows_of(splits, n):
    """The row of each of the ``n`` values that row ``splits`` partition, in the splits' dtype:
    RaggedTensor.value_rowids in a handful of ops (the ragged method builds some seventy)."""
    pos = tf.expand_dims(tf.range(n, dtype=splits.dtype), 0)
    return tf.squeeze(tf.raw_ops.UpperBound(sorted_inputs=tf.expand_dims(splits, 0), values=pos,
                                            out_type=splits.dtype), 0) - 1


def split_words(strings, space: List[List[int]], single: List[List[int]] = ()):
    """strings [batch] → (words, start, end, row, splits), flat over the batch: the runs of characters outside
    ``space``, each character in ``single`` a word of its own; their byte offsets (int64), the row of each and the
    words' row splits ([batch + 1], int64). Unlike TF Text's regex_split it reads past NUL."""
    # The op of tf.strings.unicode_decode_with_offsets (its defaults), without building a RaggedTensor.
    splits, cp, start = tf.raw_ops.UnicodeDecodeWithOffsets(
        input=strings, input_encoding="UTF-8", errors="replace", replacement_char=0xFFFD,
        replace_control_characters=False, Tsplits=tf.int64)
    n = tf.size(cp, out_type=tf.int64)
    row = _rows_of(splits, n)
    pos = tf.range(n)
    is_first = tf.equal(pos, tf.gather(splits, row))
    is_last = tf.equal(pos, tf.gather(splits[1:], row) - 1)
    str_len = tf.gather(tf.cast(tf.strings.length(strings), tf.int64), row)
    char_end = tf.where(is_last, str_len, tf.concat([start[1:], tf.zeros([1], tf.int64)], 0)[:n])
    is_space = _in_ranges(cp, space)
    inside = tf.logical_not(is_space)
    if single:
        is_single = _in_ranges(cp, single)
        breaks = tf.logical_or(is_space, is_single)
    else:
        is_single, breaks = None, is_space
    prev_breaks = tf.concat([[True], breaks[:-1]], 0)[:n]
    begins = tf.logical_or(is_first, prev_breaks)
    if single:
        begins = tf.logical_or(begins, is_single)
    begins = tf.logical_and(inside, begins)
    words_before = tf.cumsum(tf.cast(begins, tf.int64))  # the words begun up to each character
    first_char = tf.where(begins)[:, 0]
    w_start = tf.gather(start, first_char)
    # Characters outside every word (spaces) get segment -1, which unsorted_segment_max leaves out.
    word_of_char = tf.where(inside, words_before - 1, tf.constant(-1, tf.int64))
    w_end = tf.math.unsorted_segment_max(char_end, word_of_char, tf.size(first_char, out_type=tf.int64))
    w_row = tf.gather(row, first_char)
    w_splits = tf.gather(tf.concat([tf.zeros([1], tf.int64), words_before], 0), splits)
    words = tf.strings.substr(tf.gather(strings, w_row), tf.cast(w_start, tf.int32), tf.cast(w_end - w_start, tf.int32))
    return words, w_start, w_end, w_row, w_splits


def _read(path: str) -> bytes:
    with tf.io.gfile.GFile(path, "rb") as f:
        return f.read()


class GraphTokenizer(tf.Module):
    """Strings → the project tokenizer's ids, in a TF graph (see the module docstring).

    ``vocab_path``: an ``spm.model`` or ``vocab.txt``; ``spec``: its :class:`TokenizerSpec` (``tokenizer.json``).
    Attributes ``cls_id``, ``sep_id``, ``pad_id``, ``mask_id``, ``vocab_size`` (Python ints) and ``pieces`` (a
    constant of every piece in id order, read by :meth:`id_to_piece`, no lookup table).
    """

    def __init__(self, vocab_path: str, spec: TokenizerSpec, name: str = "graph_tokenizer"):
        super().__init__(name=name)
        self.spec = spec
        data = _read(vocab_path)
        self._classes = _classes()
        if spec.kind == "wordpiece":
            pieces = read_wordpiece_vocab(data, vocab_path)
            specials = WP_SPECIALS
            self._wp = tf_text.FastWordpieceTokenizer(
                vocab=pieces, suffix_indicator=wordpiece.CONTINUATION, max_bytes_per_word=_MAX_WORD_BYTES,
                token_out_type=tf.int32, unknown_token="[UNK]", no_pretokenization=True,
                support_detokenization=False)
            self.unk_id = pieces.index("[UNK]")
        else:
            self._sp = tf_text.SentencepieceTokenizer(model=data, out_type=tf.int32)
            size = int(self._sp.vocab_size())
            pieces = [p.decode("utf-8") for p in self._sp.id_to_string(tf.range(size)).numpy()]
            specials = SP_SPECIALS
            self.unk_id = 1
            self.comma_id = pieces.index(",") if "," in pieces else self.unk_id
        self.vocab_size = len(pieces)
        ids = {p: i for i, p in enumerate(pieces)}
        self.pad_id, self.cls_id, self.sep_id, self.mask_id = (ids[specials[k]] for k in ("pad", "cls", "sep", "mask"))
        self.mask_token = specials["mask"]
        self.pieces = tf.constant(pieces, dtype=tf.string)

    # ----------------------------------------------------------------------------------------------- public API
    @tf.function(autograph=False, input_signature=[tf.TensorSpec([None], tf.string)])
    def tokenize(self, strings):
        """strings [batch] → ids: int32 RaggedTensor [batch, (pieces)], no special tokens (a call of
        :meth:`tokenize_with_offsets`, so a SavedModel traces the tokenizer once; the unused offsets are pruned)."""
        return self.tokenize_with_offsets(strings)[0]

    @tf.function(autograph=False, input_signature=[tf.TensorSpec([None], tf.string)])
    def tokenize_with_offsets(self, strings):
        """strings [batch] → (ids int32, start int64, end int64), ragged [batch, (pieces)]; byte offsets into each
        original string (exactness: the module docstring)."""
        ids, start, end = self.ids_and_offsets(strings)
        return ids, tf.cast(start, tf.int64), tf.cast(end, tf.int64)

    @tf.function(autograph=False, input_signature=[tf.TensorSpec(None, tf.int32)])
    def id_to_piece(self, ids):
        """Piece strings of ``ids`` (any shape, a gather from :attr:`pieces`)."""
        return tf.gather(self.pieces, ids)

    def bert_pack_inputs(self, segments: Sequence[tf.RaggedTensor], seq_length: int) -> Dict[str, tf.Tensor]:
        """``[CLS] A [SEP]`` or ``[CLS] A [SEP] B [SEP]`` → input_word_ids / input_mask / input_type_ids (int32
        [batch, seq_length], padded with ``pad_id`` / 0 / 0), truncated as the project's fine-tuning featurisation
        (components/evaluation/glue/glue_data.py): a single text to ``seq_length - 2`` pieces, a pair longest
        first (the last piece of the longer one goes first, the second on a tie) to ``seq_length - 3``."""
        return pack_inputs(segments, seq_length, self.cls_id, self.sep_id, self.pad_id)

    # ------------------------------------------------------------------------------------------ the two graphs
    def ids_and_offsets(self, strings):
        """(ids, start, end) int32 ragged: the ops :meth:`tokenize_with_offsets` traces, run where called (eagerly,
        or inside a caller's graph)."""
        if self.spec.kind == "wordpiece":
            return self._wordpiece(strings)
        return self._sentencepiece(strings)

    def _sentencepiece(self, strings):
        c = self._classes
        words, w_start, w_end, w_row, w_splits = split_words(strings, c["space"][0])
        norm = self._sp_normalize(words)
        joined = tf.strings.unsorted_segment_join(norm, w_row, tf.size(strings), separator=" ")
        ids, start, end = self._sp.tokenize_with_offsets(joined)
        ids, start, end, splits = self._digits_comma(ids.flat_values, tf.cast(start.flat_values, tf.int32),
                                                     tf.cast(end.flat_values, tf.int32), ids.row_splits)
        start, end = _to_original(norm, w_start, w_end, w_splits, _rows_of(splits, tf.size(ids, out_type=tf.int64)),
                                  start, end, separator=1)
        return tuple(tf.RaggedTensor.from_row_splits(v, splits, validate=False) for v in (ids, start, end))

    def _sp_normalize(self, words):
        """normalize.normalize_text on words (whitespace already collapsed by the split)."""
        c, spec = self._classes, self.spec
        if spec.normalization == "albert":
            words = tf_text.normalize_utf8(words, "NFKD")
            words = tf.strings.regex_replace(words, f"[{c['combining'][1]}]", "")
        else:
            if spec.normalization != "none":
                words = tf_text.normalize_utf8(words, spec.normalization.upper())
            if spec.strip_accents:
                words = tf_text.normalize_utf8(words, "NFD")
                words = tf.strings.regex_replace(words, f"[{c['combining'][1]}]", "")
                words = tf_text.normalize_utf8(words, "NFC")
        if spec.do_lower_case:
            words = _lower(words)
        return words

    def _digits_comma(self, ids, start, end, splits):
        """ALBERT's encode_pieces: a piece of digits ending in "," is re-encoded without the comma (and "▁"), "," a
        piece of its own (AlbertTokenizer.tokenize). Flat pieces (ids, start, end) with their row ``splits`` (int64)
        in, the same out: each piece's output count is exclusive-cumsummed to its first output position and every
        value scattered there (ragged concatenation and merging build several times the graph)."""
        pieces = tf.gather(self.pieces, ids)
        cand = tf.strings.regex_full_match(pieces, f"(?s).*[{self._classes['digit'][1]}],")
        cand_idx = tf.where(cand)[:, 0]
        c_pieces = tf.gather(pieces, cand_idx)
        c_end = tf.gather(end, cand_idx)
        sub_text = tf.strings.regex_replace(
            _substr(c_pieces, 0, tf.strings.length(c_pieces) - 1), SPIECE_UNDERLINE, "")
        sub, sub_start, sub_end = self._sp.tokenize_with_offsets(sub_text)
        sub_splits, sub_ids = sub.row_splits, sub.flat_values
        n_sub = tf.size(sub_ids, out_type=tf.int64)
        row = _rows_of(sub_splits, n_sub)  # the candidate of each re-encoded piece
        local = tf.range(n_sub) - tf.gather(sub_splits, row)  # its index in the candidate's re-encoding
        # A piece without "▁" whose re-encoding starts with one loses it: "▁" alone is dropped, "▁1" becomes "1".
        sub_str = tf.gather(self.pieces, sub_ids)
        piece_u = tf.strings.substr(c_pieces, 0, 3) == SPIECE_UNDERLINE
        fix = tf.logical_and(tf.logical_and(tf.equal(local, 0), tf.strings.substr(sub_str, 0, 3) == SPIECE_UNDERLINE),
                             tf.logical_not(tf.gather(piece_u, row)))
        drop = tf.logical_and(fix, sub_str == SPIECE_UNDERLINE)
        rest = tf.strings.regex_replace(sub_str, f"^{SPIECE_UNDERLINE}", "", replace_global=False)
        sub_ids = tf.where(tf.logical_and(fix, tf.logical_not(drop)), self._sp.string_to_id(rest), sub_ids)
        n_cand = tf.size(cand_idx, out_type=tf.int64)
        dropped = tf.math.unsorted_segment_sum(tf.cast(drop, tf.int64), row, n_cand)  # 0 or 1 a candidate
        kept = sub_splits[1:] - sub_splits[:-1] - dropped
        # Output positions: a piece takes 1, a candidate its kept re-encoded pieces and the comma.
        count = tf.tensor_scatter_nd_update(tf.ones_like(ids, tf.int64), cand_idx[:, None], kept + 1)
        ends = tf.concat([tf.zeros([1], tf.int64), tf.cumsum(count)], 0)
        total = ends[-1]
        c_first = tf.gather(ends, cand_idx)
        # Values with nowhere to go (the candidates themselves, the dropped "▁") land on one slot past the end.
        at = tf.concat([tf.where(cand, total, ends[:-1]),
                        tf.where(drop, total, tf.gather(c_first, row) + local - tf.gather(dropped, row)),
                        c_first + kept], 0)[:, None]
        base = tf.gather(c_end - 1 - tf.strings.length(sub_text), row)

        def place(flat, sub_values, comma):
            return tf.scatter_nd(at, tf.concat([flat, sub_values, comma], 0), tf.expand_dims(total + 1, 0))[:-1]

        return (place(ids, sub_ids, tf.fill(tf.shape(c_end), tf.constant(self.comma_id, tf.int32))),
                place(start, tf.cast(sub_start.flat_values, tf.int32) + base, c_end - 1),
                place(end, tf.cast(sub_end.flat_values, tf.int32) + base, c_end),
                tf.gather(ends, splits))

    def _wordpiece(self, strings):
        c = self._classes
        words, w_start, w_end, _, w_splits = split_words(strings, c["wp_space"][0], c["cjk"][0])
        norm = tf.strings.regex_replace(words, f"[{c['wp_drop'][1]}]", "")
        if self.spec.do_lower_case:
            norm = _lower(norm)
            norm = tf_text.normalize_utf8(norm, "NFD")
            norm = tf.strings.regex_replace(norm, f"[{c['mn'][1]}]", "")
        # Punctuation becomes a word of its own; whitespace (none unless lower-casing made some) splits too.
        parts, p_start, p_splits = _regex_split(norm, f"[{c['punct'][1]}]|[{c['space'][1]}]+", f"[{c['punct'][1]}]")
        ids, i_start, i_end = self._wp.tokenize_with_offsets(parts)
        ids, i_start, i_end, i_splits = _unk_long_words(parts, ids.flat_values, i_start.flat_values,
                                                        i_end.flat_values, ids.row_splits, self.unk_id)
        # Offsets inside the normalised word: the part's start plus the piece's offset inside the part.
        part = _rows_of(i_splits, tf.size(ids, out_type=tf.int64))  # the part of each piece
        part_start = tf.cast(tf.gather(p_start, part), tf.int32)
        start = tf.cast(i_start, tf.int32) + part_start
        end = tf.cast(i_end, tf.int32) + part_start
        word = tf.gather(_rows_of(p_splits, tf.size(parts, out_type=tf.int64)), part)  # the word of each piece
        o_start, o_end = _word_local_to_original(norm, w_start, w_end, word, start, end)
        splits = tf.gather(i_splits, tf.gather(p_splits, w_splits))  # the pieces' row splits
        return tuple(tf.RaggedTensor.from_row_splits(v, splits, validate=False) for v in (ids, o_start, o_end))


def _regex_split(strings, delim: str, keep_delim: str):
    """tf_text.regex_split_with_offsets of 1-D ``strings``, flat: (parts, start int64, row splits int64). Its op
    called directly: the public function builds its RaggedTensors with validation asserts (some 200 ops)."""
    parts, start, _, splits = regex_split_ops.gen_regex_split_ops.regex_split_with_offsets(
        strings, f"({delim})".encode("utf-8"), f"({keep_delim})".encode("utf-8"))
    return parts, start, splits


def _lower(strings):
    """``str.lower`` of UTF-8 strings: ICU's full lower-casing (tf.strings.lower), which stops at a NUL, applied to
    the NUL-separated parts (NUL breaks the final-sigma context just as in Python)."""
    # The ops of tf.strings.split and a reduce_join of its parts, without building a RaggedTensor.
    indices, parts, _ = tf.raw_ops.StringSplitV2(input=strings, sep="\x00", maxsplit=-1)
    row = indices[:, 0]
    last = tf.not_equal(row, tf.concat([row[1:], [-1]], 0))  # a string's last part (parts come in order)
    nul = tf.where(last, tf.constant(""), tf.constant("\x00"))  # (a NUL separator attribute would be cut off)
    lowered = tf.strings.join([tf.strings.lower(parts, encoding="utf-8"), nul])
    return tf.strings.unsorted_segment_join(lowered, row, tf.size(strings))


def _unk_long_words(parts, ids, start, end, splits, unk_id: int):
    """A word over BERT's 200 characters is one [UNK] spanning it. Flat pieces (ids, start, end) of ``parts`` with
    their row ``splits`` (int64) in, the same out; each piece scattered to its place."""
    too_long = tf.strings.length(parts, unit="UTF8_CHAR") > wordpiece.MAX_WORD_CHARS
    new = tf.where(too_long, tf.constant(1, tf.int64), splits[1:] - splits[:-1])
    new_splits = tf.concat([tf.zeros([1], tf.int64), tf.cumsum(new)], 0)
    total = new_splits[-1]
    n = tf.size(ids, out_type=tf.int64)
    part = _rows_of(splits, n)
    # A long part's pieces, with nowhere to go, land on one slot past the end; its [UNK] at its first place.
    at = tf.concat([tf.where(tf.gather(too_long, part), total, tf.gather(new_splits, part) + tf.range(n) -
                             tf.gather(splits, part)),
                    tf.where(too_long, new_splits[:-1], total)], 0)[:, None]

    def place(values, long_value):
        return tf.scatter_nd(at, tf.concat([values, long_value], 0), tf.expand_dims(total + 1, 0))[:-1]

    unk = tf.fill(tf.shape(too_long), tf.constant(unk_id, ids.dtype))
    return (place(ids, unk), place(start, tf.zeros(tf.shape(too_long), start.dtype)),
            place(end, tf.cast(tf.strings.length(parts), end.dtype)), new_splits)


def _word_local_to_original(norm, w_start, w_end, word, start, end):
    """Offsets inside each normalised word → byte offsets in the original string (exact where the word kept its
    byte length, the word's span otherwise). Flat: ``norm``/``w_start``/``w_end`` the words; ``word`` (the word of
    each piece), ``start``/``end`` the pieces."""
    o_start = tf.cast(tf.gather(w_start, word), tf.int32)
    o_end = tf.cast(tf.gather(w_end, word), tf.int32)
    o_len = o_end - o_start
    n_len = tf.gather(tf.strings.length(norm), word)
    same = tf.equal(o_len, n_len)
    s = tf.where(same, o_start + tf.clip_by_value(start, 0, o_len), o_start)
    e = tf.where(same, o_start + tf.clip_by_value(end, 0, o_len), o_end)
    return s, e


def _to_original(norm, w_start, w_end, w_splits, row, start, end, separator: int):
    """Offsets in each row's joined normalised text (its words joined by ``separator`` bytes) → original byte
    offsets. Flat: ``norm``/``w_start``/``w_end`` the words with row splits ``w_splits``; ``row``/``start``/``end``
    the pieces (int32 offsets)."""
    n_len = tf.strings.length(norm)
    # The batch's rows joined in one line: a word's normalised end (before its separator), and where a row starts.
    line_end = tf.cumsum(n_len + separator)
    ends = line_end - separator
    row_base = tf.gather(tf.concat([tf.zeros([1], tf.int32), line_end], 0), w_splits)
    at = start + tf.gather(row_base, row)
    # The word of a piece: the first whose normalised end is past the piece's start (a "▁" space goes with the
    # word after it), at most its row's last.
    word = tf.squeeze(tf.raw_ops.UpperBound(sorted_inputs=tf.expand_dims(ends, 0), values=tf.expand_dims(at, 0),
                                            out_type=tf.int64), 0)
    word = tf.minimum(word, tf.gather(w_splits[1:], row) - 1)
    w_len = tf.gather(n_len, word)
    n_start = tf.gather(ends, word) - w_len
    o_start = tf.cast(tf.gather(w_start, word), tf.int32)
    o_end = tf.cast(tf.gather(w_end, word), tf.int32)
    o_len = o_end - o_start
    same = tf.equal(o_len, w_len)
    s = tf.where(same, o_start + tf.clip_by_value(at - n_start, 0, o_len), o_start)
    e = tf.where(same, o_start + tf.clip_by_value(end + (at - start) - n_start, 0, o_len), o_end)
    return s, e


def truncated_lengths(len_a, len_b, budget):
    """The lengths :func:`components.evaluation.glue.glue_data.truncate_pair` leaves (longest first; on a tie the
    second loses a piece): the shorter keeps its length when twice it fits, else the first gets ceil(budget/2)."""
    short = tf.minimum(len_a, len_b)
    fits = len_a + len_b <= budget
    short_whole = 2 * short <= budget
    a = tf.where(fits, len_a, tf.where(short_whole, tf.where(len_a <= len_b, len_a, budget - len_b),
                                       (budget + 1) // 2))
    b = tf.where(fits, len_b, tf.where(short_whole, tf.where(len_a <= len_b, budget - len_a, len_b),
                                       budget // 2))
    return a, b


def pack_inputs(segments: Sequence[tf.RaggedTensor], seq_length: int, cls_id: int, sep_id: int,
                pad_id: int) -> Dict[str, tf.Tensor]:
    """GraphTokenizer.bert_pack_inputs with the special ids given.

    Built from flat (dense) ops: each kept piece is scattered to its position in a ``[batch, seq_length]`` tensor
    filled with ``pad_id``. (Ragged masking and concatenation give the same values, but their shape checks and
    broadcasting make the graph several times larger and slower to trace: each export traces this a few times.)"""
    if not 1 <= len(segments) <= 2:
        raise ValueError(f"bert_pack_inputs takes one or two segments, got {len(segments)}")
    if isinstance(seq_length, int) and seq_length < 3:
        raise ValueError(f"seq_length must be >= 3, got {seq_length}")
    segs = [tf.cast(s, tf.int32) for s in segments]
    lengths = [tf.cast(s.row_lengths(), tf.int32) for s in segs]
    length = tf.cast(seq_length, tf.int32)
    budget = length - 1 - len(segs)  # [CLS] and a [SEP] after each segment
    if len(segs) == 1:
        keep = [tf.minimum(lengths[0], budget)]
    else:
        keep = list(truncated_lengths(lengths[0], lengths[1], budget))
    batch = tf.shape(lengths[0])[0]
    rows = tf.range(batch)
    indices, updates = [tf.stack([rows, tf.zeros_like(rows)], 1)], [tf.fill([batch], tf.cast(cls_id, tf.int32))]
    start = tf.ones_like(rows)  # where each row's current segment starts
    for seg, kept in zip(segs, keep):
        row = tf.cast(_rows_of(seg.row_splits, tf.size(seg.values, out_type=seg.row_splits.dtype)), tf.int32)
        col = tf.range(tf.size(row)) - tf.gather(tf.cast(seg.row_starts(), tf.int32), row)  # index in its row
        take = col < tf.gather(kept, row)
        taken = tf.where(take)[:, 0]
        indices.append(tf.gather(tf.stack([row, tf.gather(start, row) + col], 1), taken))
        updates.append(tf.gather(seg.flat_values, taken))
        start = start + kept
        indices.append(tf.stack([rows, start], 1))
        updates.append(tf.fill([batch], tf.cast(sep_id, tf.int32)))
        start = start + 1
    shape = tf.stack([batch, length])
    ids = tf.tensor_scatter_nd_update(tf.fill(shape, tf.cast(pad_id, tf.int32)), tf.concat(indices, 0),
                                      tf.concat(updates, 0))
    positions = tf.range(length)[None, :]
    mask = tf.cast(positions < start[:, None], tf.int32)
    types = tf.zeros(shape, tf.int32)
    if len(segs) == 2:  # the second segment and its [SEP]
        types = tf.cast(positions >= (2 + keep[0])[:, None], tf.int32) * mask
    return {"input_word_ids": ids, "input_mask": mask, "input_type_ids": types}


def _substr(strings, pos, length):
    """Byte substrings with ``pos`` / ``length`` scalars or vectors (Substr wants both the strings' shape)."""
    shape = tf.shape(strings)
    return tf.strings.substr(strings, tf.broadcast_to(pos, shape), tf.broadcast_to(length, shape))


# One GraphTokenizer per vocabulary (its bytes) and spec in a process: its tf.functions are traced once and every
# SavedModel that holds it (a push's three folders, each task's serving model) reuses the traces instead of tracing
# the tokenizer anew (2-4 CPU s each).
_SHARED: "collections.OrderedDict[tuple, GraphTokenizer]" = collections.OrderedDict()
_SHARED_MAX = 4
_SHARED_LOCK = threading.Lock()


def shared_tokenizer(vocab_path: str, spec: TokenizerSpec) -> GraphTokenizer:
    """The process's :class:`GraphTokenizer` of the vocabulary file at ``vocab_path`` (keyed by its bytes, so a
    file replaced at the same path gets its own) with ``spec``; the :data:`_SHARED_MAX` latest are kept."""
    key = (hashlib.sha256(_read(vocab_path)).hexdigest(), spec)
    with _SHARED_LOCK:
        if key in _SHARED:
            _SHARED.move_to_end(key)
            return _SHARED[key]
        tokenizer = _SHARED[key] = GraphTokenizer(vocab_path, spec)
        while len(_SHARED) > _SHARED_MAX:
            _SHARED.popitem(last=False)
        return tokenizer


def twin_of(tokenizer) -> GraphTokenizer:
    """The in-graph twin of a project tokenizer (:class:`~components.text.tokenization.AlbertTokenizer` or
    :class:`~components.text.wordpiece.WordPieceTokenizer`): its vocabulary file read with its spec (the process's
    shared one, :func:`shared_tokenizer`)."""
    kind = getattr(tokenizer, "kind", "sentencepiece")
    path = tokenizer.model_path if kind == "sentencepiece" else tokenizer.vocab_path
    spec = TokenizerSpec(kind=kind, do_lower_case=bool(tokenizer.do_lower_case),
                         normalization=getattr(tokenizer, "normalization", "none"),
                         strip_accents=bool(getattr(tokenizer, "strip_accents", False)))
    return shared_tokenizer(path, spec)
