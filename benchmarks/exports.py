"""ONNX and LiteRT exports of an albert-base-shaped model: file size against the variables' bytes, max |diff| to
TensorFlow, conversion time and inference latency (onnxruntime, ai-edge-litert, TensorFlow) on this CPU.

    .venv/bin/python -m benchmarks.exports --output benchmarks/results/exports/2026-11-28.json

Random initialisation (seeded): the numbers are about size and equality, not about what the model predicts. The
export is the command's own (:func:`trainer.portable_export.export_portable`, as ``albert-pipeline convert
albert-to-onnx|albert-to-litert --with-mlm-head`` runs it) from an albert folder written by
:func:`trainer.convert.write_albert_dir`.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import tempfile
import time

import numpy as np

import trainer  # noqa: F401  (tf_keras)
import tensorflow as tf

from trainer.convert import write_albert_dir
from trainer.modeling_albert import AlbertConfig, AlbertForPreTraining, count_parameters
from trainer.portable_export import (MODEL_FILES, encoder_function, export_portable, max_abs_diff, probe_feeds,
                                     run_litert)


def _cpu_model() -> str:
    out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    return next((line.split(":", 1)[1].strip() for line in out.splitlines() if line.startswith("Model name")),
                platform.processor())


def _latency(run, repeats: int):
    """(median wall ms, median CPU ms of this process) per call, after one warm-up. With one thread per runtime the
    CPU time is the work itself, which other processes on a shared machine do not inflate as they do the wall time."""
    run()  # warm-up
    walls, cpus = [], []
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        run()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return round(statistics.median(walls) * 1000.0, 1), round(statistics.median(cpus) * 1000.0, 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", default="albert-base")
    parser.add_argument("--output", required=True)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--shapes", default="1x128,8x128", help="batch x sequence of the latency runs")
    parser.add_argument("--threads", type=int, default=1,
                        help="intra-op threads of every runtime (TensorFlow, onnxruntime, LiteRT): one each, so "
                             "other work on a shared machine skews the three alike")
    args = parser.parse_args()
    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    tf.config.threading.set_inter_op_parallelism_threads(args.threads)
    tf.random.set_seed(0)
    config = AlbertConfig.named(args.size)
    model = AlbertForPreTraining(config)
    model(model.dummy_inputs(1, 4, 1))
    function = encoder_function(model, with_mlm_head=True)
    encoder_only = encoder_function(model, with_mlm_head=False)
    result = {"size": args.size, "cpu": _cpu_model(), "cores": os.cpu_count(), "threads": args.threads,
              "load_average_at_start": os.getloadavg(),
              "parameters": count_parameters(config), "tensorflow": tf.__version__, "exports": {}}
    with tempfile.TemporaryDirectory() as tmp:
        albert_dir = os.path.join(tmp, "albert")
        write_albert_dir(model, albert_dir, serving=False)
        for kind in ("albert-to-onnx", "albert-to-litert"):
            for head in (False, True):
                dst = os.path.join(tmp, f"{kind}-{head}")
                cpu = resource.getrusage(resource.RUSAGE_SELF)
                start = time.perf_counter()
                summary = export_portable(kind, albert_dir, dst, with_mlm_head=head)
                wall = time.perf_counter() - start
                after = resource.getrusage(resource.RUSAGE_SELF)
                path = os.path.join(dst, MODEL_FILES[kind])
                entry = {k: summary[k] for k in ("file_bytes", "parameter_bytes", "size_ratio", "max_abs_diff")}
                entry.update(export_wall_s=round(wall, 1),
                             export_cpu_s=round(after.ru_utime + after.ru_stime - cpu.ru_utime - cpu.ru_stime, 1))
                # Equality beyond the probe: two batch sizes x two lengths, real [CLS] ... padding layouts.
                fn = function if head else encoder_only
                worst = {}
                for batch, length in ((1, 128), (4, 37)):
                    feeds = probe_feeds(config.vocab_size, batch, length, seed=batch)
                    outputs = (_run_onnx_session(path, args.threads) if kind == "albert-to-onnx" else
                               (lambda f, p=path: run_litert(p, f)))(feeds)
                    for name, diff in max_abs_diff(fn, feeds, outputs).items():
                        worst[name] = max(worst.get(name, 0.0), diff)
                entry["max_abs_diff_4_shapes"] = worst
                if not head:
                    entry["latency_ms"] = _latencies(kind, path, fn, config, args)
                result["exports"][f"{kind}{' --with-mlm-head' if head else ''}"] = entry
                print(json.dumps({kind: entry, "with_mlm_head": head}), flush=True)
    os.makedirs(os.path.dirname(args.output) or ".", exist_ok=True)
    with open(args.output, "w") as f:
        json.dump(result, f, indent=2, sort_keys=True)


def _run_onnx_session(path, threads):
    import onnxruntime  # lazy: onnxruntime (the export extra, on one branch)

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = threads
    session = onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return lambda feeds: dict(zip(names, session.run(names, feeds)))


def _latencies(kind, path, fn, config, args):
    """Median ms per call (after one warm-up) of the exported file and of the same tf.function in TensorFlow; the
    load average after, since other work on the machine slows all three."""
    from ai_edge_litert.interpreter import Interpreter  # lazy: ai_edge_litert (the export extra, on one branch)

    out = {}
    for shape in args.shapes.split(","):
        batch, length = (int(x) for x in shape.split("x"))
        feeds = probe_feeds(config.vocab_size, batch, length)
        if kind == "albert-to-onnx":
            run = _run_onnx_session(path, args.threads)
            exported = _latency(lambda: run(feeds), args.repeats)
        else:
            runner = Interpreter(model_path=path, num_threads=args.threads).get_signature_runner()
            exported = _latency(lambda: runner(**feeds), args.repeats)
        tensors = {k: tf.constant(v) for k, v in feeds.items()}
        tensorflow = _latency(lambda: {k: v.numpy() for k, v in fn(**tensors).items()}, args.repeats)
        out[shape] = {"exported_wall_ms": exported[0], "exported_cpu_ms": exported[1],
                      "tensorflow_wall_ms": tensorflow[0], "tensorflow_cpu_ms": tensorflow[1],
                      "load_average": os.getloadavg()[0]}
    return out


if __name__ == "__main__":
    main()
