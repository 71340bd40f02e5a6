"""Regenerate tests/fixtures/wordpiece/official_tokens.json: what the official ALBERT ``FullTokenizer`` (BERT's
WordPiece path: ``vocab_file`` given, ``spm_model_file=None``) makes of :data:`CASES` with the fixture vocabulary
tests/fixtures/wordpiece/vocab.txt, under both ``do_lower_case`` values. tests/test_wordpiece.py holds
``components.text.wordpiece.WordPieceTokenizer`` to these pieces and ids.

    .venv/bin/python -m benchmarks.wordpiece_official --official-albert DIR [--output FILE]

``DIR`` holds the official ``tokenization.py`` (a checkout of google-research/albert). It is loaded from its file,
so nothing is put on the import path. Its imports, in this project's venv:

- ``six``, ``sentencepiece`` and ``tensorflow`` (``tf.gfile.GFile`` reads the vocabulary) are installed here;
- ``tensorflow_hub`` is used only by ``from_hub_module``: when it does not import (it is not installed here, and
  its releases need ``pkg_resources``), this script puts an empty stand-in module in ``sys.modules`` first.

Run it with the Python that runs the tests: both sides take their Unicode tables from ``unicodedata``, so a Python
with another Unicode version may give other pieces.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import types
from typing import List, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "wordpiece")
VOCAB = os.path.join(FIXTURES, "vocab.txt")
OUTPUT = os.path.join(FIXTURES, "official_tokens.json")

# (name, text): each is tokenized with do_lower_case True and False.
CASES: List[Tuple[str, str]] = [
    ("empty", ""),
    ("only_whitespace", " \t\n\r\u3000\xa0 "),
    ("plain_english", "Hello world, the Debian package!"),
    ("wordpieces", "unaffable unaffableq packages testing"),
    ("unknown_word", "xyzzy Qwerty 42 unaffableж жук"),
    ("zh_sentence", "本文档解答一些关于 Debian GNU/Linux 的常见问题。"),
    ("zh_mixed_latin_digits", "我在2024年用Python3.14编程，版本11.0发布了！"),
    ("zh_unknown_chars", "龘靐齉"),
    ("fullwidth_forms", "ＡＢＣ１２３，ａｂｃ！（ＦＡＱ）"),
    ("fullwidth_space", "你好\u3000世界"),
    ("accents_e", "Café résumé naïve é"),
    ("accents_a_ring", "Ångström Å å"),
    ("accents_n_tilde", "España mañana Ñ"),
    ("combining_accent", "cafe\u0301 e\u0301"),
    ("lone_combining_mark", "a \u0301 b"),
    ("german_sharp_s", "Straße STRASSE ẞ"),
    ("greek_final_sigma", "ΟΔΟΣ οδός"),
    ("turkish_dotted_i", "İstanbul İ"),
    ("ligature", "ﬁnance ﬁ"),
    ("emoji", "I ❤️ NY 😀👍!"),
    ("emoji_zwj", "👨\u200d👩\u200d👧 family"),
    ("control_chars", "ab\x01cd\x07ef\x1b[0m"),
    ("nul", "ab\x00cd \x00"),
    ("replacement_char", "ab\ufffdcd \ufffd"),
    ("zero_width", "zero\u200bwidth\u200cjoin\u200dmark\ufeffbom\xadsoft"),
    ("tabs_newlines", "a\tb\nc\r\nd\r"),
    ("vertical_tab_form_feed", "a\x0bb\x0cc\x1cd\x1fe\x85f"),
    ("line_separators", "one\u2028two\u2029three"),
    ("nbsp_and_spaces", "a\xa0b\u2003c\u202fd"),
    ("hangul", "한국어 한국"),
    ("kana_dakuten", "がぎ カタカナ ガギ"),
    ("halfwidth_kana", "ｶﾞｷﾞ ｶ"),
    ("arabic", "مَرْحَبًا بالعربية، ٣"),
    ("devanagari", "नमस्ते दुनिया।"),
    ("thai", "สวัสดี ภาษาไทย"),
    ("cjk_extensions", "㐀𠀀𪜀𫝀𫠠𬺰"),
    ("cjk_outside_ranges", "二〇二四年 人々 ⼀ 𰀀"),
    ("cjk_compatibility", "豈更車"),
    ("long_word_200", "a" * 200),
    ("long_word_201", "a" * 201),
    ("long_word_split_by_punctuation", "a" * 150 + "," + "a" * 150),
    ("long_word_accents", "é" * 150),
    ("punctuation_run", "!!!...???---"),
    ("ascii_symbols", "$5 ^caret `tick` a+b=c |pipe| ~tilde"),
    ("unicode_punctuation", "¿Qué? ¡Sí! «quote» — §1 × © €"),
    ("special_token_text", "[CLS] hello [SEP] world [MASK] [UNK] [PAD]"),
    ("special_token_lowercase", "[cls] [sep]"),
    ("numbers", "3.14 1,234 12 1234 ١٢٣"),
    ("url", "https://www.debian.org/doc/FAQ/"),
    ("private_use_and_unassigned", "a\ue000b \U000e0001tag \u0378"),
    ("mixed_scripts_one_word", "abc中文def한국ghi"),
]


def load_official(albert_dir: str) -> types.ModuleType:
    """The official ``tokenization`` module from ``albert_dir``, with a stand-in ``tensorflow_hub`` if needed."""
    path = os.path.join(albert_dir, "tokenization.py")
    if not os.path.exists(path):
        raise SystemExit(f"--official-albert {albert_dir} holds no tokenization.py")
    try:
        import tensorflow_hub  # noqa: F401
    except ImportError:
        sys.modules["tensorflow_hub"] = types.ModuleType("tensorflow_hub")
    spec = importlib.util.spec_from_file_location("official_albert_tokenization", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def official_cases(tokenization: types.ModuleType, vocab: str = VOCAB) -> List[dict]:
    """One record per (case, do_lower_case): the text and the official pieces and ids."""
    records = []
    for do_lower_case in (True, False):
        tokenizer = tokenization.FullTokenizer(vocab_file=vocab, do_lower_case=do_lower_case, spm_model_file=None)
        for name, text in CASES:
            pieces = tokenizer.tokenize(text)
            records.append({"name": name, "do_lower_case": do_lower_case, "text": text, "pieces": pieces,
                            "ids": tokenizer.convert_tokens_to_ids(pieces)})
    return records


def to_json(records: List[dict]) -> str:
    """One record a line; characters that do not print (controls, spaces other than " ", marks of no width) are
    written as ``\\u`` escapes so the file shows them."""
    text = "[\n" + ",\n".join(json.dumps(r, ensure_ascii=False) for r in records) + "\n]\n"
    return "".join(c if c.isprintable() or c == "\n" else json.dumps(c)[1:-1] for c in text)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--official-albert", required=True, help="folder holding the official tokenization.py")
    ap.add_argument("--output", default=OUTPUT, help="JSON file to write (default: the test fixture)")
    args = ap.parse_args(argv)
    records = official_cases(load_official(args.official_albert))
    with open(args.output, "w", encoding="utf-8") as f:
        f.write(to_json(records))
    print(f"{len(records)} records ({len(CASES)} texts x 2 do_lower_case) -> {args.output}")


if __name__ == "__main__":
    main()
