"""Text normalisation before SentencePiece: ALBERT's (``preprocess_text`` of the official release), or a Unicode
form that keeps every script's letters whole (:func:`normalize_text`, the language profiles' choice).

Applied identically when the vocabulary is trained, when pretraining data is built and when
fine-tuning inputs are tokenized, so a piece means the same thing at every stage.

The official ``preprocess_text`` (google-research/albert ``tokenization.py``) collapses whitespace,
applies NFKD, drops combining marks and lowercases; it does *not* rewrite LaTeX-style quotes. That
rewrite (two backquotes or two apostrophes → ``"``) comes from XLNet's preprocessing; with the official
``30k-clean.model`` it changes the piece sequence (``''`` and ``"`` are different pieces), so it is
only available as the non-default ``latex_quotes=True``.
"""
import functools
import unicodedata

from components.text import unicode_ranges


@functools.lru_cache(maxsize=1)
def _drop_combining() -> dict:
    """``str.translate`` table deleting every code point with a nonzero canonical combining class (from the stored
    ranges of :mod:`components.text.unicode_ranges`, once per process; C-speed per character afterwards, unlike a
    Python loop over ``unicodedata.combining``)."""
    return dict.fromkeys(unicode_ranges.code_points("combining"))


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


def strip_accents(text: str) -> str:
    """Drop combining marks and recompose: é → e, Å → A, but Hangul syllables, which NFD splits into conjoining jamo
    (no combining marks), come back whole."""
    if text.isascii():
        return text
    return unicodedata.normalize("NFC", unicodedata.normalize("NFD", text).translate(_drop_combining()))


def normalize_text(text: str, normalization: str = "albert", lower: bool = True, accents: bool = False) -> str:
    """The text a SentencePiece vocabulary sees (``vocab.normalization``, ``vocab.do_lower_case``,
    ``vocab.strip_accents``; config/languages.py).

    ``albert``: :func:`preprocess_text` (``accents`` plays no part: it always strips). ``nfkc`` / ``nfc`` / ``none``:
    whitespace collapsed, that Unicode form (``nfkc`` folds full-width forms: ＡＢＣ１２ → ABC12, ｱ → ア), combining marks
    dropped only with ``accents`` (:func:`strip_accents`), then lower-cased with ``lower``. Hangul syllables, kana
    with dakuten (が), the Devanagari virama (क्ष), Arabic madda (آ) and the Persian zero-width non-joiner survive.
    """
    if normalization == "albert":
        return preprocess_text(text, lower=lower)
    text = " ".join(text.strip().split())
    if normalization != "none" and not text.isascii():
        text = unicodedata.normalize(normalization.upper(), text)
    if accents:
        text = strip_accents(text)
    return text.lower() if lower else text
