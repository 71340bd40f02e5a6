"""Load test of ``albert-pipeline serve``: throughput and p50/p99 latency on loopback, with and without batching.

    .venv/bin/python -m benchmarks.serving_load --model DIR [--requests 400] [--concurrency 16] [--max-seconds 60]

Starts the server as a process (the entrypoint the container runs, ``albert-pipeline serve``) on a free loopback
port, with the micro-batcher (``--max-batch 32 --max-wait-ms 5``), with it not waiting (``--max-wait-ms 0``: only
what queued while the model ran joins a batch) and without it (``--max-batch 0``), waits for
its health route, then sends ``--requests`` POSTs of one instance each from ``--concurrency`` concurrent clients
(httpx, a real HTTP client), stopping early at ``--max-seconds``. Only 127.0.0.1 is ever contacted. Without
``--model`` it builds the tiny raw-text classifier of tests/serving_models.py (an untrained albert-tiny behind TF
Text's SentencePiece tokenization, sequence 16) in a temporary folder. Prints a Markdown table (and the CPU).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import socket
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLI = os.path.join(os.path.dirname(sys.executable), "albert-pipeline")
TEXTS = ["the cat sat on the mat", "a man is playing a guitar on the stage", "it rains", "stocks fell sharply today "
         "after the announcement of new tariffs on steel imports"]


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(model: str, port: int, max_batch: int, max_wait_ms: float) -> subprocess.Popen:
    env = {**os.environ, "AIP_HTTP_PORT": str(port)}
    return subprocess.Popen([CLI, "serve", "--model", model, "--host", "127.0.0.1", "--max-batch", str(max_batch),
                             "--max-wait-ms", str(max_wait_ms)], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, start_new_session=True)


def wait_ready(proc: subprocess.Popen, port: int, timeout: float = 180) -> dict:
    import httpx

    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited ({proc.returncode}): {proc.stderr.read().decode()[-2000:]}")
        try:
            return httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).json()
        except httpx.HTTPError:
            time.sleep(0.5)
    raise RuntimeError(f"the server did not answer its health route within {timeout:.0f} s")


async def load(port: int, instance_of, requests: int, concurrency: int, max_seconds: float) -> dict:
    import httpx

    latencies, errors, sent = [], 0, 0
    stop = time.perf_counter() + max_seconds
    url = f"http://127.0.0.1:{port}/predict"

    async def worker(client):
        nonlocal errors, sent
        while sent < requests and time.perf_counter() < stop:
            body = {"instances": [instance_of(sent)]}
            sent += 1
            t0 = time.perf_counter()
            r = await client.post(url, json=body)
            latencies.append(time.perf_counter() - t0)
            if r.status_code != 200 or len(r.json()["predictions"]) != 1:
                errors += 1

    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(timeout=60, limits=limits) as client:
        await client.post(url, json={"instances": [instance_of(0)]})  # warm-up: the first call traces nothing new
        t0 = time.perf_counter()
        await asyncio.gather(*(worker(client) for _ in range(concurrency)))
        wall = time.perf_counter() - t0
    latencies.sort()

    def pct(p):
        return latencies[min(len(latencies) - 1, int(round(p / 100 * (len(latencies) - 1))))] * 1000

    return {"requests": len(latencies), "errors": errors, "seconds": round(wall, 2),
            "throughput": round(len(latencies) / wall, 1), "p50_ms": round(pct(50), 1), "p99_ms": round(pct(99), 1)}


def instance_maker(health: dict):
    inputs = [i.split(" ")[0] for i in health["methods"][health["default"]]["inputs"]]
    if inputs == ["text"]:
        return lambda i: {"text": TEXTS[i % len(TEXTS)]}
    return lambda i: {name: TEXTS[(i + k) % len(TEXTS)] for k, name in enumerate(inputs)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", help="a model folder (default: a tiny raw-text classifier built here)")
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--max-seconds", type=float, default=60.0)
    parser.add_argument("--max-batch", type=int, default=32)
    parser.add_argument("--max-wait-ms", type=float, default=5.0)
    args = parser.parse_args(argv)
    tmp = None
    model = args.model
    if model is None:
        from tests import serving_models  # lazy: tensorflow (only when no --model is given)

        tmp = tempfile.mkdtemp(prefix="serving_load_")
        model = serving_models.task_model(os.path.join(tmp, "MNLI"), pair=True)
    rows = []
    modes = [(f"batched (max {args.max_batch}, wait {args.max_wait_ms:g} ms)", args.max_batch, args.max_wait_ms),
             (f"batched (max {args.max_batch}, wait 0: what queued while the model ran)", args.max_batch, 0.0),
             ("unbatched (--max-batch 0)", 0, 0.0)]
    for label, max_batch, max_wait_ms in modes:
        port = free_port()
        proc = start_server(model, port, max_batch, max_wait_ms)
        try:
            health = wait_ready(proc, port)
            result = asyncio.run(load(port, instance_maker(health), args.requests, args.concurrency,
                                      args.max_seconds))
            calls = json.loads(__import__("httpx").get(f"http://127.0.0.1:{port}/health").text)["batching"]
            result["model_calls"] = calls["model_calls"]
        finally:
            proc.terminate()
            proc.wait(timeout=30)
        rows.append((label, result))
        print(label, json.dumps(result), file=sys.stderr)
    what = "tiny raw-text classifier (tests/serving_models.py)" if tmp else model
    print(f"CPU: {cpu_name()} ({os.cpu_count()} cores visible); model: {what}; "
          f"{args.requests} requests of 1 instance, {args.concurrency} concurrent clients, loopback\n")
    print("| server | requests | errors | seconds | requests/s | p50 ms | p99 ms | model calls |")
    print("|---|---|---|---|---|---|---|---|")
    for label, r in rows:
        print(f"| {label} | {r['requests']} | {r['errors']} | {r['seconds']} | {r['throughput']} | {r['p50_ms']} | "
              f"{r['p99_ms']} | {r['model_calls']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
