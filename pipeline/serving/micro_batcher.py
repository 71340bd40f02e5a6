"""Concurrent requests as one model call: a small asyncio micro-batcher.

Each request hands its checked instances over as one *chunk* (same method, same shapes: they stack). One collector
task takes the first chunk waiting, then keeps taking chunks for the same method and shapes until the batch holds
``max_batch`` instances or ``max_wait`` seconds have passed since that first chunk (chunks already queued join
at once, so ``max_wait=0`` batches what arrived while the model was busy and never waits), runs the batch in the model's one
worker thread (TensorFlow releases the GIL; the event loop keeps accepting requests meanwhile) and answers each
chunk with its own rows. A chunk larger than ``max_batch`` runs alone; chunks that cannot stack with the batch wait
for the next one. ``max_batch=0`` turns batching off: each request runs by itself, concurrently, in the loop's
default thread pool (what benchmarks/serving_load.py compares against).
"""
from __future__ import annotations

import asyncio
import concurrent.futures
from dataclasses import dataclass
from typing import Any, Callable, Dict, Hashable, List, Optional

import numpy as np

from pipeline.serving.serving_instances import stack

__all__ = ["MicroBatcher"]

Rows = List[Dict[str, Any]]


@dataclass
class _Chunk:
    key: Hashable
    instances: List[Dict[str, np.ndarray]]
    future: "asyncio.Future[Rows]"


class MicroBatcher:
    """``await submit(key, run, instances)`` → the rows of ``run(stack(instances), len(instances))``, batched with
    other requests of the same ``key`` (method and shapes)."""

    def __init__(self, max_batch: int = 32, max_wait: float = 0.005):
        if max_batch < 0 or max_wait < 0:
            raise ValueError("max_batch and max_wait must be >= 0")
        self.max_batch, self.max_wait = max_batch, max_wait
        self._queue: Optional[asyncio.Queue] = None
        self._runs: Dict[Hashable, Callable] = {}
        self._task: Optional[asyncio.Task] = None
        self._pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="model")
        self._held: List[_Chunk] = []  # taken from the queue, not stackable with the batch being built
        self.batches = 0  # model calls made, for /health and the load test
        self.instances = 0

    async def submit(self, key: Hashable, run: Callable[[Dict[str, np.ndarray], int], Rows],
                     instances: List[Dict[str, np.ndarray]]) -> Rows:
        loop = asyncio.get_running_loop()
        if self.max_batch == 0:
            self.batches, self.instances = self.batches + 1, self.instances + len(instances)
            return await loop.run_in_executor(None, run, stack(instances), len(instances))
        if self._task is None:
            self._queue = asyncio.Queue()
            self._task = loop.create_task(self._collect())
        self._runs[key] = run
        chunk = _Chunk(key, instances, loop.create_future())
        self._queue.put_nowait(chunk)
        return await chunk.future

    async def _next(self, timeout: Optional[float]) -> Optional[_Chunk]:
        """The next chunk: a held one, else one already queued, else one that arrives within ``timeout`` seconds
        (None: wait as long as it takes); None when none came."""
        if self._held:
            return self._held.pop(0)
        if not self._queue.empty():
            return self._queue.get_nowait()
        if timeout is None:
            return await self._queue.get()
        if timeout <= 0:
            return None
        try:
            return await asyncio.wait_for(self._queue.get(), timeout)
        except asyncio.TimeoutError:
            return None

    async def _collect(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            first = await self._next(None)
            batch, size = [first], len(first.instances)
            deadline = loop.time() + self.max_wait
            skipped: List[_Chunk] = []
            while size < self.max_batch:
                chunk = await self._next(deadline - loop.time())
                if chunk is None:
                    break
                if chunk.key != first.key or size + len(chunk.instances) > self.max_batch:
                    skipped.append(chunk)
                    if chunk.key == first.key:
                        break
                    continue
                batch.append(chunk)
                size += len(chunk.instances)
            self._held = skipped + self._held
            instances = [i for chunk in batch for i in chunk.instances]
            try:
                out = await loop.run_in_executor(self._pool, self._runs[first.key], stack(instances), len(instances))
            except Exception as exc:  # every request of the batch gets the error; the collector goes on
                for chunk in batch:
                    if not chunk.future.done():
                        chunk.future.set_exception(exc)
                continue
            self.batches, self.instances = self.batches + 1, self.instances + len(instances)
            start = 0
            for chunk in batch:
                if not chunk.future.done():
                    chunk.future.set_result(out[start:start + len(chunk.instances)])
                start += len(chunk.instances)

    def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
        self._pool.shutdown(wait=False)
