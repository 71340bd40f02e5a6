"""Per-document entry points: text → piece ids, and piece ids → serialized examples for every pass.

``generate_for_document`` is the one function a Beam ``DoFn`` calls per document; it derives its own
generator per pass from (global seed, document id, pass), so results do not depend on sharding.
"""
from __future__ import annotations

import itertools
from typing import Iterator, List, Optional, Sequence, Tuple

import numpy as np

from components.datagen.features import serialize_instance
from components.datagen.instances import (Instance, InstanceParams, RandomDocument, VocabInfo,
                                          create_instances_from_document, document_seed)
from components.text.tokenization import AlbertTokenizer

_ALBERT_NORMALIZE = AlbertTokenizer.normalize  # the shortcut mirrors exactly this method
_BATCH_MIN = 16  # sentences from which one batched SentencePiece call beats per-sentence calls


def _normalize(tokenizer, text: str) -> str:
    """``tokenizer.normalize`` with a shortcut for ASCII text, where NFKD and accent stripping are no-ops
    (the per-character accent filter is most of the tokenization time otherwise)."""
    if text.isascii() and tokenizer.normalize.__func__ is _ALBERT_NORMALIZE:
        text = " ".join(text.split()).replace("``", '"').replace("''", '"')
        return text.lower() if tokenizer.do_lower_case else text
    return tokenizer.normalize(text)


def tokenize_document(tokenizer, sentences: Sequence[str], vocab: Optional[VocabInfo] = None) -> List[np.ndarray]:
    """Sentences → one int32 id array per non-empty sentence, exactly ``tokenizer.encode`` (an
    ``AlbertTokenizer``).

    With ``vocab`` (from :meth:`VocabInfo.from_tokenizer`) the normalised sentences go straight to
    SentencePiece as ids (one single-threaded batched call from 16 sentences on: a Beam worker already
    runs one process per core) and only sentences holding a digits-comma piece take the slower official
    re-encoding. Without ``vocab`` it is simply ``tokenizer.encode`` per sentence.
    """
    if vocab is None or vocab.digit_comma is None:
        ids = [tokenizer.encode(s) for s in sentences]
        return [np.asarray(x, dtype=np.int32) for x in ids if x]
    texts = [_normalize(tokenizer, s) for s in sentences]
    if len(texts) >= _BATCH_MIN:
        encoded = tokenizer.sp.encode(texts, out_type=int, num_threads=1)
    else:  # a batch call has ~25 µs of fixed cost: short documents are faster sentence by sentence
        encoded = [tokenizer.sp.encode(t, out_type=int) for t in texts]
    if not encoded:
        return []
    lens = np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded))
    ends = np.cumsum(lens)
    total = int(ends[-1])
    flat = np.fromiter(itertools.chain.from_iterable(encoded), dtype=np.int32, count=total)
    out = np.split(flat, ends[:-1])  # views into one buffer
    quirky = vocab.digit_comma[flat]
    if quirky.any():
        for i in np.unique(np.searchsorted(ends, np.flatnonzero(quirky), side="right")).tolist():
            out[i] = np.asarray(tokenizer.encode(sentences[i]), dtype=np.int32)
    return [x for x in out if x.shape[0]]


def generate_for_document(doc_id: str, sentences_ids: Sequence[np.ndarray], global_seed: int, dupe_factor: int,
                          params: InstanceParams, vocab: VocabInfo,
                          random_document: Optional[RandomDocument] = None) -> Iterator[Tuple[bytes, Instance]]:
    """(serialized ``tf.train.Example``, ``Instance``) for every instance of every pass of one document.

    Pass ``p`` uses ``np.random.default_rng(document_seed(global_seed, doc_id, p))`` for everything,
    including the calls to ``random_document``, so the same inputs give the same bytes on any worker
    (for a given NumPy version: ``Generator`` streams are stable per version, not guaranteed across).
    """
    if not isinstance(dupe_factor, (int, np.integer)) or dupe_factor < 1:
        raise ValueError(f"dupe_factor must be an int >= 1, got {dupe_factor!r}")
    for pass_index in range(int(dupe_factor)):
        rng = np.random.default_rng(document_seed(global_seed, doc_id, pass_index))
        for inst in create_instances_from_document(sentences_ids, 0, rng, params, vocab, random_document):
            yield serialize_instance(inst, params.max_seq_length, params.max_predictions_per_seq), inst
