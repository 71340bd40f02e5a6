"""Can a LiteRT graph tokenize WordPiece as this project does? TF Text's fast WordPiece in ai-edge-litert's interpreter
against the official tokenizer's ids on the hard strings of tests/fixtures/wordpiece/official_tokens.json.

    .venv/bin/python -m benchmarks.litert_wordpiece --output benchmarks/results/exports/2026-11-28-wordpiece.json

The graph is what TF Text offers with LiteRT kernels: ``FastBertNormalizer`` (lower case, NFD, accents stripped, or
nothing) then ``FastWordpieceTokenizer`` with its own end-to-end pre-tokenization (whitespace and punctuation; CJK
ideographs apart), converted with custom ops and run by ``ai_edge_litert.interpreter.InterpreterWithCustomOps`` with
``tensorflow_text.tflite_registrar.SELECT_TFTEXT_OPS``. BERT's ``BasicTokenizer`` order (CJK split by regular
expression) needs ``RegexSplitWithOffsets``, which has no LiteRT kernel: the script records the interpreter's error.
"""
from __future__ import annotations

import argparse
import json
import os

import numpy as np

import trainer  # noqa: F401  (tf_keras)
import tensorflow as tf
import tensorflow_text as tf_text

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "wordpiece")


def _interpreter(module):
    from ai_edge_litert.interpreter import InterpreterWithCustomOps  # lazy: ai_edge_litert (the export extra)

    converter = tf.lite.TFLiteConverter.from_concrete_functions([module.f.get_concrete_function()], module)
    converter.allow_custom_ops = True
    return InterpreterWithCustomOps(model_content=converter.convert(),
                                    custom_op_registerers=tf_text.tflite_registrar.SELECT_TFTEXT_OPS)


def fast_wordpiece(vocab, lower: bool):
    tokenizer = tf_text.FastWordpieceTokenizer(vocab, token_out_type=tf.int32, unknown_token="[UNK]",
                                               no_pretokenization=False, max_bytes_per_word=100)
    normalizer = tf_text.FastBertNormalizer(lower_case_nfd_strip_accents=lower)

    class Module(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="text")])
        def f(self, text):
            ragged = tokenizer.tokenize(normalizer.normalize(text))
            return {"ids": ragged.flat_values, "row_lengths": ragged.row_lengths()}

    return _interpreter(Module())


def regex_split_error() -> str:
    class Module(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="text")])
        def f(self, text):
            return {"words": tf_text.regex_split(text, r"\s+|[\p{Han}]", r"[\p{Han}]").flat_values}

    try:
        _interpreter(Module()).get_signature_runner()(text=np.array([b"a b"], dtype=object))
    except RuntimeError as exc:
        return str(exc).splitlines()[0]
    return ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--output", required=True)
    args = parser.parse_args()
    with open(os.path.join(FIXTURES, "official_tokens.json"), encoding="utf-8") as f:
        cases = json.load(f)
    with open(os.path.join(FIXTURES, "vocab.txt"), encoding="utf-8") as f:
        vocab = [line.rstrip("\n") for line in f]
    result = {"cases": {}, "regex_split_in_litert": regex_split_error()}
    for lower in (True, False):
        subset = [c for c in cases if c["do_lower_case"] == lower]
        out = fast_wordpiece(vocab, lower).get_signature_runner()(
            text=np.array([c["text"].encode("utf-8") for c in subset], dtype=object))
        ids = np.split(out["ids"], np.cumsum(out["row_lengths"])[:-1])
        differ = {c["name"]: {"official": c["ids"], "litert": i.tolist()} for c, i in zip(subset, ids)
                  if i.tolist() != c["ids"]}
        result["cases"][f"do_lower_case={lower}"] = {"strings": len(subset), "equal": len(subset) - len(differ),
                                                     "differ": differ}
        print(f"do_lower_case={lower}: {len(subset) - len(differ)}/{len(subset)} equal; differ: {sorted(differ)}")
    print("RegexSplit in LiteRT:", result["regex_split_in_litert"])
    os.makedirs(os.path.dirname(args.output) or ".", exist_ok=True)
    with open(args.output, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=2, sort_keys=True, ensure_ascii=False)


if __name__ == "__main__":
    main()
