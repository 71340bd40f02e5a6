"""ALBERT's text normalisation (``preprocess_text`` of the official release).

Applied identically when the vocabulary is trained, when pretraining data is built and when
fine-tuning inputs are tokenized, so a piece means the same thing at every stage.
"""
import functools
import sys
import unicodedata


@functools.lru_cache(maxsize=1)
def _drop_combining() -> dict:
    """``str.translate`` table deleting every code point with a nonzero canonical combining class (built once per
    process, ~0.1 s; C-speed per character afterwards, unlike a Python loop over ``unicodedata.combining``)."""
    return {cp: None for cp in range(0x300, sys.maxunicode + 1) if unicodedata.combining(chr(cp))}


def preprocess_text(text: str, lower: bool = True, remove_space: bool = True, keep_accents: bool = False) -> str:
    """Collapse whitespace, map LaTeX-style quotes to '"', NFKD + drop combining marks, lowercase."""
    if remove_space:
        text = " ".join(text.strip().split())
    text = text.replace("``", '"').replace("''", '"')
    if not keep_accents and not text.isascii():  # ASCII: NFKD is the identity and nothing is combining
        text = unicodedata.normalize("NFKD", text).translate(_drop_combining())
    if lower:
        text = text.lower()
    return text
