"""The vocabulary: train one (``vocab.kind``: a SentencePiece model with ALBERT's recipe, or a WordPiece ``vocab.txt``
as the official Chinese models have), or import a SentencePiece model or a WordPiece ``vocab.txt`` (its kind read
from its content).

Training samples ``input_sentence_size`` sentences from the documents with a seeded reservoir (the official recipe
relies on SentencePiece's own unseeded shuffling). SentencePiece trains on them normalised exactly as tokenization
will (:func:`normalize_text` with ``vocab.normalization``), single-threaded, so the same documents and seed give a
byte-identical model that must put pad/unk/[CLS]/[SEP]/[MASK] at ids 0-4; WordPiece learns from their BERT
``BasicTokenizer`` words (:func:`train_wordpiece`), its special tokens first.

Size rule (:func:`build_vocab`): the vocabulary size is a property of the model, so ``vocab.vocab_size``
must agree with it. A trained SentencePiece model must have exactly ``vocab_size`` pieces (a learned WordPiece
vocabulary aims at that many, but always holds its whole alphabet, each character also as a ``##`` piece, so a
small size on a large alphabet gives more: its real size is what the artifact records). An imported vocabulary must have
``vocab_size`` pieces too, unless ``vocab_size`` is 0 ("take the model's size"): a mismatch is an error naming the
file, both sizes and the fix, never a silent choice of one of them.
"""
from __future__ import annotations

import io
import logging
import os
import posixpath
import random
import re
import time
from collections import Counter
from typing import Iterable, Iterator, List, Optional, Tuple

import sentencepiece as spm

from components.text.documents import parse_text_blocks
from components.text.normalize import normalize_text
from components.text.tokenization import check_special_ids
from components.text.tokenizers import SPEC_FILE, TokenizerSpec
from components.text.vocab_files import VocabularyError, vocabulary_kind
from config.errors import InputError, MissingInputError, UserError
from config.languages import ENGLISH
from config.schema import ConfigError
from trainer.files import SPM_FILE as MODEL_FILE
from trainer.files import WORDPIECE_FILE

log = logging.getLogger(__name__)

VOCAB_FILE = "spm.vocab"
# ALBERT's user-defined symbols: kept whole so the tokenizer never merges them into neighbours.
USER_DEFINED_SYMBOLS = ["(", ")", '"', "-", ".", "\u2013", "\u00a3", "\u20ac"]
CONTROL_SYMBOLS = ["[CLS]", "[SEP]", "[MASK]"]


def iter_sentences(shard_paths: Iterable[str]) -> Iterator[str]:
    """Sentences of documents shards (official text format), in shard order."""
    from apache_beam.io.filesystems import FileSystems  # lazy: apache_beam (1.7 s); gs:// aware

    for path in shard_paths:
        with FileSystems.open(path) as f:
            lines = (line.decode("utf-8") for line in f)
            for sentences in parse_text_blocks(lines):
                yield from sentences


def sample_by_language(shard_paths: Iterable[str], k: int, seed: int, rule) -> List[str]:
    """A run of several languages (each shard one language's, ``file_language``): ``k`` sentences (or all there are, if
    fewer) shared among the languages by ``rule`` (a :class:`components.datagen.language_sampling.SamplingRule`; n_L:
    sentences), each language's share a seeded reservoir of its sentences, or all of them repeated and a reservoir of
    the rest when its share is larger than it has. Untagged shards are taken whole, unsampled."""
    from components.text.documents import file_language  # lazy: plain Python (multilingual runs only)

    by_language: dict = {}
    for path in shard_paths:
        by_language.setdefault(file_language(path), []).append(path)
    counts = {lang: sum(1 for _ in iter_sentences(paths)) for lang, paths in sorted(by_language.items()) if lang}
    total = min(k, sum(counts.values()))
    shares = rule.target_shares(counts)
    out: List[str] = list(iter_sentences(by_language.get(None, [])))
    for lang, n in sorted(counts.items()):
        want = int(round(shares[lang] * total))
        repeats, rest = divmod(want, n) if n else (0, 0)
        paths = by_language[lang]
        if repeats:
            every = list(iter_sentences(paths))
            out.extend(every * repeats)
        out.extend(sample_sentences(iter_sentences(paths), rest, seed))
        log.info("vocab: %s: %d of %d sentences (target share %.4f)", lang, want, n, shares[lang])
    return out


