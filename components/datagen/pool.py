"""A compact pool of tokenized documents, the source of "random other documents" (official SOP negatives, NSP).

The official script indexes its in-memory list of every document; a streaming pipeline instead draws from a
deterministic sample of documents (see ``components.datagen.datagen_beam``). The pool stores all of its tokens in one
flat int32 array plus two offset arrays, so it pickles in one memcpy and a Beam side input built from it is
three NumPy arrays and a list of ids, not millions of Python ints (Beam's state cache measures side inputs
object by object, which made a list-of-lists pool cost more than generating the data).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Dict, List, Optional

import numpy as np

from components.datagen.instances import RandomDocument, TokenizedDocument


class DocumentPool:
    """Tokenized documents in a fixed order (their ids in ``doc_ids``), stored flat.

    :meth:`sampler` gives the ``random_document(rng)`` callable of
    :func:`components.datagen.instances.create_instances_from_document`: one ``rng.integers(n)`` draw over the
    pool without the current document, in pool order.
    """

    def __init__(self, doc_ids: "Sequence[str]", documents: "Sequence[Sequence[np.ndarray]]"):
        if len(doc_ids) != len(documents):
            raise ValueError("doc_ids and documents differ in length")
        self.doc_ids: List[str] = list(doc_ids)
        docs = [TokenizedDocument.from_sentences(d) for d in documents]
        for d, given in zip(docs, documents):
            if len(d) == 0:
                raise ValueError("pooled documents must not be empty")
            if len(d) != len(given):
                raise ValueError("pooled documents must not contain empty sentences")
        flats = [d.flat[d.offsets[0]:d.offsets[-1]] for d in docs]
        self.flat = np.concatenate(flats).astype(np.int32, copy=False) if flats else np.zeros(0, np.int32)
        self.sentence_offsets = np.zeros(sum(len(d) for d in docs) + 1, dtype=np.int64)
        pos, base = 1, 0
        for d in docs:
            n = len(d)
            self.sentence_offsets[pos:pos + n] = d.offsets[1:] - d.offsets[0] + base
            base += d.num_tokens
            pos += n
        self.document_offsets = np.concatenate([[0], np.cumsum([len(d) for d in docs])]).astype(np.int64)
        self._index: Optional[Dict[str, int]] = None

    def __len__(self) -> int:
        return len(self.doc_ids)

    def __getstate__(self):
        return {"doc_ids": self.doc_ids, "flat": self.flat, "sentence_offsets": self.sentence_offsets,
                "document_offsets": self.document_offsets}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._index = None

    @property
    def num_tokens(self) -> int:
        return int(self.flat.shape[0])

    def document(self, i: int) -> TokenizedDocument:
        """Pooled document i as a view (its offsets point into the pool's flat buffer: no copy)."""
        first, last = int(self.document_offsets[i]), int(self.document_offsets[i + 1])
        return TokenizedDocument(self.flat, self.sentence_offsets[first:last + 1])

    def _position(self, doc_id: str) -> Optional[int]:
        if self._index is None:
            self._index = {d: i for i, d in enumerate(self.doc_ids)}
        return self._index.get(doc_id)

    def get(self, doc_id: str) -> Optional[TokenizedDocument]:
        """The pooled document (a view), or None: lets the generator skip re-tokenizing it."""
        i = self._position(doc_id)
        return None if i is None else self.document(i)

    def sampler(self, exclude_doc_id: str, alone: Optional[TokenizedDocument] = None) -> RandomDocument:
        """``random_document(rng)``: a uniformly drawn pooled document other than ``exclude_doc_id``.

        When the pool holds no other document, ``alone`` (the document itself, what the official script ends
        up drawing after its ten retries when a corpus has one document) is returned if given; otherwise
        drawing is an error.
        """
        skip = self._position(exclude_doc_id)
        n = len(self.doc_ids) - (skip is not None)

        def random_document(rng: np.random.Generator) -> TokenizedDocument:
            if n <= 0:
                if alone is not None:
                    return alone
                raise ValueError("the corpus has a single document: no other document to draw a random segment "
                                 "from (use sop_mode=pure)")
            r = int(rng.integers(n))
            if skip is not None and r >= skip:
                r += 1
            return self.document(r)

        return random_document
