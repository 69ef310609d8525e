"""The rate limit's arithmetic and what a refusal says."""

from __future__ import annotations

from memq.api.rate_limit import Limit


def test_the_burst_is_the_tolerance_of_the_schedule():
    limit = Limit(per_second=4.0, burst=10)
    assert limit.interval_ms == 250.0 and limit.tolerance_ms == 9 * 250.0


def test_a_refusal_names_the_limit_its_settings_and_a_whole_second_to_wait():
    message, seconds = Limit(per_second=2.5, burst=5).refusal(120.0)
    assert seconds == 1 and "2.5 requests a second (5 at once" in message
    assert "MEMQ_API_RATE_LIMIT_PER_SECOND" in message and "MEMQ_API_RATE_LIMIT_BURST" in message
    assert Limit(per_second=0.1, burst=1).refusal(9_500.0)[1] == 10
