"""Per-document entry points: text → piece ids, and piece ids → serialized examples for every pass.

``generate_for_document`` is the one function a Beam ``DoFn`` calls per document; it derives its own
generator per pass from (global seed, document id, pass), so results do not depend on sharding.
"""
from __future__ import annotations

import itertools
from typing import Iterator, List, Optional, Sequence, Tuple

import numpy as np

from components.datagen.features import serialize_instance
from components.datagen.instances import (Instance, InstanceParams, RandomDocument, TokenizedDocument, VocabInfo,
                                          create_instances_from_document, document_seed)
from components.datagen.language_sampling import kept_indices, pass_plan
from components.text.tokenization import AlbertTokenizer

_ALBERT_NORMALIZE = AlbertTokenizer.normalize  # the shortcut mirrors exactly this method
_BATCH_MIN = 16  # sentences from which one batched SentencePiece call beats per-sentence calls
# str.split() whitespace in ASCII other than " " and "\n" ("\n" separates the sentences below) → " ".
_ASCII_SPACES = str.maketrans({c: " " for c in "\t\r\x0b\x0c\x1c\x1d\x1e\x1f"})


def normalize_sentences(tokenizer, sentences: Sequence[str]) -> List[str]:
    """``[tokenizer.normalize(s) for s in sentences]``, faster.

    For ALBERT's normalisation, ASCII text needs no NFKD or accent stripping, so whitespace collapsing and
    lower-casing run once over the document's ASCII sentences joined by newlines
    (sentences never contain one) with C-speed string methods, instead of once per sentence; only
    non-ASCII sentences take the per-sentence path.
    """
    if tokenizer.normalize.__func__ is not _ALBERT_NORMALIZE or tokenizer.normalization != "albert":
        return [tokenizer.normalize(s) for s in sentences]
    joined = "\n".join(sentences)
    if joined.isascii():
        plain = None
    else:
        plain = [i for i, s in enumerate(sentences) if s.isascii()]
        joined = "\n".join(sentences[i] for i in plain)
    if not joined or joined.count("\n") != (len(sentences) if plain is None else len(plain)) - 1:
        return [tokenizer.normalize(s) for s in sentences]  # nothing ASCII, or a newline inside a sentence
    text = joined.translate(_ASCII_SPACES)
    while "  " in text:
        text = text.replace("  ", " ")
    if tokenizer.do_lower_case:
        text = text.lower()
    lines = [line.strip(" ") for line in text.split("\n")]
    if plain is None:
        return lines
    out = [tokenizer.normalize(s) if not s.isascii() else "" for s in sentences]
    for i, line in zip(plain, lines):
        out[i] = line
    return out


def tokenize_document(tokenizer, sentences: Sequence[str], vocab: Optional[VocabInfo] = None,
                      segmenter=None) -> TokenizedDocument:
    """Sentences → the document's piece ids, one sentence per non-empty sentence, exactly ``tokenizer.encode``
    (an ``AlbertTokenizer``), as a :class:`TokenizedDocument` (flat ids + sentence offsets).

    With ``vocab`` (from :meth:`VocabInfo.from_tokenizer`) the normalised sentences go straight to
    SentencePiece as ids (one single-threaded batched call from 16 sentences on: a Beam worker already
    runs one process per core) and only sentences holding a digits-comma piece take the slower official
    re-encoding. Without ``vocab`` it is simply ``tokenizer.encode`` per sentence.

    ``segmenter`` (a :class:`components.text.segmenters.PieceSegmenter`, ``datagen.segmenters``): the same ids, and
    the document's ``starts`` from the segmenter's words (a sentence it cannot align keeps the vocabulary's rule).
    """
    if segmenter is not None:
        return _segmented(tokenizer, sentences, vocab, segmenter)
    if vocab is None or vocab.digit_comma is None:
        ids = [tokenizer.encode(s) for s in sentences]
        return TokenizedDocument.from_sentences([np.asarray(x, dtype=np.int32) for x in ids if x])
    texts = normalize_sentences(tokenizer, sentences)
    if len(texts) >= _BATCH_MIN:
        encoded = tokenizer.sp.encode(texts, out_type=int, num_threads=1)
    else:  # a batch call has ~25 µs of fixed cost: short documents are faster sentence by sentence
        encoded = [tokenizer.sp.encode(t, out_type=int) for t in texts]
    lens = np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded))
    total = int(lens.sum())
    flat = np.fromiter(itertools.chain.from_iterable(encoded), dtype=np.int32, count=total)
    quirky = vocab.digit_comma[flat]
    if quirky.any():  # rare: re-encode those sentences the official way and rebuild
        ends = np.cumsum(lens)
        redo = set(np.searchsorted(ends, np.flatnonzero(quirky), side="right").tolist())
        return TokenizedDocument.from_sentences(
            [np.asarray(tokenizer.encode(sentences[i]), dtype=np.int32) if i in redo
             else flat[ends[i] - lens[i]:ends[i]] for i in range(len(encoded))])
    nonempty = lens[lens > 0]
    offsets = np.zeros(nonempty.shape[0] + 1, dtype=np.int64)
    np.cumsum(nonempty, out=offsets[1:])
    return TokenizedDocument(flat, offsets)


