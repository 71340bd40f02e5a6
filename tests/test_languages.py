"""Languages beyond English (issue 54): profiles, normalisation that keeps each script, sentences in every script,
and both vocabulary kinds through datagen and ``albert-pipeline tokenize``."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from components.datagen.instances import VocabInfo
from components.corpus.books import book_document_from_bytes
from components.text.normalize import normalize_text, preprocess_text
from components.text.sentences import split_multilingual, split_sentences
from components.text.tokenizers import SPEC_FILE, TokenizerSpec, load_tokenizer
from components.text.vocab_files import VocabularyError
from config.languages import ENGLISH, PROFILES, profile, resolve_sections
from config.schema import ConfigError
from pipeline.settings.configs import build_config

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "tests", "fixtures")
MULTI = os.path.join(FIXTURES, "multilingual")
WORDPIECE_VOCAB = os.path.join(FIXTURES, "wordpiece", "vocab.txt")
SPM_MODEL = os.path.join(ROOT, "data", "sample", "vocab", "30k-clean.model")


# -- profiles -----------------------------------------------------------------------------------------------------
def test_english_sections_keep_their_json_and_node_parameters():
    """English's node parameters, and so its cache keys, are those of the commit before language profiles existed
    (3ad0338^, tests/fixtures/fingerprints/english_before_languages.json, made by tests/fingerprints.py at that
    commit): every node it had, in every English preset. The data gate and the examples gate came later (their own
    fingerprints: tests/test_fingerprints.py), and so did the SQuAD and RACE nodes' raw-text exports: a preset that
    turns them off (``small``: ``benchmarks.export_serving_model=false``) says so in those two nodes' parameters, the
    one field they gained (a preset that leaves them on, as every other, keeps them as they were)."""
    from tests import fingerprints

    config = build_config("sample")
    assert (config.language, config.corpus.sentence_splitter, config.vocab.normalization,
            config.datagen.word_starts, config.vocab.character_coverage) == ("en", "english", "albert", "official",
                                                                             0.99995)
    before = fingerprints.load("english_before_languages.json")
    now = fingerprints.node_parameters()
    assert sorted(before) == ["paper", "paper-v2", "sample", "small"]
    for name, nodes in before.items():
        if name == "small":
            nodes = {n: ({**p, "config": {**p["config"], "export_serving_model": False}}
                         if n in ("SquadBenchmark", "RaceBenchmark") else p) for n, p in nodes.items()}
        assert {node: now[name][node] for node in nodes} == nodes, name
        assert set(now[name]) - set(nodes) == {"DataGate", "DataGateCheck", "ExamplesGate"}


def test_a_profile_is_only_defaults_and_an_explicit_setting_wins():
    zh = build_config("sample", overrides=["language=zh"])
    assert (zh.corpus.sentence_splitter, zh.vocab.normalization, zh.vocab.strip_accents, zh.vocab.character_coverage,
            zh.datagen.word_starts) == ("multilingual", "nfkc", False, 0.9995, "boundary")
    assert json.loads(zh.datagen.to_json())["word_starts"] == "boundary"
    mixed = build_config("sample", overrides=["language=zh", "datagen.word_starts=official",
                                              "vocab.character_coverage=0.99995"])
    assert (mixed.datagen.word_starts, mixed.vocab.character_coverage) == ("official", 0.99995)
    assert "word_starts" not in mixed.datagen.to_dict()  # English's value: the same key as English's node
    ar = build_config("sample", overrides=["language=ar"])
    assert (ar.vocab.character_coverage, ar.corpus.sentence_splitter) == (1.0, "multilingual")
    assert profile("th") == profile("hi") == profile("fa") == profile("es")
    assert set(PROFILES) == {"en", "zh", "ja", "ko"} and PROFILES["en"] is ENGLISH


@pytest.mark.parametrize("code", ["xx", "EN", "eng", "", "zh-CN"])
def test_an_unknown_language_code_is_a_config_error(code):
    with pytest.raises(ConfigError, match=r"^config language=.* is invalid: expected an ISO 639-1 code"):
        build_config("sample", overrides=[f"language={code}"])


def _one_error_line(proc, command: str) -> str:
    """The one line a refused command prints, without its log path (tests/test_cli_errors.py checks the log)."""
    assert proc.returncode == 2 and proc.stdout == ""
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    head, _, log = lines[0].rpartition(" (full traceback: ")
    assert head.startswith(f"albert-pipeline {command}: ") and log.endswith(".log)")
    return head[len(f"albert-pipeline {command}: "):]


def test_an_unknown_language_exits_2_with_one_line():
    proc = _cli("tokenize", "--vocab", SPM_MODEL, "--set", "language=xx", stdin="hello\n")
    assert _one_error_line(proc, "tokenize") == ("error: config language='xx' is invalid: expected an ISO 639-1 code "
                                                 "in lower case (en, zh, ja, ko, ar, hi, ...)")


def test_resolve_sections_fills_only_what_is_unset():
    config = build_config("sample")
    corpus, vocab, datagen = resolve_sections("ko", config.corpus, config.vocab, config.datagen)
    assert (corpus.sentence_splitter, vocab.normalization, datagen.word_starts) == ("english", "albert", "official")


# -- normalisation ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("text, albert, nfkc", [
    ("대한민국 헌법", "\u1103\u1162\u1112\u1161\u11ab\u1106\u1175\u11ab\u1100\u116e\u11a8 "
                   "\u1112\u1165\u11ab\u1107\u1165\u11b8", "대한민국 헌법"),  # NFKD: conjoining jamo
    ("がぎぐ ｱｲｳ ＡＢＣ１２", "かきく アイウ abc12", "がぎぐ アイウ abc12"),
    ("क्षत्रिय", "कषतरिय", "क्षत्रिय"),
    ("آب", "اب", "آب"),
    ("می\u200cخواهم", "می\u200cخواهم", "می\u200cخواهم"),  # the Persian zero-width non-joiner
    ("Åse  og\tblåbær", "ase og blabær", "åse og blåbær"),
])
def test_nfkc_keeps_each_script_where_the_official_normalisation_breaks_it(text, albert, nfkc):
    assert preprocess_text(text) == normalize_text(text, "albert") == albert
    assert normalize_text(text, "nfkc") == nfkc


def test_korean_keeps_its_syllables_and_accents_strip_on_their_own():
    text = open(os.path.join(MULTI, "ko-constitution.txt"), encoding="utf-8").read().split("\n")[2]
    assert len(text) == 433
    assert len(preprocess_text(text)) == 888  # 2.05x: every syllable as two or three jamo
    assert normalize_text(text, "nfkc") == " ".join(text.split())
    assert normalize_text("Åse がく 한국", "nfkc", accents=True) == "ase かく 한국"
    assert normalize_text("Åse", "none", lower=False) == "Åse"


# -- sentences ----------------------------------------------------------------------------------------------------
def test_chinese_and_japanese_paragraphs_split_into_their_sentences():
    assert split_sentences("我爱北京天安门。天安门上太阳升！你好吗？我很好。") == ["我爱北京天安门。天安门上太阳升！你好吗？我很好。"]
    assert split_multilingual("我爱北京天安门。天安门上太阳升！你好吗？我很好。") == [
        "我爱北京天安门。", "天安门上太阳升！", "你好吗？", "我很好。"]
    assert split_multilingual("他说：「你好。」然后走了。") == ["他说：「你好。」", "然后走了。"]
    assert split_multilingual("版本３．１已发布。真的") == ["版本３．１已发布。", "真的"]
    assert split_multilingual("日本語の文です。次の文！最後?") == ["日本語の文です。", "次の文！", "最後?"]
    # hard-wrapped CJK lines joined with a space, as a book's paragraph is: the space goes
    assert split_multilingual("どうすれ ばいい? 次は 何") == ["どうすればいい?", "次は何"]


@pytest.mark.parametrize("paragraph, sentences", [
    ("यह एक वाक्य है। यह दूसरा है॥ तीसरा", ["यह एक वाक्य है।", "यह दूसरा है॥", "तीसरा"]),
    ("هل أنت بخير؟ نعم. شكرا", ["هل أنت بخير؟", "نعم.", "شكرا"]),
    ("یہ پہلا جملہ ہے۔ یہ دوسرا ہے۔", ["یہ پہلا جملہ ہے۔", "یہ دوسرا ہے۔"]),
    ("ሰላም ነው። እንዴት ነህ፧", ["ሰላም ነው።", "እንዴት ነህ፧"]),
    ("¿Cómo estás? Muy bien. El Sr. García llegó.", ["¿Cómo estás?", "Muy bien.", "El Sr. García llegó."]),
    ("대한민국은 민주공화국이다. 주권은 국민에게 있다.", ["대한민국은 민주공화국이다.", "주권은 국민에게 있다."]),
    ("ประโยคแรก ประโยคที่สอง", ["ประโยคแรก ประโยคที่สอง"]),  # Thai marks no sentence end: a named limit
])
def test_other_scripts_split_at_their_terminators(paragraph, sentences):
    assert split_multilingual(paragraph) == sentences


def test_english_text_splits_alike_with_either_splitter():
    text = "Dr. Smith went to Washington. He arrived at 3.14 p.m. on Monday! Did he? Yes."
    assert split_multilingual(text) == split_sentences(text)


@pytest.mark.parametrize("name, splitter, count", [
    ("zh-debian-faq.txt", "multilingual", 141), ("zh-debian-faq.txt", "english", 65),
    ("ja-debian-faq.txt", "multilingual", 81), ("ko-constitution.txt", "multilingual", 89),
    ("zh-tang-poems.txt", "multilingual", 257)])
def test_bundled_books_split_by_the_setting(name, splitter, count):
    with open(os.path.join(MULTI, name), "rb") as f:
        doc = book_document_from_bytes(f.read(), name, splitter=splitter)
    assert len(doc.sentences) == count


# -- vocabularies -------------------------------------------------------------------------------------------------
def _official_sp_word_start(piece):
    """The official ``_is_start_piece_sp`` (google-research/albert, create_pretraining_data.py), restated here so the
    test does not take its expectation from the code under test: '▁' or '<' first, a lone punctuation piece of its
    list, or any character outside a-z and that list. Its list is '!"#$%&\\"()*+,-./:;?@[\\]^_`{|}~' (no "'", "<",
    "=", ">"); the € and £ it adds are bytes, which no str piece or character equals under Python 3."""
    listed = set('!"#$%&()*+,-./:;?@[\\]^_`{|}~')
    if piece.startswith(("\u2581", "<")) or piece in listed:
        return True
    return any(c.lower() not in listed and c.lower() not in "abcdefghijklmnopqrstuvwxyz" for c in piece)


def test_word_starts_follow_the_vocabulary_kind_and_the_setting():
    import sentencepiece as spm

    with open(WORDPIECE_VOCAB, encoding="utf-8") as f:
        lines = f.read().split("\n")[:-1]  # id = line number - 1
    with open(WORDPIECE_VOCAB, "rb") as f:
        wordpiece = load_tokenizer(f.read(), TokenizerSpec(kind="wordpiece", normalization="none"))
    info = VocabInfo.from_tokenizer(wordpiece, "official")
    assert info.digit_comma is None
    # WordPiece: every line but a "##" continuation starts a word, whatever the setting (the official
    # _is_start_piece_bert); hand-picked lines: 226 "hello", 370 "我", 101 "[UNK]" start one, 149 "##0" does not.
    assert [bool(x) for x in info.is_word_start] == [not line.startswith("##") for line in lines]
    assert VocabInfo.from_tokenizer(wordpiece, "boundary").is_word_start.tolist() == info.is_word_start.tolist()
    assert [(lines[i], bool(info.is_word_start[i])) for i in (225, 369, 100, 148)] == [
        ("hello", True), ("我", True), ("[UNK]", True), ("##0", False)]
    assert sum(line.startswith("##") for line in lines) == len(lines) - int(info.is_word_start.sum()) == 65
    # SentencePiece: `official` is the release's rule, `boundary` the '▁' alone; the pieces from sentencepiece itself.
    processor = spm.SentencePieceProcessor(model_file=SPM_MODEL)
    sp_pieces = [processor.id_to_piece(i) for i in range(processor.get_piece_size())]
    with open(SPM_MODEL, "rb") as f:
        sp = load_tokenizer(f.read(), TokenizerSpec())
    official, boundary = VocabInfo.from_tokenizer(sp, "official"), VocabInfo.from_tokenizer(sp, "boundary")
    assert official.is_word_start.tolist() == [_official_sp_word_start(p) for p in sp_pieces]
    assert boundary.is_word_start.tolist() == [p.startswith("\u2581") for p in sp_pieces]
    # by hand: "ing" starts no word under either rule; "00" (digits), "=" and "'" (not in the list) and "," (a lone
    # listed piece) start one under the release's rule only; "?'" (listed, then "'") too; "▁the" under both
    cases = {p: sp_pieces.index(p) for p in ("ing", "00", "=", "'", ",", "?'", "\u2581the")}
    assert {p: (bool(official.is_word_start[i]), bool(boundary.is_word_start[i])) for p, i in cases.items()} == {
        "ing": (False, False), "00": (True, False), "=": (True, False), "'": (True, False), ",": (True, False),
        "?'": (True, False), "\u2581the": (True, True)}


def test_a_folder_says_its_kind_and_a_mismatch_is_refused():
    with open(WORDPIECE_VOCAB, "rb") as f:
        data = f.read()
    with pytest.raises(VocabularyError, match=r"^vocab.txt is a wordpiece vocabulary, but its folder says "
                                              r"sentencepiece$"):
        load_tokenizer(data, TokenizerSpec(), "vocab.txt")
    assert not TokenizerSpec().needs_file and not TokenizerSpec(do_lower_case=False).needs_file
    assert TokenizerSpec(kind="wordpiece", normalization="none").needs_file
    assert TokenizerSpec.from_json(TokenizerSpec(normalization="nfkc").to_json()) == TokenizerSpec(
        normalization="nfkc")
    assert TokenizerSpec.from_json(None, do_lower_case=False) == TokenizerSpec(do_lower_case=False)
    assert SPEC_FILE == "tokenizer.json"


def _cli(*args, stdin=None):
    return subprocess.run([sys.executable, "-m", "pipeline.cli", *args], cwd=ROOT, input=stdin,
                          capture_output=True, text=True)


def test_tokenize_prints_pieces_and_ids_of_either_kind():
    proc = _cli("tokenize", "--vocab", WORDPIECE_VOCAB, "--set", "language=zh", stdin="我爱北京。\nhello 世界\n")
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    # By hand from tests/fixtures/wordpiece/vocab.txt (id = line number - 1): 我 line 370, 。 265, hello 226, 世 577,
    # 界 578; 爱, 北 and 京 are no line of it, so each is [UNK] (line 101). Chinese characters are pieces of their own.
    assert rows == [{"text": "我爱北京。", "pieces": ["我", "[UNK]", "[UNK]", "[UNK]", "。"],
                     "ids": [369, 100, 100, 100, 264]},
                    {"text": "hello 世界", "pieces": ["hello", "世", "界"], "ids": [225, 576, 577]}]
    with open(WORDPIECE_VOCAB, encoding="utf-8") as f:
        lines = f.read().split("\n")
    assert [lines[i] for r in rows for i in r["ids"]] == [p for r in rows for p in r["pieces"]]
    assert not {"爱", "北", "京"} & set(lines)
    proc = _cli("tokenize", "--vocab", SPM_MODEL, stdin="Hello, world 1990, 2000\n")
    assert json.loads(proc.stdout) == {"text": "Hello, world 1990, 2000",
                                       "pieces": ["▁hello", ",", "▁world", "▁1990", ",", "▁2000"],
                                       "ids": [10975, 15, 126, 961, 15, 824]}


def test_tokenize_refuses_a_vocab_txt_without_the_special_tokens(tmp_path):
    bad = tmp_path / "vocab.txt"
    bad.write_text("[PAD]\n[UNK]\n[CLS]\nhello\n", encoding="utf-8")
    proc = _cli("tokenize", "--vocab", str(bad), stdin="hello\n")
    assert _one_error_line(proc, "tokenize") == (f"error: {bad} lacks [SEP], [MASK]: a WordPiece vocab.txt needs "
                                                 "[PAD], [UNK], [CLS], [SEP], [MASK]")


# -- datagen with a WordPiece vocabulary --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def chinese_examples(tmp_path_factory):
    """``make-pretraining-data`` on the bundled Chinese text with the WordPiece vocab.txt, the zh profile."""
    from components.datagen.datagen_tool import make_pretraining_data
    from components.text.documents import to_text_block

    work = tmp_path_factory.mktemp("zh")
    docs = work / "docs.txt"
    with open(docs, "w", encoding="utf-8") as out:
        for name in ("zh-debian-faq.txt", "zh-tang-poems.txt"):
            with open(os.path.join(MULTI, name), "rb") as f:
                out.write(to_text_block(book_document_from_bytes(f.read(), name, splitter="multilingual")))
    config = build_config("sample", overrides=["language=zh", "datagen.max_seq_length=64",
                                               "datagen.max_predictions_per_seq=10", "datagen.dupe_factor=2",
                                               "datagen.num_shards=1", "datagen.eval_fraction=0.1"])
    stats = make_pretraining_data([str(docs)], WORDPIECE_VOCAB, str(work / "examples"), config)
    return work / "examples", stats


@pytest.mark.slow
def test_datagen_reads_a_wordpiece_vocab_and_masks_whole_words(chinese_examples):
    import glob

    import tensorflow as tf

    from trainer.input_pipeline import feature_spec

    out, stats = chinese_examples
    assert sorted(os.listdir(out / "vocab")) == ["tokenizer.json", "vocab.txt"]
    assert json.loads((out / "vocab" / "tokenizer.json").read_text()) == {
        "do_lower_case": True, "kind": "wordpiece", "normalization": "none", "strip_accents": False}
    with open(WORDPIECE_VOCAB, "rb") as f:
        tok = load_tokenizer(f.read(), TokenizerSpec(kind="wordpiece", normalization="none"))
    continuation = np.array([p.startswith("##") for p in tok.pieces])
    files = sorted(glob.glob(str(out / "Split-train" / "*.gz")))
    instances = masked = continued = 0
    for record in tf.data.TFRecordDataset(files, compression_type="GZIP"):
        ex = {k: v.numpy() for k, v in tf.io.parse_single_example(record, feature_spec(64, 10)).items()}
        ids, boundary = ex["input_ids"], ex["token_boundary"]
        real = ex["masked_lm_positions"][ex["masked_lm_weights"] > 0]
        originals = ex["masked_lm_ids"][ex["masked_lm_weights"] > 0]
        assert ids[0] == tok.cls_id and (ids == tok.sep_id).sum() == 2
        length = int(ex["input_mask"].sum())
        # token_boundary is 1 exactly where a piece starts a word: no "##" piece does
        original = ids.copy()
        original[real] = originals
        assert (boundary[:length] == (~continuation[original[:length]]).astype(int)).all()
        # whole words: a masked "##" piece has the piece before it masked too, unless a truncated segment starts
        # with it (the official masking then takes it as a word of its own)
        chosen = set(real.tolist())
        for position, piece in zip(real, originals):
            if continuation[piece] and original[position - 1] not in (tok.cls_id, tok.sep_id):
                continued += 1
                assert position - 1 in chosen
        instances += 1
        masked += len(real)
    assert instances == stats["splits"]["train"]["instances"] > 50
    assert continued > 0 and masked > instances


@pytest.mark.slow
def test_pretraining_on_wordpiece_examples_exports_the_vocab_txt(chinese_examples, cli, tmp_path):
    """Two real steps of albert-tiny on the Chinese WordPiece examples: the encoder's vocabulary is the vocab.txt's,
    and the model folder carries the vocab.txt and its tokenizer.json (what fine-tuning and continuation read)."""
    out, _ = chinese_examples
    done = cli("pretrain", "--examples", str(out), "--output", str(tmp_path / "model"), "--preset", "sample",
               "--set=language=zh", "--set=model.size=albert-tiny", "--set=train.num_train_steps=2",
               "--set=train.num_warmup_steps=1", "--set=train.train_batch_size=8", "--set=train.eval_steps=1",
               "--set=train.eval_batch_size=8", "--set=train.checkpoint_every=0", "--set=train.eval_every=0")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["final_step"] == 2
    albert = tmp_path / "model" / "model" / "albert"
    assert sorted(n for n in os.listdir(albert) if n.startswith(("vocab", "tokenizer", "spm"))) == [
        "tokenizer.json", "vocab.txt"]
    with open(WORDPIECE_VOCAB, "rb") as f:
        lines = f.read().count(b"\n")
    with open(os.path.join(albert, "albert_config.json")) as f:
        assert json.load(f)["vocab_size"] == lines


def _voiced_kana(text):
    """Kana with a dakuten or handakuten (が, ぐ, パ, ...): those NFD splits in two."""
    import unicodedata

    return sum(1 for ch in text if "\u3040" <= ch <= "\u30ff" and len(unicodedata.normalize("NFD", ch)) > 1)


@pytest.mark.parametrize("name, normalization", [
    ("ko-constitution.txt", "albert"), ("ko-constitution.txt", "nfkc"),
    ("ja-debian-faq.txt", "albert"), ("ja-debian-faq.txt", "nfkc")])
def test_pieces_per_character_under_each_normalisation(tmp_path, name, normalization):
    """A 500-piece SentencePiece vocabulary trained on the bundled text and tokenizing it. The pieces must be
    sentencepiece's own for the text normalised as written out here (``albert``: NFKD less combining marks, the
    official preprocess_text; ``nfkc``: NFKC), both lower-cased. Korean: SentencePiece's own NFKC recomposes the
    jamo that ``albert`` makes, so the pieces are the same either way and every Hangul piece is syllables. Japanese:
    the dakuten ``albert`` drops cannot come back, so no piece (and no entry of the vocabulary) holds a voiced kana
    (が, ぐ, ...), while under ``nfkc`` the pieces hold every voiced kana of the text."""
    import unicodedata

    import sentencepiece as spm

    from components.text.tokenization import AlbertTokenizer
    from components.vocab.vocab_lib import train_sentencepiece

    def pieces(form):
        model = train_sentencepiece(sentences, str(tmp_path / form), vocab_size=500, character_coverage=0.9995,
                                    normalization=form)
        return model, [piece for s in sentences for piece in AlbertTokenizer(model, normalization=form).tokenize(s)]

    def normalised(text, form):
        text = unicodedata.normalize("NFKD" if form == "albert" else "NFKC", " ".join(text.split()))
        return "".join(c for c in text if form != "albert" or not unicodedata.combining(c)).lower()

    with open(os.path.join(MULTI, name), "rb") as f:
        sentences = book_document_from_bytes(f.read(), name, splitter="multilingual").sentences
    model, got = pieces(normalization)
    processor = spm.SentencePieceProcessor(model_file=model)
    expected = [piece for s in sentences for piece in processor.encode(normalised(s, normalization), out_type=str)]
    assert not [p for p in expected if len(p) > 1 and p[-1] == "," and p[-2].isdigit()]  # no digits-comma split
    assert got == expected
    assert 0.6 < len(got) / sum(map(len, sentences)) < 0.8  # pieces per character: a real vocabulary, not characters
    assert not any("\u1100" <= ch <= "\u11ff" for piece in got for ch in piece)  # no conjoining jamo
    text = "".join(normalised(s, "nfkc") for s in sentences)
    vocabulary = "".join(processor.id_to_piece(i) for i in range(processor.get_piece_size()))
    if name.startswith("ja"):
        assert _voiced_kana(text) > 100
        voiced = 0 if normalization == "albert" else _voiced_kana(text)
        assert (_voiced_kana("".join(got)), _voiced_kana(vocabulary) == 0) == (voiced, normalization == "albert")
    else:
        assert got == pieces("nfkc" if normalization == "albert" else "albert")[1]
        assert sum(1 for ch in "".join(got) if "\uac00" <= ch <= "\ud7a3") > 1000  # Hangul syllables


@pytest.mark.parametrize("code, folder, terminator", [("hi", "hi", "।"), ("ar", "ar", "؟")])
def test_hindi_and_arabic_through_ingest_vocabulary_and_datagen(cli, tmp_path, code, folder, terminator):
    """Another script end to end: ``ingest`` splits at the script's terminators, VocabGen's training keeps the
    virama and the madda (NFKC), and datagen masks whole words at '▁' (``datagen.word_starts=boundary``)."""
    import glob

    import tensorflow as tf

    from components.corpus import corpus_beam
    from components.vocab import vocab_lib
    from components.datagen.datagen_tool import make_pretraining_data
    from trainer.input_pipeline import feature_spec

    sets = [f"--set=language={code}", "--set=corpus.num_shards=1", "--set=corpus.min_doc_chars=100"]
    done = cli("ingest", "--books", os.path.join(MULTI, folder), "--output", str(tmp_path / "docs"), *sets)
    assert done.returncode == 0, done.stderr
    (shard,) = corpus_beam.document_shards(str(tmp_path / "docs"))
    with open(shard, encoding="utf-8") as f:
        sentences = [line.strip() for line in f if line.strip()]
    assert len(sentences) > 20 and sum(s.endswith(terminator) for s in sentences) >= 1
    assert not any(terminator in s[:-1] for s in sentences)  # cut after every terminator
    config = build_config("sample", overrides=[f"language={code}", "vocab.vocab_size=100",
                                               "datagen.max_seq_length=64", "datagen.max_predictions_per_seq=10",
                                               "datagen.num_shards=1"])
    size, origin = vocab_lib.build_vocab(config.vocab, config.seed, str(tmp_path / "docs"), str(tmp_path / "vocab"))
    assert (size, origin) == (100, "trained")
    spec = vocab_lib.vocab_folder_spec(str(tmp_path / "vocab"))
    assert (spec.kind, spec.normalization, spec.strip_accents) == ("sentencepiece", "nfkc", False)
    with open(tmp_path / "vocab" / "spm.model", "rb") as f:
        tok = load_tokenizer(f.read(), spec)
    mark = {"hi": "\u094d", "ar": "\u0622"}[code]  # the virama of क्ष, the alef with madda of آدم
    assert any(mark in piece for s in sentences for piece in tok.tokenize(s))
    stats = make_pretraining_data([str(tmp_path / "docs")], str(tmp_path / "vocab" / "spm.model"),
                                  str(tmp_path / "examples"), config)
    starts = np.array([p.startswith("\u2581") for p in tok.pieces])
    instances = 0
    for record in tf.data.TFRecordDataset(sorted(glob.glob(str(tmp_path / "examples" / "Split-train" / "*.gz"))),
                                          compression_type="GZIP"):
        ex = {k: v.numpy() for k, v in tf.io.parse_single_example(record, feature_spec(64, 10)).items()}
        original = ex["input_ids"].copy()
        real = ex["masked_lm_weights"] > 0
        original[ex["masked_lm_positions"][real]] = ex["masked_lm_ids"][real]
        length = int(ex["input_mask"].sum())
        special = np.isin(original[:length], [tok.cls_id, tok.sep_id])
        assert (ex["token_boundary"][:length] == (starts[original[:length]] | special)).all()
        instances += 1
    assert instances == stats["splits"]["train"]["instances"] > 5


def test_vocabgen_learns_a_wordpiece_vocab_for_chinese(tmp_path):
    """The zh profile trains what the official Chinese models use: a vocab.txt, BERT's special tokens first, learned
    from the BasicTokenizer words of a seeded sample; the same sentences give the same file; pretraining data reads
    it (the folder's tokenizer.json says WordPiece)."""
    from components.vocab import vocab_lib
    from components.text.documents import to_text_block

    docs = tmp_path / "docs"
    docs.mkdir()
    with open(docs / "documents-00000-of-00001.txt", "w", encoding="utf-8") as out:
        for name in ("zh-debian-faq.txt", "zh-tang-poems.txt"):
            with open(os.path.join(MULTI, name), "rb") as f:
                out.write(to_text_block(book_document_from_bytes(f.read(), name, splitter="multilingual")))
    config = build_config("sample", overrides=["language=zh", "vocab.vocab_size=800"])
    assert (config.vocab.kind, json.loads(config.vocab.to_json())["kind"]) == ("wordpiece", "wordpiece")
    size, origin = vocab_lib.build_vocab(config.vocab, config.seed, str(docs), str(tmp_path / "a"))
    assert (size, origin) == (2691, "trained")  # the 800 asked for, and the alphabet alone and as "##" pieces
    vocab = (tmp_path / "a" / "vocab.txt").read_text(encoding="utf-8").split("\n")
    assert vocab[:5] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] and "的" in vocab and "##的" in vocab
    assert vocab_lib.vocab_folder_spec(str(tmp_path / "a")) == TokenizerSpec(kind="wordpiece", normalization="none")
    vocab_lib.build_vocab(config.vocab, config.seed, str(docs), str(tmp_path / "b"))
    assert (tmp_path / "b" / "vocab.txt").read_bytes() == (tmp_path / "a" / "vocab.txt").read_bytes()
    imported = build_config("sample", overrides=["language=zh", f"vocab.import_model={SPM_MODEL}", "vocab.vocab_size=0"])
    assert imported.vocab.kind is None and "kind" not in imported.vocab.to_dict()  # an import's kind is its file's


def test_paragraphs_of_caseless_scripts_are_not_taken_for_headings():
    """A CJK paragraph has no lower-case letter and few spaces: it is no all-capitals line nor a short one (each
    character counts as a word), so it stays; a short unpunctuated title still goes, as in English."""
    text = ("第一章\n\n软件包管理系统\n\n我有一个正在工作的桌面。怎么知道我正在运行哪个发布版本？\n\n"
            "大多数情况下非常容易搞清楚。\n\nयह एक वाक्य है।\n\n").encode("utf-8") * 3
    doc = book_document_from_bytes(text, "zh.txt", min_chars=10, splitter="multilingual")
    assert doc.sentences[:4] == ["我有一个正在工作的桌面。", "怎么知道我正在运行哪个发布版本？", "大多数情况下非常容易搞清楚。",
                                 "यह एक वाक्य है।"]
    assert not any("章" in s or s == "软件包管理系统" for s in doc.sentences)
