"""What tracing the in-graph tokenizer costs: ``GraphTokenizer.tokenize_with_offsets.get_concrete_function()``.

    .venv/bin/python -m benchmarks.tokenizer_trace [--rounds 3]

Every SavedModel that takes raw text (a push's raw-text folders, each benchmark task's serving model) traces the
tokenizer once per process. For (a) the bundled SentencePiece model ``data/sample/vocab/30k-clean.model`` with
English's spec (ALBERT's normalisation, lower-cased) and (b) the bundled WordPiece fixture
``tests/fixtures/wordpiece/vocab.txt`` (lower-cased, as BERT's uncased): the CPU seconds of tracing a fresh
:class:`~components.text.graph_tokenizer.GraphTokenizer` (its constructor not counted) and the number of ops in
the traced graph, ``--rounds`` times each in one process (the first round of a process also pays TensorFlow's
one-time costs). CPU seconds, so other processes' load counts less than in wall time (but a shared core's caches
still do). Prints one JSON line per vocabulary.
"""
from __future__ import annotations

import argparse
import json
import os
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from trainer.precision import cpu_model  # noqa: E402  (imports no TensorFlow)

SPM = os.path.join(REPO, "data", "sample", "vocab", "30k-clean.model")
WORDPIECE = os.path.join(REPO, "tests", "fixtures", "wordpiece", "vocab.txt")


def measure(vocab_path: str, kind: str) -> dict:
    from components.text.graph_tokenizer import GraphTokenizer
    from config.tokenizer_spec import TokenizerSpec

    spec = TokenizerSpec() if kind == "sentencepiece" else TokenizerSpec(kind="wordpiece", normalization="none",
                                                                         do_lower_case=True)
    tokenizer = GraphTokenizer(vocab_path, spec)
    cpu, wall = time.process_time(), time.perf_counter()
    graph = tokenizer.tokenize_with_offsets.get_concrete_function().graph
    return {"trace_cpu_s": round(time.process_time() - cpu, 3), "trace_wall_s": round(time.perf_counter() - wall, 3),
            "ops": len(graph.get_operations())}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    for name, path, kind in (("sentencepiece", SPM, "sentencepiece"), ("wordpiece", WORDPIECE, "wordpiece")):
        rounds = [measure(path, kind) for _ in range(args.rounds)]
        print(json.dumps({"vocab": name, "cpu": cpu_model(), "rounds": rounds}), flush=True)


if __name__ == "__main__":
    main()
