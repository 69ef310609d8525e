"""Edge validation without Redis: every refusal names the field and says what to do."""

from datetime import UTC, datetime, timedelta, timezone

import pytest

from producer.validation import validate_message
from shared.errors import ValidationError
from shared.settings import Settings

S = Settings(_env_file=None)
NOW = datetime(2026, 5, 1, 12, tzinfo=UTC)


def ok(**kw):
    base = {"conversation_id": "conv-1", "role": "user", "content": "hello"}
    base.update(kw)
    return validate_message(base, S, NOW)


def test_minimal_message_is_valid_and_unstamped():
    m = ok()
    assert (m.conversation_id, m.role, m.content, m.timestamp, m.message_id, m.metadata) == ("conv-1", "user", "hello", None, None, None)


def test_timestamp_strings_with_z_or_offset_and_aware_datetimes():
    assert ok(timestamp="2026-05-01T10:00:00Z").timestamp == datetime(2026, 5, 1, 10, tzinfo=UTC)
    assert ok(timestamp="2026-05-01T12:00:00+02:00").timestamp == datetime(2026, 5, 1, 10, tzinfo=UTC)
    aware = datetime(2026, 5, 1, 9, tzinfo=timezone(timedelta(hours=-3)))
    assert ok(timestamp=aware).timestamp == aware


@pytest.mark.parametrize(
    "kw, field, words",
    [
        ({"timestamp": "2026-05-01T10:00:00"}, "timestamp", "no timezone"),
        ({"timestamp": 1714557600}, "timestamp", "ISO-8601"),
        ({"timestamp": NOW + timedelta(minutes=6)}, "timestamp", "future"),
        ({"conversation_id": ""}, "conversation_id", "non-empty"),
        ({"conversation_id": "a/b"}, "conversation_id", "characters outside"),
        ({"conversation_id": "{tag}"}, "conversation_id", "characters outside"),
        ({"conversation_id": "x" * 129}, "conversation_id", "at most 128"),
        ({"role": "User"}, "role", "not one of"),
        ({"content": 42}, "content", "string"),
        ({"content": ""}, "content", "empty"),
        ({"content": "x" * 100_001}, "content", "MEMQ_MESSAGE_MAX_CHARS"),
        ({"metadata": {"k": float("nan")}}, "metadata", "JSON"),
        ({"metadata": {"k": "x" * 20_000}}, "metadata", "MEMQ_METADATA_MAX_BYTES"),
        ({"metadata": {"k": object()}}, "metadata", "JSON"),
        ({"message_id": ""}, "message_id", "printable"),
    ],
)
def test_refusals_name_the_field(kw, field, words):
    with pytest.raises(ValidationError) as err:
        ok(**kw)
    assert err.value.field == field and words in str(err.value)


def test_unknown_fields_are_refused():
    with pytest.raises(ValidationError, match="unknown field"):
        ok(text="typo for content")


def test_a_slightly_future_timestamp_within_clock_skew_is_fine():
    assert ok(timestamp=NOW + timedelta(minutes=4)).timestamp is not None