def sample_sentences(sentences: Iterable[str], k: int, seed: int) -> List[str]:
    """Reservoir sample of ``k`` sentences (Algorithm R with a seeded RNG), returned in input order."""
    rng = random.Random(seed)
    reservoir: List[tuple] = []
    for i, s in enumerate(sentences):
        if i < k:
            reservoir.append((i, s))
        else:
            j = rng.randint(0, i)
            if j < k:
                reservoir[j] = (i, s)
    reservoir.sort()
    return [s for _, s in reservoir]


def train_sentencepiece(sentences: Iterable[str], output_dir: str, *, vocab_size: int,
                        character_coverage: float = 0.99995, input_sentence_size: int = 10_000_000,
                        do_lower_case: bool = True, seed: int = 12345, num_threads: int = 1,
                        normalization: str = "albert", strip_accents: bool = False) -> str:
    """Train ALBERT's unigram model into ``output_dir/spm.model``; returns the model path."""
    start = time.monotonic()
    normalized = sample_sentences(sentences, input_sentence_size, seed)
    # Normalised in place and handed over by draining (:func:`_drain`): the sample's text is held once in Python,
    # and shrinks while SentencePiece copies it, instead of three times (raw, normalised, SentencePiece's copy).
    for i, s in enumerate(normalized):
        normalized[i] = normalize_text(s, normalization, lower=do_lower_case, accents=strip_accents)
    normalized[:] = [t for t in normalized if t]
    if not normalized:
        raise ValueError("no sentences to train the SentencePiece model on")
    log.info("vocab: sampled %d sentences (%d characters) in %.1f s; training a %d-piece unigram model",
             len(normalized), sum(map(len, normalized)), time.monotonic() - start, vocab_size)
    os.makedirs(output_dir, exist_ok=True)
    model = io.BytesIO()
    spm.set_random_generator_seed(seed)
    # From an iterator into memory: the model proto then records no temporary paths, so the same
    # sentences and seed give byte-identical files.
    try:
        _train_unigram(normalized, model, vocab_size, character_coverage, num_threads)
    except RuntimeError as exc:  # SentencePiece's own check, as a setting the user can change
        needed = re.search(r"smaller than required_chars\. (\d+) vs (\d+)", str(exc))
        if not needed:
            raise
        raise ConfigError(f"config vocab.vocab_size={vocab_size} is too small: its special pieces and the "
                          f"characters vocab.character_coverage={character_coverage} keeps need "
                          f"{int(needed.group(2)):,} "
                          "(raise vocab.vocab_size or lower vocab.character_coverage)") from None
    model_path = os.path.join(output_dir, MODEL_FILE)
    _write_model(model.getvalue(), output_dir)
    validate_model(model_path)
    log.info("vocab: %s written, %.1f s in all", model_path, time.monotonic() - start)
    return model_path


def _train_unigram(normalized: List[str], model: io.BytesIO, vocab_size: int, character_coverage: float,
                   num_threads: int) -> None:
    spm.SentencePieceTrainer.train(
        sentence_iterator=_drain(normalized),
        model_writer=model,
        model_type="unigram",
        vocab_size=vocab_size,
        pad_id=0, unk_id=1, bos_id=-1, eos_id=-1,
        control_symbols=CONTROL_SYMBOLS,
        user_defined_symbols=USER_DEFINED_SYMBOLS,
        character_coverage=character_coverage,
        input_sentence_size=0,  # all of them: the seeded sample above already bounds the count
        shuffle_input_sentence=False,  # already sampled with our seed, in a fixed order
        num_threads=num_threads,
        minloglevel=2,
    )


