"""ALBERT's text normalisation (``preprocess_text`` of the official release).

Applied identically when the vocabulary is trained, when pretraining data is built and when
fine-tuning inputs are tokenized, so a piece means the same thing at every stage.

The official ``preprocess_text`` (google-research/albert ``tokenization.py``) collapses whitespace,
applies NFKD, drops combining marks and lowercases; it does *not* rewrite LaTeX-style quotes. That
rewrite (two backquotes or two apostrophes → ``"``) comes from XLNet's preprocessing; with the official
``30k-clean.model`` it changes the piece sequence (``''`` and ``"`` are different pieces), so it is
only available as the non-default ``latex_quotes=True``.
"""
import functools
import sys
import unicodedata


@functools.lru_cache(maxsize=1)
def _drop_combining() -> dict:
    """``str.translate`` table deleting every code point with a nonzero canonical combining class (built once per
    process, ~0.1 s; C-speed per character afterwards, unlike a Python loop over ``unicodedata.combining``)."""
    return {cp: None for cp in range(0x300, sys.maxunicode + 1) if unicodedata.combining(chr(cp))}


def preprocess_text(text: str, lower: bool = True, remove_space: bool = True, keep_accents: bool = False,
                    latex_quotes: bool = False) -> str:
    """Collapse whitespace, NFKD + drop combining marks, lowercase (the official function).

    ``latex_quotes=True`` additionally maps two backquotes and two apostrophes to '"' (XLNet's rule, not
    ALBERT's; off by default so text tokenizes as in the official pipeline).
    """
    if remove_space:
        text = " ".join(text.strip().split())
    if latex_quotes:
        text = text.replace("``", '"').replace("''", '"')
    if not keep_accents and not text.isascii():  # ASCII: NFKD is the identity and nothing is combining
        text = unicodedata.normalize("NFKD", text).translate(_drop_combining())
    if lower:
        text = text.lower()
    return text
