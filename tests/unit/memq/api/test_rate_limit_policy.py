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


def test_the_message_rate_names_its_own_settings():
    from memq.shared.settings import Settings

    limit = Limit.of_messages(Settings(api_rate_limit_messages_per_second=50.0, api_rate_limit_messages_burst=1000))
    assert limit is not None and limit.unit == "messages"
    message, seconds = limit.refusal(2_500.0)
    assert seconds == 3 and "add 50 messages a second (1000 at once" in message
    assert "MEMQ_API_RATE_LIMIT_MESSAGES_PER_SECOND" in message and "MEMQ_API_RATE_LIMIT_MESSAGES_BURST" in message
    assert Limit.of_messages(Settings(api_rate_limit_messages_per_second=0.0)) is None


def test_a_message_burst_below_the_largest_batch_is_refused_at_start():
    import pytest
    from pydantic import ValidationError

    from memq.shared.settings import Settings

    with pytest.raises(ValidationError, match="MEMQ_API_RATE_LIMIT_MESSAGES_BURST must be at least MEMQ_API_MAX_BATCH"):
        Settings(api_max_batch=500, api_rate_limit_messages_burst=100)
    assert Settings(api_max_batch=500, api_rate_limit_messages_burst=100, api_rate_limit_messages_per_second=0)
