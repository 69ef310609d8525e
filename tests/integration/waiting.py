"""Waiting in tests for something another process, thread or clock brings about: poll a
condition until it holds, or fail saying what was awaited and what was last seen.

The wait is on the condition itself (an event), never a fixed sleep chosen as a margin: the
interval only spaces the polls of a condition that has no event to block on.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Literal, TypeVar

T = TypeVar("T")


def wait_until(
    predicate: Callable[[], T | Literal[False] | None],
    timeout: float,
    interval: float = 0.1,
    message: str | Callable[[], str] | None = None,
    ignoring: tuple[type[BaseException], ...] = (),
) -> T:
    """Call ``predicate`` until it returns a truthy value, and return that value.

    It is called at once, then every ``interval`` seconds (0: again at once, for a predicate
    that blocks by itself, such as a ping with a timeout), until ``timeout`` seconds have
    passed; then AssertionError says ``message`` (a callable is called then, for details
    only known at the end; none: the predicate's name) and the predicate's last value.
    An exception of one of the ``ignoring`` types counts as not yet (it is the last value);
    any other, an AssertionError of the predicate's own included, ends the wait."""
    deadline = time.monotonic() + timeout
    while True:
        last: object
        try:
            value = predicate()
        except ignoring as e:
            last = e
        else:
            if value:
                return value
            last = value
        left = deadline - time.monotonic()
        if left <= 0:
            what = message() if callable(message) else message or getattr(predicate, "__qualname__", repr(predicate))
            raise AssertionError(f"{what} (not within {timeout:g} s; last: {last!r})")
        if interval > 0:
            time.sleep(min(interval, left))
