"""Apply a review rating to a memory's FSRS card with the fsrs package (FSRS-6), at most
once per memory per day (pure).

FSRS counts elapsed time in whole days, so a second review of the same memory on the
same day is merged into the first: the day's rating is the best of them, applied once to
the card as it was before that day's review. Applying the same day's rating again gives
the same card, which is what makes a retried review harmless.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, cast

from fsrs import Card, Rating, Scheduler
from fsrs.card import CardDict

RATINGS = {"again": 1, "hard": 2, "good": 3, "easy": 4}
NAMES = {v: k for k, v in RATINGS.items()}


@functools.lru_cache(maxsize=4)
def scheduler(desired_retention: float) -> Scheduler:
    return Scheduler(desired_retention=desired_retention, learning_steps=(), enable_fuzzing=False)


@dataclass(frozen=True)
class Applied:
    card_before: dict[str, Any]  # the card before the day's review
    card_after: dict[str, Any]
    rating: int  # the day's rating (the best of the merged ones)
    merged: int  # how many ratings the day's review holds


def apply_rating(
    card: dict[str, Any],
    rating: int,
    at: datetime,
    *,
    desired_retention: float,
    same_day: tuple[dict[str, Any], int, int] | None = None,
) -> Applied:
    """``card``: the memory's card now; ``at``: when the memory was used (aware);
    ``same_day``: (card before, rating, merged count) of a review already applied on
    ``at``'s day, if any."""
    if rating not in NAMES:
        raise ValueError(f"rating must be 1-4, not {rating!r}")
    at = at.astimezone(UTC)  # the fsrs package takes UTC datetimes only
    if same_day is not None:
        before, previous, merged = same_day
        rating, merged = max(previous, rating), merged + 1
    else:
        before, merged = card, 1
    start = Card.from_dict(cast(CardDict, before))  # as Card.to_dict() wrote it
    if start.last_review is not None and at < start.last_review:
        at = start.last_review  # a review cannot precede the one before it
    after, _ = scheduler(desired_retention).review_card(start, Rating(rating), review_datetime=at)
    return Applied(before, cast(dict[str, Any], after.to_dict()), rating, merged)