# BERT's special tokens, first in a trained vocab.txt ([PAD] at 0, as in BERT's and the official Chinese models').
WORDPIECE_RESERVED = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def train_wordpiece(sentences: Iterable[str], output_dir: str, *, vocab_size: int,
                    character_coverage: float = 0.9995, input_sentence_size: int = 10_000_000,
                    do_lower_case: bool = True, seed: int = 12345) -> str:
    """Learn a WordPiece ``vocab.txt`` into ``output_dir`` (the official Chinese models' kind); returns its path.

    The same seeded sample of sentences as :func:`train_sentencepiece` is cut into BERT's ``BasicTokenizer`` words
    (:func:`components.text.wordpiece.basic_words`, exactly what tokenizing will do), and TensorFlow Text's WordPiece
    learner (the public form of BERT's, ``wordpiece_tokenizer_learner_lib.learn``) picks at most ``vocab_size``
    tokens after :data:`WORDPIECE_RESERVED`, plus the whole alphabet (each character alone and as a ``##`` piece)
    even past ``vocab_size``. The alphabet is the characters that make up ``character_coverage`` of the sample's
    characters, most frequent first (SentencePiece's meaning of the setting). Same sentences, same file.
    """
    from tensorflow_text.tools.wordpiece_vocab import wordpiece_tokenizer_learner_lib as learner  # lazy: tensorflow_text (3.0 s)

    from components.text.wordpiece import basic_words  # lazy: components.text.wordpiece (0.003 s)

    start = time.monotonic()
    counts: Counter = Counter()
    for sentence in sample_sentences(sentences, input_sentence_size, seed):
        counts.update(basic_words(sentence, do_lower_case))
    if not counts:
        raise ValueError("no sentences to learn the WordPiece vocabulary from")
    chars: Counter = Counter()
    for word, n in counts.items():
        for ch in word:
            chars[ch] += n
    total, covered, alphabet = sum(chars.values()), 0, 0
    for _, n in sorted(chars.items(), key=lambda item: (-item[1], item[0])):
        if covered >= character_coverage * total:
            break
        covered += n
        alphabet += 1
    tokens = learner.learn(sorted(counts.items()), vocab_size, WORDPIECE_RESERVED, max_unique_chars=alphabet)
    os.makedirs(output_dir, exist_ok=True)
    path = os.path.join(output_dir, WORDPIECE_FILE)
    with open(path, "w", encoding="utf-8") as f:
        f.write("".join(token + "\n" for token in tokens))
    log.info("vocab: %d WordPiece tokens from %d words (%d distinct, alphabet %d) in %.1f s", len(tokens),
             sum(counts.values()), len(counts), alphabet, time.monotonic() - start)
    return path


def _drain(items: List[str]) -> Iterator[str]:
    """``items`` in order, each removed from the list as it is yielded (the list is emptied)."""
    items.reverse()
    while items:
        yield items.pop()


def import_sentencepiece(source: str, output_dir: str, expected_vocab_size: Optional[int] = None) -> str:
    """Copy an existing model (e.g. the official ``30k-clean.model``) after validating its special ids."""
    from apache_beam.io.filesystems import FileSystems  # lazy: apache_beam (1.7 s)

    if not FileSystems.exists(source):
        raise MissingInputError(f"SentencePiece model {source} (vocab.import_model) does not exist")
    with FileSystems.open(source) as f:
        data = f.read()
    sp = spm.SentencePieceProcessor()
    try:
        sp.load_from_serialized_proto(data)
    except Exception as exc:  # sentencepiece raises RuntimeError/OSError on garbage
        raise InputError(f"{source} is not a SentencePiece model: {exc}") from None
    check_special_ids(sp, source)
    if expected_vocab_size and sp.get_piece_size() != expected_vocab_size:
        raise VocabSizeMismatchError(
            f"{source} has {sp.get_piece_size()} pieces but the config says vocab.vocab_size={expected_vocab_size}; "
            f"pass --set vocab.vocab_size={sp.get_piece_size()} (or 0 to take the model's size)")
    return _write_model(data, output_dir)


