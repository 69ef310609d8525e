"""Work on two threads at once. ``alongside``: one job on a pooled thread while another
runs on the calling thread. ``beside``: jobs shared by two workers, one on the calling thread, one on a thread of
a small shared pool, each given its own resource (a connection) and taking the next job
whenever it is free. Retrieval runs its four legs this way on two connections beyond one
conversation (``legs.run_legs``): each leg is one process of PostgreSQL's, and
PostgreSQL itself never runs them in parallel (a subquery with a ``LIMIT`` is never
planned for parallel workers). Taking the next job when free, rather than a fixed half
each, keeps both busy whichever leg turns out dear for this query."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

C = TypeVar("C")
R = TypeVar("R")
S = TypeVar("S")

THREADS = 16  # at most this many retrievals hand work over at once; more queue for a thread


@functools.cache
def _pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=THREADS, thread_name_prefix="memq-beside")


def beside(jobs: Sequence[Callable[[C], R]], here: C, there: C) -> list[R]:
    """Every job's result, in the jobs' order. Two workers take the jobs in order, the
    next one whenever free: this thread with ``here``, a pooled thread with ``there``.
    After a job fails, neither takes another. Returns, or raises, only once the pooled
    worker has stopped (what it uses, a connection, must not be handed back while in
    use); this thread's error wins over the other's."""
    results: list[R | None] = [None] * len(jobs)
    lock = threading.Lock()
    order = iter(range(len(jobs)))
    failed = threading.Event()

    def work(resource: C) -> None:
        while not failed.is_set():
            with lock:
                i = next(order, None)
            if i is None:
                return
            try:
                results[i] = jobs[i](resource)
            except BaseException:
                failed.set()
                raise

    future = _pool().submit(work, there)
    try:
        work(here)
    except BaseException:
        future.exception()  # waits; its own error, if any, is dropped for ours
        raise
    future.result()
    return results  # type: ignore[return-value]  # every job ran: none is left None


def alongside(there: Callable[[], R], here: Callable[[], S]) -> tuple[R, S]:
    """``there()`` on a pooled thread while ``here()`` runs on this one (retrieval embeds
    its query while PostgreSQL counts the query's words); both results, once both have
    stopped. This thread's error wins over the other's."""
    future = _pool().submit(there)
    try:
        mine = here()
    except BaseException:
        future.exception()  # waits; its own error, if any, is dropped for ours
        raise
    return future.result(), mine
