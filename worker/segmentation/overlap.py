"""Overlap context (agent-memory): the tail of the previous segment, shown to the
summariser of the next one for continuity but never part of its episode.

Walks back from the previous segment's last message while messages are within
``window`` of its end and the running token count stays within ``max_tokens``.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import TypeVar

T = TypeVar("T")


def select_overlap(
    messages: Sequence[T],
    timestamps: Sequence[datetime],
    tokens: Sequence[int],
    *,
    window: timedelta,
    max_tokens: int,
) -> list[T]:
    if not messages:
        return []
    end = timestamps[-1]
    chosen: list[T] = []
    used = 0
    for message, ts, n in zip(reversed(messages), reversed(timestamps), reversed(tokens)):
        if end - ts > window or used + n > max_tokens:
            break
        chosen.append(message)
        used += n
    chosen.reverse()
    return chosen