class VocabSizeMismatchError(UserError, ValueError):
    """The SentencePiece model's size differs from ``vocab.vocab_size``."""


def import_wordpiece(source: str, output_dir: str, expected_vocab_size: Optional[int] = None) -> str:
    """Copy a WordPiece ``vocab.txt`` (e.g. an official Chinese model's) after checking it reads as one: BERT's
    special tokens present, no duplicates, UTF-8."""
    from apache_beam.io.filesystems import FileSystems  # lazy: apache_beam (1.7 s)

    from components.text.wordpiece import WordPieceTokenizer  # lazy: components.text.wordpiece (0.003 s)

    with FileSystems.open(source) as f:
        data = f.read()
    size = WordPieceTokenizer.from_serialized(data, path=source).vocab_size
    if expected_vocab_size and size != expected_vocab_size:
        raise VocabSizeMismatchError(
            f"{source} has {size} tokens but the config says vocab.vocab_size={expected_vocab_size}; "
            f"pass --set vocab.vocab_size={size} (or 0 to take the file's size)")
    os.makedirs(output_dir, exist_ok=True)
    path = os.path.join(output_dir, WORDPIECE_FILE)
    with open(path, "wb") as f:
        f.write(data)
    return path


def imported_kind(source: str) -> str:
    """``sentencepiece`` or ``wordpiece``, read from the file at ``source`` (``vocab.import_model``)."""
    from apache_beam.io.filesystems import FileSystems  # lazy: apache_beam (1.7 s)

    if not FileSystems.exists(source):
        raise MissingInputError(f"vocabulary {source} (vocab.import_model) does not exist")

    with FileSystems.open(source) as f:
        head = f.read()
    try:
        return vocabulary_kind(head, source)
    except VocabularyError as exc:
        raise VocabularyError(f"{exc} (vocab.import_model)") from None


def build_vocab(vocab_cfg, seed: int, documents_dir: Optional[str], output_dir: str) -> Tuple[int, str]:
    """``VocabGen``'s work: import ``vocab_cfg.import_model`` or train on the documents shards into
    ``output_dir``; returns (vocabulary size, origin). Enforces the size rule of the module docstring. The
    folder's ``tokenizer.json`` says its kind and text settings unless they are English's (components/text/
    tokenizers.py)."""
    kind = imported_kind(vocab_cfg.import_model) if vocab_cfg.import_model else (vocab_cfg.kind or "sentencepiece")
    spec = TokenizerSpec.for_vocab(kind, vocab_cfg)
    coverage = ENGLISH.character_coverage if vocab_cfg.character_coverage is None else vocab_cfg.character_coverage
    if vocab_cfg.import_model and kind == "wordpiece":
        import_wordpiece(vocab_cfg.import_model, output_dir, expected_vocab_size=vocab_cfg.vocab_size or None)
        origin = f"imported:{vocab_cfg.import_model}"
    elif vocab_cfg.import_model:
        import_sentencepiece(vocab_cfg.import_model, output_dir, expected_vocab_size=vocab_cfg.vocab_size or None)
        origin = f"imported:{vocab_cfg.import_model}"
    elif kind == "wordpiece":
        from components.corpus import corpus_beam  # lazy: apache_beam (1.7 s)

        train_wordpiece(_sentences(vocab_cfg, corpus_beam.document_shards(documents_dir), seed), output_dir,
                        vocab_size=vocab_cfg.vocab_size, character_coverage=coverage,
                        input_sentence_size=vocab_cfg.input_sentence_size, do_lower_case=vocab_cfg.do_lower_case,
                        seed=seed)
        origin = "trained"
    else:
        from components.corpus import corpus_beam  # lazy: apache_beam (1.7 s)

        train_sentencepiece(
            _sentences(vocab_cfg, corpus_beam.document_shards(documents_dir), seed), output_dir,
            vocab_size=vocab_cfg.vocab_size,
            character_coverage=coverage, input_sentence_size=vocab_cfg.input_sentence_size,
            do_lower_case=vocab_cfg.do_lower_case, seed=seed, normalization=spec.normalization,
            strip_accents=spec.strip_accents)
        origin = "trained"
    if spec.needs_file:
        with open(os.path.join(output_dir, SPEC_FILE), "w", encoding="utf-8") as f:
            f.write(spec.to_json())
    if kind == "wordpiece":  # a learned vocabulary's size is what the learner made of vocab.vocab_size
        return _wordpiece_size(output_dir), origin
    model_path = os.path.join(output_dir, MODEL_FILE)
    size = validate_model(model_path)
    if origin == "trained" and size != vocab_cfg.vocab_size:
        raise VocabSizeMismatchError(f"{model_path}: trained {size} pieces, config asked vocab.vocab_size="
                                     f"{vocab_cfg.vocab_size}")
    return size, origin


