"""The pipeline's floor: the embedding model's own batched throughput on the same texts, on
this machine, in its best shape. Every message is embedded once, so no pipeline can beat it.

Two shapes are measured and the faster one is the floor: one process whose model runs on
every core (``MEMQ_EMBEDDING_THREADS`` threads, up to 2), and one single-threaded process
per core embedding its share of the texts at the same time (what a worker of that many pool
processes could do at best). On this 2-core machine the second is 10-15 % faster: a
transformer's small matrix products do not split well over threads. Each shape embeds
every text once, all at once (sorted into length-grouped batches by the model adapter),
after a warm-up; the clock runs from the first process starting to the last finishing.
"""

from __future__ import annotations

import multiprocessing
import os
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


def _share(texts: list[str], ready: Any, start: Any, out: Any) -> None:
    """In a spawned process: a one-thread model, warmed, waits for the others, then embeds
    its share; puts its (start, end) on ``out``."""
    os.environ["MEMQ_EMBEDDING_THREADS"] = "1"
    from memq.shared.embeddings import get_embedder
    from memq.shared.settings import get_settings

    embedder = get_embedder(get_settings(), threads=1)
    embedder.embed(texts[:16])
    ready.release()
    start.wait()
    began = time.monotonic()
    embedder.embed(texts)
    out.put((began, time.monotonic()))


def parallel(texts: Sequence[str], processes: int, timeout: float = 600.0) -> float:
    """Messages/s of ``processes`` one-thread processes embedding an interleaved share of
    ``texts`` each, at the same time."""
    context = multiprocessing.get_context("spawn")  # a fresh interpreter: no torch state forked
    ready, start, out = context.Semaphore(0), context.Event(), context.Queue()
    shares = [list(texts[i::processes]) for i in range(processes)]
    children = [context.Process(target=_share, args=(share, ready, start, out)) for share in shares]
    for child in children:
        child.start()
    try:
        for _ in children:
            if not ready.acquire(timeout=timeout):
                raise RuntimeError("an embedding process did not load its model in time")
        start.set()
        spans = [out.get(timeout=timeout) for _ in children]
    finally:
        for child in children:
            child.join(timeout=30)
            if child.is_alive():
                child.kill()
    return len(texts) / (max(end for _, end in spans) - min(began for began, _ in spans))


def ceiling(embedder: Embedder, texts: Sequence[str]) -> tuple[float, dict[str, float]]:
    """The faster shape's messages/s, and each shape's (``1x<threads>``, ``<cores>x1``)."""
    threads = int(getattr(embedder, "threads", 1))
    shapes = {f"1x{threads}": in_process(embedder, texts)}
    cores = available_cpus()
    if cores > 1:
        shapes[f"{cores}x1"] = parallel(texts, cores)
    return max(shapes.values()), {k: round(v, 1) for k, v in shapes.items()}
