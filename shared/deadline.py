"""Time budgets that reach into slow calls.

A drain has a budget (``MEMQ_DRAIN_MAX_SECONDS``) and each of its steps a deadline; an
LLM call made deep inside a detector must not outlive either, or a batch of topic
checks overruns Celery's time limit. The caller opens a scope with ``within(seconds)``;
``memq.shared.llm`` reads ``remaining()`` and shortens its timeout and retries to fit, and
gives up (raising ``LLMError``, so the caller falls back) when too little is left.
Scopes nest: an inner scope never extends an outer one.
"""

from __future__ import annotations

import contextlib
import contextvars
import time
from collections.abc import Iterator

_deadline: contextvars.ContextVar[float | None] = contextvars.ContextVar("memq_deadline", default=None)


@contextlib.contextmanager
def within(seconds: float | None) -> Iterator[None]:
    """Run the block under a deadline ``seconds`` from now (None: no new limit)."""
    if seconds is None:
        yield
        return
    outer = _deadline.get()
    mine = time.monotonic() + max(0.0, seconds)
    token = _deadline.set(mine if outer is None else min(outer, mine))
    try:
        yield
    finally:
        _deadline.reset(token)


def remaining() -> float | None:
    """Seconds left in the innermost scope, or None when there is no deadline."""
    deadline = _deadline.get()
    return None if deadline is None else max(0.0, deadline - time.monotonic())
