"""Language profiles: what ``language`` (an ISO 639-1 code, or a list of them) sets by default.

``language`` is one code (``en``) or a list (``[en, zh, ja, ko]``): :func:`run_languages` reads either into the
run's languages, and :func:`language_value` is the form the configuration keeps (the code itself for one language,
so ``[zh]`` and ``zh`` are the same JSON and the same cache keys; a list for several). A run of several languages
takes its run-wide defaults from :func:`run_profile` (one vocabulary for all) and each document's own profile
(:func:`profile`) for what is done per document.

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
from typing import Any, Dict, Optional, Sequence, Tuple, Union

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

    sentence_splitter: Optional[str]  # None in a run of several languages: each document's own (run_profile)
    vocab_kind: str
    normalization: str
    strip_accents: bool
    character_coverage: float
    word_starts: Optional[str]  # None in a run of several languages whose profiles differ: each file's own


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


def run_languages(value: Any, name: str = "language") -> Tuple[str, ...]:
    """The run's languages from ``language``'s value: one ISO 639-1 code (``"en"``), a list of them
    (``["en", "zh"]``), or the text ``--set`` gives (``"[en, zh]"``, ``"en,zh"``). In the order given; an unknown
    code, a repeated one or an empty list is a :class:`ConfigError` naming the setting."""
    if isinstance(value, str) and value.strip().startswith("["):
        import yaml  # lazy: yaml (0.02 s; only for a list given as text)

        try:
            value = yaml.safe_load(value)
        except yaml.YAMLError:
            raise ConfigError(f"config {name}={value!r} is invalid: expected an ISO 639-1 code or a list of them "
                              "([en, zh, ja, ko])") from None
    elif isinstance(value, str) and "," in value:
        value = [v.strip() for v in value.split(",")]
    codes = (value,) if isinstance(value, str) else value
    if not isinstance(codes, (list, tuple)) or not codes:
        raise ConfigError(f"config {name}={value!r} is invalid: expected an ISO 639-1 code or a non-empty list of "
                          "them ([en, zh, ja, ko])")
    for code in codes:
        if not isinstance(code, str) or code not in ISO_639_1:
            raise ConfigError(f"config {name}={value!r} is invalid: {code!r} is not an ISO 639-1 code in lower case "
                              "(en, zh, ja, ko, ar, hi, ...)" if len(codes) > 1 else
                              f"config {name}={code!r} is invalid: expected an ISO 639-1 code in lower case "
                              "(en, zh, ja, ko, ar, hi, ...)")
    repeated = sorted({c for c in codes if list(codes).count(c) > 1})
    if repeated:
        raise ConfigError(f"config {name}={list(codes)!r} is invalid: {', '.join(repeated)} listed twice")
    return tuple(codes)


def language_value(value: Any, name: str = "language") -> Union[str, list]:
    """The form the configuration keeps: the code itself for one language (``[zh]`` → ``"zh"``: the same JSON and
    cache keys as ``zh``), a list for several."""
    codes = run_languages(value, name)
    return codes[0] if len(codes) == 1 else list(codes)


def is_multilingual(value: Any) -> bool:
    """True when ``language`` lists more than one language."""
    return len(run_languages(value)) > 1


def tagged_languages(value: Any, corpus) -> Optional[list]:
    """What ``corpus.languages`` holds: the run's languages when its documents are tagged (a run of several
    languages, or a source marked with ``corpus.wikipedia_language`` / ``corpus.books_language``), else None (a
    single-language run's corpus JSON does not change). A value set by hand must be that list."""
    codes = run_languages(value)
    tagged = len(codes) > 1 or corpus.wikipedia_language is not None or corpus.books_language is not None
    derived = list(codes) if tagged else None
    if corpus.languages is not None and list(corpus.languages) != derived:
        raise ConfigError(f"config corpus.languages={list(corpus.languages)!r} is invalid: it is filled from "
                          f"language (set language={list(codes) if len(codes) > 1 else codes[0]!r} instead)")
    return derived


def run_profile(codes: Sequence[str]) -> LanguageProfile:
    """The run-wide defaults of a run in ``codes``: one language's own profile; for several, one vocabulary for all:

    - ``sentence_splitter``: None, left unset: CorpusGen splits each document by its own language's profile
      (``corpus.sentence_splitter``, when given, applies to every document);
    - ``vocab_kind``: ``sentencepiece`` (one model for every script; WordPiece stays one setting away);
    - ``normalization``: ``nfkc`` unless every language's profile says otherwise (``albert``'s NFKD with marks
      dropped breaks Hangul, kana and Devanagari, so it cannot be the mix's), ``strip_accents`` false;
    - ``character_coverage``: the lowest among the languages' profiles: SentencePiece's coverage is over the whole
      sample, so a mix with Chinese or Japanese needs the rich-script value (0.9995) or the rare Han characters
      each take a piece of the vocabulary; a mix of small alphabets keeps 1.0;
    - ``word_starts``: the languages' common value, else None, left unset: datagen takes each documents file's
      language's (``official`` for English's files, ``boundary`` for the others; ``datagen.word_starts``, when
      given, applies to every file).
    """
    profiles = [profile(c) for c in codes]
    if len(profiles) == 1:
        return profiles[0]

    def same_or(attr, fallback):
        values = {getattr(p, attr) for p in profiles}
        return values.pop() if len(values) == 1 else fallback

    return LanguageProfile(sentence_splitter=None, vocab_kind="sentencepiece",
                           normalization=same_or("normalization", "nfkc"),
                           strip_accents=same_or("strip_accents", False),
                           character_coverage=min(p.character_coverage for p in profiles),
                           word_starts=same_or("word_starts", None))


def resolve_sections(code: Any, corpus, vocab, datagen):
    """(corpus, vocab, datagen) with every setting left ``None`` filled from the profile of ``code`` (one code or
    the run's list: :func:`run_profile`)."""
    p = run_profile(run_languages(code))

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
