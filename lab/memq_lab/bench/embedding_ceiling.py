"""The pipeline's floor: the embedding model's own batched throughput on the same texts, on
this machine, in its best shape. Every message is embedded once, so no pipeline can beat it.

Two shapes are measured and the faster one is the floor: one process whose model runs on
every core (``MEMQ_EMBEDDING_THREADS`` threads, up to 2), and one single-threaded process
per core embedding its share of the texts at the same time (what a worker of that many pool
processes could do at best). On this 2-core machine the second is 10-15 % faster: a
transformer's small matrix products do not split well over threads. Each shape embeds
every text once, all at once (sorted into length-grouped batches by the model adapter),
after a warm-up; the clock runs from the first process starting to the last finishing.
``Ceiling`` measures it as often as asked (the pipeline family: before and after its runs)
on one-thread processes started once.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import threading
import time
from collections.abc import Sequence
from typing import Any

from memq.shared.embeddings import Embedder, available_cpus


def in_process(embedder: Embedder, texts: Sequence[str]) -> float:
    """Messages/s of ``embedder`` (this process' own) embedding ``texts`` at once."""
    embedder.embed(list(texts[:64]))  # warm
    started = time.perf_counter()
    embedder.embed(list(texts))
    return len(texts) / (time.perf_counter() - started)


def _share(texts: list[str], ready: Any, go: Any, stop: Any, out: Any) -> None:
    """In a spawned process: a one-thread model, warmed; then, each time the parties meet
    at ``go``, embeds its share and puts its (start, end) on ``out``, until ``stop`` is set."""
    os.environ["MEMQ_EMBEDDING_THREADS"] = "1"
    from memq.shared.embeddings import get_embedder
    from memq.shared.settings import get_settings

    embedder = get_embedder(get_settings(), threads=1)
    embedder.embed(texts[:16])
    ready.release()
    while True:
        go.wait()
        if stop.is_set():
            return
        began = time.monotonic()
        embedder.embed(texts)
        out.put((began, time.monotonic()))


class Ceiling:
    """The floor, measured as often as asked on the same processes: ``ceiling(embedder)``
    gives the faster shape's messages/s and each shape's (``1x<threads>``, ``<cores>x1``;
    ``embedder``: this process' own). The one-thread processes are spawned on entering and
    load the model meanwhile (this process may load its own at the same time); the first
    measurement waits for them. Between measurements they wait on a barrier and take no
    CPU. ``timeout``: seconds for a load or a measurement."""

    def __init__(self, texts: Sequence[str], timeout: float = 600.0) -> None:
        self.texts, self.timeout = list(texts), timeout
        self.processes = available_cpus()
        self._children: list[Any] = []
        self._loading = 0  # children not yet ready

    def __enter__(self) -> Ceiling:
        if self.processes > 1:
            context = multiprocessing.get_context("spawn")  # a fresh interpreter: no torch state forked
            self._ready, self._stop, self._out = context.Semaphore(0), context.Event(), context.Queue()
            self._go = context.Barrier(self.processes + 1)
            try:
                for i in range(self.processes):
                    share = self.texts[i :: self.processes]
                    child = context.Process(target=_share, args=(share, self._ready, self._go, self._stop, self._out))
                    child.start()
                    self._children.append(child)  # started: joined on exit
                    self._loading += 1
            except BaseException:
                self.__exit__(None, None, None)
                raise
        return self

    def __call__(self, embedder: Embedder) -> tuple[float, dict[str, float]]:
        deadline = time.monotonic() + self.timeout
        while self._loading:  # no measurement while a model still loads beside it
            if self._ready.acquire(timeout=1):
                self._loading -= 1
            elif dead := [c.exitcode for c in self._children if not c.is_alive()]:
                raise RuntimeError(f"an embedding process of the floor exited while loading its model (code {dead[0]})")
            elif time.monotonic() > deadline:
                raise RuntimeError(f"an embedding process of the floor did not load its model in {self.timeout:.0f} s")
        threads = int(getattr(embedder, "threads", 1))
        shapes = {f"1x{threads}": in_process(embedder, self.texts)}
        if self._children:
            shapes[f"{self.processes}x1"] = self._parallel()
        return max(shapes.values()), {k: round(v, 1) for k, v in shapes.items()}

    def _parallel(self) -> float:
        """Messages/s of the one-thread processes embedding their interleaved shares at once:
        from the first starting to the last finishing."""
        self._go.wait(timeout=self.timeout)
        spans = [self._out.get(timeout=self.timeout) for _ in self._children]
        return len(self.texts) / (max(end for _, end in spans) - min(began for began, _ in spans))

    def __exit__(self, *_: object) -> None:
        if not self._children:
            return
        self._stop.set()
        if not self._loading:
            with contextlib.suppress(threading.BrokenBarrierError, RuntimeError):
                self._go.wait(timeout=5)  # the waiting children see ``stop`` and return
        for child in self._children:
            child.join(timeout=0 if self._loading else 30)
            if child.is_alive():
                child.kill()
                child.join()
        self._children = []
