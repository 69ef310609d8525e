from datetime import UTC, datetime

import pytest

from memq.worker.episodes.fsrs_card import initial_memory

FORMED = datetime(2026, 1, 1, 12, tzinfo=UTC)


def test_initial_state_is_a_good_review_in_review_state():
    m = initial_memory(1, FORMED, 0.0, boost=0.5, desired_retention=0.9)
    assert m.stability == pytest.approx(2.3065, rel=1e-4)  # FSRS-6 default w[2]
    assert m.card["state"] == 2 and m.card["last_review"].startswith("2026-01-01T12:00")


@pytest.mark.parametrize("surprise, factor", [(0.0, 1.0), (0.4, 1.2), (1.0, 1.5)])
def test_surprise_boosts_stability_by_one_plus_half_surprise(surprise, factor):
    base = initial_memory(1, FORMED, 0.0, boost=0.5, desired_retention=0.9).stability
    boosted = initial_memory(1, FORMED, surprise, boost=0.5, desired_retention=0.9)
    assert boosted.stability == pytest.approx(base * factor)
    assert boosted.card["stability"] == pytest.approx(base * factor)


def test_surprise_outside_zero_one_is_clamped():
    assert initial_memory(1, FORMED, 3.0, boost=0.5, desired_retention=0.9).stability == pytest.approx(
        2.3065 * 1.5, rel=1e-4
    )


@pytest.mark.parametrize("surprise", [0.0, 0.5, 1.0])
def test_due_follows_the_boosted_stability(surprise):
    from datetime import datetime as dt

    from fsrs import Scheduler

    m = initial_memory(1, FORMED, surprise, boost=0.5, desired_retention=0.9)
    due = dt.fromisoformat(m.card["due"])
    scheduler = Scheduler(desired_retention=0.9, learning_steps=(), enable_fuzzing=False)
    assert (due - FORMED).days == scheduler._next_interval(stability=m.stability)
    assert (due - FORMED).days == max(1, round(m.stability))  # at 0.9 retention the interval is the stability
    if surprise == 1.0:
        assert due > dt.fromisoformat(initial_memory(1, FORMED, 0.0, boost=0.5, desired_retention=0.9).card["due"])
