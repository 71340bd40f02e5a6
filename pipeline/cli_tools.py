"""The ``albert-pipeline`` commands that run one node's code without TFX (``ingest``, ``make-pretraining-data``,
``tokenize``, ``pretrain``) and the model and scoring tools (``model-info``, ``convert``, ``score``); the parser and
the error handling they share: :mod:`pipeline.cli`.

Each imports what it runs inside its function: TensorFlow, Beam and the official scorers cost seconds to import,
and a command that fails on its arguments should not pay for them.
"""
from __future__ import annotations

import json
import os
import sys

from components.text.vocab_files import vocabulary_kind
from config.errors import InputError, MissingInputError
from pipeline.settings.resolve import config_from_args
from trainer.files import VOCAB_FILES


def cmd_make_pretraining_data(args) -> int:
    config = config_from_args(args)
    if args.workers < 1:
        from pipeline.settings.configs import ConfigError  # lazy: on one branch (adds nothing)

        raise ConfigError(f"--workers must be >= 1, got {args.workers}")
    from components.datagen.datagen_tool import make_pretraining_data  # lazy: apache_beam (1.7 s)

    summary = make_pretraining_data(args.input, args.vocab, args.output, config, workers=args.workers)
    print(json.dumps(summary, indent=2, sort_keys=True))
    return 0


def cmd_tokenize(args) -> int:
    """Each input line's pieces and ids as a JSON line: a vocabulary checked before pretraining is paid for."""
    config = config_from_args(args)
    from components.text.tokenizers import TokenizerSpec, load_tokenizer  # lazy: sentencepiece, components.text.tokenizers (0.01 s)

    if not os.path.isfile(args.vocab):
        raise MissingInputError(f"vocabulary {args.vocab} (--vocab) does not exist")
    with open(args.vocab, "rb") as f:
        data = f.read()
    tokenizer = load_tokenizer(data, TokenizerSpec.for_vocab(vocabulary_kind(data, args.vocab), config.vocab),
                               args.vocab)
    for path in args.input or ["-"]:
        lines = sys.stdin if path == "-" else _read_lines(path)
        for line in lines:
            text = line.rstrip("\n")
            pieces = tokenizer.tokenize(text)
            ids = tokenizer.encode(text)
            print(json.dumps({"text": text, "pieces": pieces, "ids": ids}, ensure_ascii=False))
    return 0


def _read_lines(path: str):
    """The lines of a UTF-8 text file; an InputError naming the file and line otherwise."""
    if not os.path.isfile(path):
        raise MissingInputError(f"--input {path} does not exist")
    with open(path, "rb") as f:
        for number, raw in enumerate(f, 1):
            try:
                yield raw.decode("utf-8")
            except UnicodeDecodeError:
                raise InputError(f"{path} line {number}: not UTF-8 text") from None


def cmd_ingest(args) -> int:
    """CorpusGen's Beam code without TFX: raw Wikipedia and book folders → documents (``components/corpus/ingest_tool.py``)."""
    # The folders enter the configuration too, so a preset without corpus folders (paper) validates, and a missing
    # folder is named as the setting's error.
    args.overrides = [f"corpus.{key}_dir={value}" for key, value in (("wikipedia", args.wikipedia),
                                                                      ("books", args.books)) if value] + args.overrides
    corpus = config_from_args(args).corpus
    from components.corpus.ingest_tool import ingest  # lazy: apache_beam (1.7 s)

    summary = ingest(args.wikipedia, args.books, args.output, corpus, workers=args.workers,
                     wikipedia_format=args.wikipedia_format, beam_args=args.beam_arg or (),
                     wikipedia_globs=args.wikipedia_glob, books_globs=args.books_glob)
    print(json.dumps({"output": args.output, **summary}, indent=2, sort_keys=True))
    return 0


def _json_file(path: str, what: str, shape: type):
    """Parse a JSON input, naming the file (and line/column) when it is not JSON or not a ``shape``."""
    if not os.path.isfile(path):
        raise MissingInputError(f"{what} {path} does not exist or is not a file")
    try:
        with open(path, encoding="utf-8") as f:
            value = json.load(f)
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: {what} is not valid UTF-8 at byte offset {exc.start}") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: {what} is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}"
                         ) from None
    if not isinstance(value, shape):
        raise InputError(f"{path}: {what} must be a JSON {'object' if shape is dict else shape.__name__}, "
                         f"got {type(value).__name__}")
    return value


