"""Retrieval's FSRS retrievability is the fsrs package's own, whatever the times."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from fsrs import Card, Scheduler, State
from hypothesis import given
from hypothesis import strategies as st

from memq.memory.retrieval.retrievability import retrievability

NOW = datetime(2026, 12, 5, 18, 30, tzinfo=UTC)


def _package(stability: float, last_review: datetime, now: datetime, desired_retention: float) -> float:
    scheduler = Scheduler(desired_retention=desired_retention, learning_steps=(), enable_fuzzing=False)
    card = Card(card_id=0, state=State.Review, stability=stability, last_review=last_review, due=now)
    return min(1.0, max(0.0, float(scheduler.get_card_retrievability(card, current_datetime=now))))


@given(
    st.floats(min_value=0.01, max_value=36_500, allow_nan=False),
    st.timedeltas(min_value=timedelta(days=-3), max_value=timedelta(days=3_000)),
    st.sampled_from([0.7, 0.9, 0.95]),
)
def test_it_is_the_packages_value_on_the_actual_times(stability, ago, desired_retention):
    last_review = NOW - ago  # also a review after "now" (a clock behind the writer's)
    expected = _package(stability, last_review, NOW, desired_retention)
    assert retrievability(stability, last_review, NOW, desired_retention=desired_retention) == expected


def test_a_memory_without_state_is_not_retrievable():
    assert retrievability(None, NOW, NOW) == 0.0
    assert retrievability(3.0, None, NOW) == 0.0


def test_it_falls_with_the_days_since_the_review_and_not_within_one():
    fresh = retrievability(2.0, NOW, NOW)
    assert fresh == retrievability(2.0, NOW - timedelta(hours=23), NOW) == 1.0
    assert retrievability(2.0, NOW - timedelta(days=1), NOW) < fresh
    assert retrievability(2.0, NOW - timedelta(days=30), NOW) < retrievability(2.0, NOW - timedelta(days=2), NOW)
