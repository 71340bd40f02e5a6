"""ALBERT's text normalisation (``preprocess_text`` of the official release).

Applied identically when the vocabulary is trained, when pretraining data is built and when
fine-tuning inputs are tokenized, so a piece means the same thing at every stage.
"""
import unicodedata


def preprocess_text(text: str, lower: bool = True, remove_space: bool = True, keep_accents: bool = False) -> str:
    """Collapse whitespace, map LaTeX-style quotes to '"', NFKD + drop combining marks, lowercase."""
    if remove_space:
        text = " ".join(text.strip().split())
    text = text.replace("``", '"').replace("''", '"')
    if not keep_accents:
        text = unicodedata.normalize("NFKD", text)
        text = "".join(c for c in text if not unicodedata.combining(c))
    if lower:
        text = text.lower()
    return text