def _check_score_inputs(args) -> None:
    """The shapes ``score`` reads, checked up front so a broken file is named instead of failing deep inside."""
    if args.benchmark in ("squad", "squad2", "cmrc2018"):
        data = _json_file(args.dataset, "SQuAD dataset", dict)
        if not isinstance(data.get("data"), list) or not all(
                isinstance(a, dict) and isinstance(a.get("paragraphs"), list) for a in data["data"]):
            raise InputError(f"{args.dataset}: SQuAD dataset must be {{\"data\": [{{\"paragraphs\": [...]}}, ...]}}")
        preds = _json_file(args.predictions, "SQuAD predictions", dict)
        bad = [k for k, v in preds.items() if not isinstance(v, str)][:3]
        if bad:
            raise InputError(f"{args.predictions}: SQuAD predictions map question ids to answer strings; "
                             f"not a string for {bad}")
        if args.na_prob:
            _json_file(args.na_prob, "SQuAD no-answer probabilities", dict)
    elif args.benchmark == "race":
        _json_file(args.predictions, "RACE predictions", dict)
    for path in (args.dataset, args.predictions):
        if not os.path.exists(path):
            raise MissingInputError(f"{path} does not exist")
        if os.path.isfile(path):
            with open(path, "rb") as f:
                data = f.read()
            try:
                data.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InputError(f"{path}: not valid UTF-8 at byte offset {exc.start}") from None
            if not data.strip():
                raise InputError(f"{path}: empty file")


def _check_examples_dir(path: str) -> None:
    """``pretrain --examples`` must be a make-pretraining-data output (or a pipeline Examples artifact)."""
    if not os.path.isdir(path):
        raise MissingInputError(f"--examples {path} is not a folder")
    train = os.path.join(path, "Split-train")
    if not os.path.isdir(train) or not [n for n in os.listdir(train) if not n.startswith(".")]:
        raise InputError(f"{path} holds no pretraining examples (no files under Split-train/): give the folder "
                         f"written by `albert-pipeline make-pretraining-data`")
    if not any(os.path.isfile(os.path.join(path, "vocab", name)) for name in VOCAB_FILES):
        raise InputError(f"{path} has no vocab/spm.model or vocab/vocab.txt: not a make-pretraining-data output "
                         "folder")


def _check_safetensors(src: str) -> None:
    """A Hugging Face folder's weights must open as safetensors (the header names every tensor)."""
    path = os.path.join(src, "model.safetensors")
    if not os.path.isfile(path):
        return  # the converter reports a missing file itself
    try:
        from safetensors import safe_open  # lazy: inside try; safetensors (0.001 s)

        with safe_open(path, framework="numpy") as f:
            list(f.keys())
    except Exception as exc:  # SafetensorError has no stable import path across versions
        raise InputError(f"{path}: not a valid safetensors file ({exc})") from None


def cmd_pretrain(args) -> int:
    config = config_from_args(args)
    _check_examples_dir(args.examples)
    from trainer.task import pretrain_from_examples  # lazy: tensorflow (2.8 s)

    info = pretrain_from_examples(args.examples, args.output, config)
    print(json.dumps({k: info[k] for k in ("start_step", "final_step", "eval_metrics", "checkpoint_dir")}, indent=2))
    return 0


def cmd_model_info(args) -> int:
    from trainer.modeling_albert import AlbertConfig, count_parameters  # lazy: tensorflow (2.8 s)

    overrides = {k: v for k, v in {
        "embedding_size": args.E, "hidden_size": args.H, "num_hidden_layers": args.L,
        "num_attention_heads": args.heads, "intermediate_size": args.ffn, "sharing": args.sharing,
        "num_hidden_groups": args.groups, "inner_group_num": args.inner_groups, "vocab_size": args.vocab_size,
    }.items() if v is not None}
    if args.H is not None:
        from config.encoder import width_defaults  # lazy: on one branch (adds nothing)

        overrides = {**width_defaults(args.H), **overrides}  # given --heads / --ffn win
    config = AlbertConfig.named(args.size, **overrides)
    counts = count_parameters(config, include_heads=args.include_heads)
    heads = count_parameters(config, include_heads=True)["heads"]
    print(json.dumps({"config": config.to_dict(), "parameters": {**counts, "heads": heads}}, indent=2))
    return 0


def cmd_convert(args) -> int:
    if not os.path.isdir(args.src):
        raise MissingInputError(f"{args.src} is not a folder")
    if args.kind in ("albert-to-onnx", "albert-to-litert"):
        from trainer.portable_export import export_portable  # lazy: tensorflow (2.8 s)

        summary = export_portable(args.kind, args.src, args.dst, with_mlm_head=args.with_mlm_head)
        print(json.dumps(summary, indent=2, sort_keys=True, default=str))
        return 0
    if args.with_mlm_head:
        raise InputError(f"--with-mlm-head is for albert-to-onnx and albert-to-litert, not {args.kind}")
    if args.kind == "hf-to-albert":
        _check_safetensors(args.src)
    from trainer.convert import convert  # lazy: tensorflow (2.8 s)

    print(json.dumps(convert(args.kind, args.src, args.dst), indent=2, sort_keys=True, default=str))
    return 0


def cmd_score(args) -> int:
    _check_score_inputs(args)
    from components.evaluation.score import score  # lazy: numpy, components.evaluation.score (0.1 s)

    kwargs = {"task": args.task}
    if args.na_prob:
        kwargs["na_prob_path"] = args.na_prob
    print(json.dumps(score(args.benchmark, args.dataset, args.predictions, **kwargs), indent=2, sort_keys=True))
    return 0
