"""A review rating applied with the fsrs package, once per memory per day."""

from datetime import UTC, datetime, timedelta
from typing import cast

import pytest
from fsrs import Card, Rating, Scheduler
from fsrs.card import CardDict

from memq.worker.episodes.fsrs_card import initial_memory
from memq.worker.review.fsrs_update import apply_rating

FORMED = datetime(2026, 1, 1, 12, tzinfo=UTC)


def card() -> dict:
    return initial_memory(7, FORMED, 0.2, boost=0.5, desired_retention=0.9).card


@pytest.mark.parametrize("rating", [1, 2, 3, 4])
def test_the_fsrs_packages_own_numbers(rating):
    at = FORMED + timedelta(days=5, hours=3)
    applied = apply_rating(card(), rating, at, desired_retention=0.9)
    expected, _ = Scheduler(desired_retention=0.9, learning_steps=(), enable_fuzzing=False).review_card(
        Card.from_dict(cast(CardDict, card())), Rating(rating), review_datetime=at
    )
    assert applied.card_after == expected.to_dict() and applied.merged == 1 and applied.card_before == card()
    if rating == 4:
        assert applied.card_after["stability"] > card()["stability"]
    if rating == 1:
        assert applied.card_after["stability"] < card()["stability"]


def test_a_second_review_on_the_same_day_is_merged_into_the_first():
    at = FORMED + timedelta(days=3)
    first = apply_rating(card(), 2, at, desired_retention=0.9)
    later = at + timedelta(hours=5)  # same day
    merged = apply_rating(first.card_after, 4, later, desired_retention=0.9, same_day=(first.card_before, 2, 1))
    direct = apply_rating(card(), 4, later, desired_retention=0.9)
    assert merged.rating == 4 and merged.merged == 2 and merged.card_before == card()
    assert merged.card_after == direct.card_after  # one review, the day's best rating, from the day's starting card
    lower = apply_rating(merged.card_after, 1, later, desired_retention=0.9, same_day=(card(), 4, 2))
    assert (
        lower.rating == 4 and lower.card_after == direct.card_after
    )  # a worse rating later the same day changes nothing


def test_applying_the_same_days_review_again_gives_the_same_card():
    at = FORMED + timedelta(days=3)
    once = apply_rating(card(), 3, at, desired_retention=0.9)
    again = apply_rating(once.card_after, 3, at, desired_retention=0.9, same_day=(once.card_before, 3, 1))
    assert again.card_after == once.card_after


def test_a_review_before_the_last_one_is_taken_at_the_last_one_and_bad_ratings_are_refused():
    early = apply_rating(card(), 3, FORMED - timedelta(days=2), desired_retention=0.9)
    assert datetime.fromisoformat(early.card_after["last_review"]) == FORMED
    with pytest.raises(ValueError):
        apply_rating(card(), 5, FORMED, desired_retention=0.9)