def _sentences(vocab_cfg, shards: List[str], seed: int) -> Iterable[str]:
    """The documents' sentences; in a run of several languages (``vocab.language_sampling`` set), sampled by
    language (:func:`sample_by_language`)."""
    if vocab_cfg.language_sampling is None:
        return iter_sentences(shards)
    from components.datagen.language_sampling import SamplingRule  # lazy: plain Python (multilingual runs only)

    return sample_by_language(shards, vocab_cfg.input_sentence_size, seed,
                              SamplingRule.from_description(vocab_cfg.language_sampling))


def vocab_folder_spec(folder: str, do_lower_case: bool = True) -> TokenizerSpec:
    """The :class:`TokenizerSpec` of a vocabulary folder (local or gs://): its ``tokenizer.json``, else English's
    SentencePiece with ``do_lower_case`` (recorded elsewhere by folders written before the file existed)."""
    from apache_beam.io.filesystems import FileSystems  # lazy: apache_beam (1.7 s)

    path = posixpath.join(folder, SPEC_FILE) if "://" in folder else os.path.join(folder, SPEC_FILE)
    if not FileSystems.exists(path):
        return TokenizerSpec.from_json(None, do_lower_case)
    with FileSystems.open(path) as f:
        return TokenizerSpec.from_json(f.read().decode("utf-8"))


def _wordpiece_size(output_dir: str) -> int:
    from components.text.wordpiece import WordPieceTokenizer  # lazy: components.text.wordpiece (0.003 s)

    return WordPieceTokenizer(os.path.join(output_dir, WORDPIECE_FILE)).vocab_size


def _write_model(data: bytes, output_dir: str) -> str:
    """``spm.model`` plus the ``spm.vocab`` listing (piece<TAB>score) that ALBERT tooling reads."""
    sp = spm.SentencePieceProcessor()
    sp.load_from_serialized_proto(data)
    os.makedirs(output_dir, exist_ok=True)
    model_path = os.path.join(output_dir, MODEL_FILE)
    with open(model_path, "wb") as f:
        f.write(data)
    with open(os.path.join(output_dir, VOCAB_FILE), "w", encoding="utf-8") as f:
        for i in range(sp.get_piece_size()):
            f.write(f"{sp.id_to_piece(i)}\t{sp.get_score(i)}\n")
    return model_path


def validate_model(model_path: str) -> int:
    """Load ``model_path``, check ALBERT's special ids, return the vocabulary size."""
    if "://" not in model_path and not os.path.isfile(model_path):
        raise MissingInputError(f"SentencePiece model {model_path} does not exist")
    sp = spm.SentencePieceProcessor()
    try:
        sp.load(model_path)
    except Exception as exc:  # sentencepiece raises RuntimeError/OSError on garbage
        raise InputError(f"{model_path} is not a SentencePiece model: {exc}") from None
    check_special_ids(sp, model_path)
    return sp.get_piece_size()
