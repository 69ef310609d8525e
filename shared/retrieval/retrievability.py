"""FSRS retrievability of a memory at the moment of a question, with the fsrs package
(FSRS-6): the probability the memory would be recalled now, from its card's stability
and the time since its last review. Elapsed time counts in whole days, so a memory is
fully retrievable for 24 h after a review. A flashbulb memory (surprise at or above
``MEMQ_FLASHBULB_SURPRISE``) never falls below ``MEMQ_FLASHBULB_FLOOR``."""

from __future__ import annotations

import functools
from datetime import datetime
from typing import Any

from fsrs import Card, Scheduler


@functools.lru_cache(maxsize=4)
def _scheduler(desired_retention: float) -> Scheduler:
    return Scheduler(desired_retention=desired_retention, learning_steps=(), enable_fuzzing=False)


def retrievability(card: dict[str, Any], now: datetime, *, desired_retention: float = 0.9) -> float:
    scheduler = _scheduler(desired_retention)
    value = float(scheduler.get_card_retrievability(Card.from_dict(card), current_datetime=now))
    return min(1.0, max(0.0, value))


def with_floor(value: float, surprise: float, *, flashbulb_surprise: float, floor: float) -> float:
    return max(value, floor) if surprise >= flashbulb_surprise else value
