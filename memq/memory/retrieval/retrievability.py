"""FSRS retrievability of a memory at the moment of a question, with the fsrs package
(FSRS-6): the probability the memory would be recalled now, from its card's stability
and the time since its last review. Elapsed time counts in whole days, so a memory is
fully retrievable for 24 h after a review. A flashbulb memory (surprise at or above
``MEMQ_FLASHBULB_SURPRISE``) never falls below ``MEMQ_FLASHBULB_FLOOR``.

Retrieval reads the two values the computation needs straight out of the stored card
(``legs.fsrs_state``); ``card_state`` takes them from a card as the fsrs
package writes it."""

from __future__ import annotations

import functools
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, cast

from fsrs import Card, Scheduler, State
from fsrs.card import CardDict

if TYPE_CHECKING:
    from memq.shared.settings import Settings


@functools.lru_cache(maxsize=4)
def _scheduler(desired_retention: float) -> Scheduler:
    return Scheduler(desired_retention=desired_retention, learning_steps=(), enable_fuzzing=False)


def card_state(card: dict[str, Any]) -> tuple[float | None, datetime | None]:
    """(stability, last review) of a card stored as ``Card.to_dict()``."""
    c = Card.from_dict(cast(CardDict, card))  # as Card.to_dict() wrote it
    return c.stability, c.last_review


def retrievability(
    stability: float | None, last_review: datetime | None, now: datetime, *, desired_retention: float = 0.9
) -> float:
    """0 for a memory with no FSRS state (never formed). FSRS counts the time since the last
    review in whole days, so the value is the fsrs package's for the memory's stability and
    those days (``_retrievability``, remembered: the same episodes come back query after
    query, and building the package's ``Card`` was most of a re-ranking's time)."""
    if stability is None or last_review is None:
        return 0.0
    return _retrievability(stability, max(0, (now - last_review).days), desired_retention)


_ORIGIN = datetime(2000, 1, 1, tzinfo=UTC)


@functools.lru_cache(maxsize=65_536)
def _retrievability(stability: float, elapsed_days: int, desired_retention: float) -> float:
    """The fsrs package's retrievability of a card of ``stability`` reviewed
    ``elapsed_days`` whole days ago (``test_retrievability.py`` checks it against the
    package's own on the actual times)."""
    # card_id and due given: the fsrs package would otherwise read the clock (and sleep 1 ms)
    card = Card(card_id=0, state=State.Review, stability=stability, last_review=_ORIGIN, due=_ORIGIN)
    now = _ORIGIN + timedelta(days=elapsed_days)
    value = float(_scheduler(desired_retention).get_card_retrievability(card, current_datetime=now))
    return min(1.0, max(0.0, value))


def decay(value: float, weight: float, influence: float) -> float:
    """What FSRS does to a memory's score: ``1 - influence + influence x value^weight``.
    Influence 1 is seed 001's ``rrf x retrievability``; below 1 decay is bounded, so it
    reorders memories that match alike (the one reviewed as used leads) and never buries
    an old memory under a fresher one that matches the query clearly worse."""
    return float(1.0 - influence + influence * value**weight)


def with_floor(value: float, surprise: float, *, flashbulb_surprise: float, floor: float) -> float:
    return max(value, floor) if surprise >= flashbulb_surprise else value


def retrievability_now(
    stability: float | None, last_review: datetime | None, surprise: float, now: datetime, settings: Settings
) -> float:
    """An episode's retrievability at ``now`` as retrieval ranks it: FSRS with the
    settings' desired retention, floored for a flashbulb memory."""
    return with_floor(
        retrievability(stability, last_review, now, desired_retention=settings.desired_retention),
        surprise,
        flashbulb_surprise=settings.flashbulb_surprise,
        floor=settings.flashbulb_floor,
    )
