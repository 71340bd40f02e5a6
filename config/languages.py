"""Language profiles: what ``language`` (an ISO 639-1 code) sets by default.

A profile is only defaults. Each behaviour it sets is a named setting of its own section, so a user can take a
profile and change one thing (``--set language=zh --set datagen.word_starts=official``). A setting left unset
(``None``) is filled from the profile when the configuration is built (:func:`resolve_sections`); a value given
explicitly always wins.

| setting | en (the official recipe) | zh | ja, ko | any other code |
|---|---|---|---|---|
| ``corpus.sentence_splitter`` | ``english`` | ``multilingual`` | ``multilingual`` | ``multilingual`` |
| ``vocab.kind`` (what VocabGen trains) | ``sentencepiece`` | ``wordpiece`` | ``sentencepiece`` | ``sentencepiece`` |
| ``vocab.normalization`` | ``albert`` | ``nfkc`` | ``nfkc`` | ``nfkc`` |
| ``vocab.strip_accents`` | (``albert`` strips) | ``False`` | ``False`` | ``False`` |
| ``vocab.character_coverage`` | 0.99995 | 0.9995 | 0.9995 | 1.0 |
| ``datagen.word_starts`` | ``official`` | ``boundary`` | ``boundary`` | ``boundary`` |

Why (docs/languages.md has the long form):
- English keeps the official release's behaviour, so its outputs and cache keys do not move.
- zh trains what the official Chinese models use (``albert_*_zh``): a WordPiece ``vocab.txt``, which SentencePiece
  read worse on reading comprehension (google-research/albert#58). An imported vocabulary's kind is the file's
  (``vocab.kind`` is about training only); a WordPiece one is read as BERT's ``BasicTokenizer`` reads it, so the
  normalisation settings apply to SentencePiece only.
- ``albert`` normalisation is NFKD with every combining mark dropped: it decomposes Hangul syllables into jamo,
  strips Japanese dakuten (が → か) and the Devanagari virama (क्ष → कष). Other scripts take NFKC, which folds
  full-width forms and keeps each script's letters whole.
- SentencePiece recommends a character coverage of 0.9995 for scripts with rich character sets (Chinese,
  Japanese; Korean has 11,172 syllables) and 1.0 for small alphabets.
- The official ``_is_start_piece_sp`` treats any piece with a character outside a-z as a word start, so
  whole-word and n-gram masking become per-piece in every other script; ``boundary`` takes word starts from
  SentencePiece's ``▁`` or WordPiece's ``##`` alone.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Dict, Optional

from config.schema import ConfigError

DEFAULT_LANGUAGE = "en"

# ISO 639-1 (the two-letter codes; "bh" is withdrawn but still seen, so it is kept).
ISO_639_1 = frozenset("""
aa ab ae af ak am an ar as av ay az ba be bg bh bi bm bn bo br bs ca ce ch co cr cs cu cv cy da de dv dz ee el en eo
es et eu fa ff fi fj fo fr fy ga gd gl gn gu gv ha he hi ho hr ht hu hy hz ia id ie ig ii ik io is it iu ja jv ka kg
ki kj kk kl km kn ko kr ks ku kv kw ky la lb lg li ln lo lt lu lv mg mh mi mk ml mn mr ms mt my na nb nd ne ng nl nn
no nr nv ny oc oj om or os pa pi pl ps pt qu rm rn ro ru rw sa sc sd se sg si sk sl sm sn so sq sr ss st su sv sw ta
te tg th ti tk tl tn to tr ts tt tw ty ug uk ur uz ve vi vo wa wo xh yi yo za zh zu
""".split())

SENTENCE_SPLITTERS = ("english", "multilingual")
VOCAB_KINDS = ("sentencepiece", "wordpiece")
# ``albert``: the official ``preprocess_text`` (NFKD, combining marks dropped); the others: that Unicode form (or
# none), then ``vocab.strip_accents`` and ``vocab.do_lower_case`` each on its own.
NORMALIZATIONS = ("albert", "nfkc", "nfc", "none")
WORD_STARTS = ("official", "boundary")


@dataclass(frozen=True)
class LanguageProfile:
    """The defaults one language gives the settings it owns (see the module's table)."""

    sentence_splitter: str
    vocab_kind: str
    normalization: str
    strip_accents: bool
    character_coverage: float
    word_starts: str


ENGLISH = LanguageProfile(sentence_splitter="english", vocab_kind="sentencepiece", normalization="albert",
                          strip_accents=False, character_coverage=0.99995, word_starts="official")
_GENERIC = LanguageProfile(sentence_splitter="multilingual", vocab_kind="sentencepiece", normalization="nfkc",
                           strip_accents=False, character_coverage=1.0, word_starts="boundary")
PROFILES: Dict[str, LanguageProfile] = {
    "en": ENGLISH,
    "zh": dataclasses.replace(_GENERIC, vocab_kind="wordpiece", character_coverage=0.9995),
    "ja": dataclasses.replace(_GENERIC, character_coverage=0.9995),
    "ko": dataclasses.replace(_GENERIC, character_coverage=0.9995),
}


def check_language(code: str, name: str = "language") -> str:
    """``code`` if it is an ISO 639-1 code, else a :class:`ConfigError` naming the setting."""
    if not isinstance(code, str) or code not in ISO_639_1:
        raise ConfigError(f"config {name}={code!r} is invalid: expected an ISO 639-1 code in lower case "
                          "(en, zh, ja, ko, ar, hi, ...)")
    return code


def profile(code: str) -> LanguageProfile:
    """The profile of ``code``: its own where one is defined (en, zh, ja, ko), else the generic one."""
    return PROFILES.get(check_language(code), _GENERIC)


def resolve_sections(code: str, corpus, vocab, datagen):
    """(corpus, vocab, datagen) with every setting left ``None`` filled from ``code``'s profile."""
    p = profile(code)

    def fill(section, **defaults):
        unset = {k: v for k, v in defaults.items() if getattr(section, k) is None}
        return dataclasses.replace(section, **unset) if unset else section

    return (fill(corpus, sentence_splitter=p.sentence_splitter),
            fill(vocab, kind=p.vocab_kind if vocab.import_model is None else None, normalization=p.normalization,
                 strip_accents=p.strip_accents, character_coverage=p.character_coverage),
            fill(datagen, word_starts=p.word_starts))


# The settings a language profile fills, by section; left out of a section's JSON while unset or at English's value
# (:func:`without_english`), so English keeps its cache keys.
LANGUAGE_FIELDS = {"corpus": ("sentence_splitter",), "vocab": ("kind", "normalization", "strip_accents"),
                   "datagen": ("word_starts",)}


def without_english(section, name: str, data: Dict[str, object]) -> Dict[str, object]:
    """``data`` less the language settings (``LANGUAGE_FIELDS[name]``) that are unset or at English's value."""
    return {k: v for k, v in data.items()
            if k not in LANGUAGE_FIELDS[name] or v not in (None, english_value(name, k))}


def english_value(section: str, name: str) -> Optional[object]:
    """English's value of a profile setting, by section and field name (what the sections leave out of their
    JSON, so English keeps its cache keys)."""
    return {("corpus", "sentence_splitter"): ENGLISH.sentence_splitter, ("vocab", "kind"): ENGLISH.vocab_kind,
            ("vocab", "normalization"): ENGLISH.normalization, ("vocab", "strip_accents"): ENGLISH.strip_accents,
            ("datagen", "word_starts"): ENGLISH.word_starts}[(section, name)]
