"""The initial FSRS memory state of an episode (Plast Mem).

A new card is reviewed once as ``Good`` at the moment the event ended (the memory
forms when the event happens) by a scheduler without learning steps, so the card
is in the Review state at once; this gives FSRS-6's initial stability and
difficulty; then stability is boosted by surprise:
``stability x (1 + boost x surprise)`` (boost 0.5 in the seeds), and the card's ``due``
follows the boosted stability (the interval FSRS gives that stability at the desired
retention), so the next review is scheduled for the memory that was actually formed.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, cast

from fsrs import Card, Rating, Scheduler


@dataclass(frozen=True)
class InitialMemory:
    stability: float
    difficulty: float
    card: dict[str, Any]


def initial_memory(
    card_id: int, formed_at: datetime, surprise: float, *, boost: float, desired_retention: float
) -> InitialMemory:
    scheduler = Scheduler(desired_retention=desired_retention, learning_steps=(), enable_fuzzing=False)
    card, _ = scheduler.review_card(Card(card_id=card_id), Rating.Good, review_datetime=formed_at)
    assert card.stability is not None and card.difficulty is not None  # set by the first review
    card.stability = float(card.stability) * (1.0 + boost * max(0.0, min(1.0, surprise)))
    card.due = formed_at + timedelta(days=due_in_days(scheduler, card.stability))
    return InitialMemory(
        stability=card.stability, difficulty=float(card.difficulty), card=cast(dict[str, Any], card.to_dict())
    )


def due_in_days(scheduler: Scheduler, stability: float) -> int:
    """FSRS-6's interval for a stability at the scheduler's desired retention (whole days,
    at least one): the fsrs package's own computation."""
    return scheduler._next_interval(stability=stability)  # fsrs 6.x; pinned <7 in pyproject
