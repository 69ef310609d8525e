"""Two pieces of work at once: one on a thread of a small shared pool, the other on the
calling thread (``beside``). Retrieval runs its vector legs this way on a second
connection while the lexical legs run on the first (``legs.run_legs``): each leg is one
process of PostgreSQL's, and PostgreSQL itself never runs them in parallel (a subquery
with a ``LIMIT`` is never planned for parallel workers)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

A = TypeVar("A")
B = TypeVar("B")

THREADS = 16  # at most this many retrievals hand work over at once; more queue for a thread


@functools.cache
def _pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=THREADS, thread_name_prefix="memq-beside")


def beside(there: Callable[[], A], here: Callable[[], B]) -> tuple[A, B]:
    """``there()`` on a pooled thread while ``here()`` runs on this one; both results.
    Returns only once ``there`` has finished, also when ``here`` raises (what ``there``
    uses, a connection, must not be handed back while in use); ``here``'s error wins."""
    future = _pool().submit(there)
    try:
        own = here()
    except BaseException:
        future.exception()  # waits; its own error, if any, is dropped for ours
        raise
    return future.result(), own