def _segmented(tokenizer, sentences: Sequence[str], vocab: VocabInfo, segmenter) -> TokenizedDocument:
    """:func:`tokenize_document` with each sentence's segmenter word starts (the same ids: one batched SentencePiece
    call, the official re-encoding for a sentence with a digits-comma piece, or the WordPiece tokenizer's encode)."""
    if vocab.digit_comma is None:
        texts = list(sentences)
        encoded = [np.asarray(tokenizer.encode(s), dtype=np.int32) for s in sentences]
    else:
        texts = normalize_sentences(tokenizer, sentences)
        encoded = [np.asarray(e, dtype=np.int32) for e in tokenizer.sp.encode(texts, out_type=int, num_threads=1)]
        encoded = [np.asarray(tokenizer.encode(s), dtype=np.int32) if e.shape[0] and vocab.digit_comma[e].any()
                   else e for s, e in zip(sentences, encoded)]
    ids: List[np.ndarray] = []
    starts: List[np.ndarray] = []
    for text, flat in zip(texts, encoded):
        if not flat.shape[0]:
            continue
        found = segmenter.starts(text, flat)
        ids.append(flat)
        starts.append(vocab.is_word_start[flat] if found is None else found)
    out = TokenizedDocument.from_sentences(ids)
    out.starts = np.concatenate(starts) if starts else np.zeros(0, bool)
    return out


def generate_for_document(doc_id: str, sentences_ids: Sequence[np.ndarray], global_seed: int, dupe_factor: int,
                          params: InstanceParams, vocab: VocabInfo,
                          random_document: Optional[RandomDocument] = None,
                          passes: Optional[float] = None) -> Iterator[Tuple[bytes, Instance]]:
    """(serialized ``tf.train.Example``, ``Instance``) for every instance of every pass of one document.

    Pass ``p`` uses ``np.random.default_rng(document_seed(global_seed, doc_id, p))`` for everything,
    including the calls to ``random_document``, so the same inputs give the same bytes on any worker
    (for a given NumPy version: ``Generator`` streams are stable per version, not guaranteed across).

    ``passes`` (language sampling, :mod:`components.datagen.language_sampling`; default ``dupe_factor``): e passes,
    the first ⌊e⌋ whole and of pass ⌊e⌋ the instances that :func:`kept_indices` keeps.
    """
    if not isinstance(dupe_factor, (int, np.integer)) or dupe_factor < 1:
        raise ValueError(f"dupe_factor must be an int >= 1, got {dupe_factor!r}")
    sentences_ids = TokenizedDocument.from_sentences(sentences_ids)
    whole, fraction = (int(dupe_factor), 0.0) if passes is None else pass_plan(passes)
    for pass_index in range(whole + (fraction > 0)):
        rng = np.random.default_rng(document_seed(global_seed, doc_id, pass_index))
        instances = create_instances_from_document(sentences_ids, 0, rng, params, vocab, random_document)
        if pass_index == whole:  # the partial pass
            instances = [instances[i] for i in kept_indices(global_seed, doc_id, pass_index, len(instances), fraction)]
        for inst in instances:
            yield serialize_instance(inst, params.max_seq_length, params.max_predictions_per_seq), inst
