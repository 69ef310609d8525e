"""The initial FSRS memory state of an episode (seeds 000/001).

A new card is reviewed once as ``Good`` at the moment the event ended (the memory
forms when the event happens) by a scheduler without learning steps, so the card
is in the Review state at once; this gives FSRS-6's initial stability and
difficulty; then stability is boosted by surprise:
``stability x (1 + boost x surprise)`` (boost 0.5 in the seeds).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from fsrs import Card, Rating, Scheduler


@dataclass(frozen=True)
class InitialMemory:
    stability: float
    difficulty: float
    card: dict[str, Any]


def initial_memory(card_id: int, formed_at: datetime, surprise: float, *, boost: float, desired_retention: float) -> InitialMemory:
    scheduler = Scheduler(desired_retention=desired_retention, learning_steps=(), enable_fuzzing=False)
    card, _ = scheduler.review_card(Card(card_id=card_id), Rating.Good, review_datetime=formed_at)
    card.stability = float(card.stability) * (1.0 + boost * max(0.0, min(1.0, surprise)))
    return InitialMemory(stability=card.stability, difficulty=float(card.difficulty), card=card.to_dict())
