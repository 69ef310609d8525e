"""Edge validation without Redis: every refusal names the field and says what to do."""

from datetime import UTC, datetime, timedelta, timezone, tzinfo

import pytest

from memq.producer.validation import validate_message
from memq.shared.errors import ValidationError
from memq.shared.settings import Settings

S = Settings(_env_file=None)
NOW = datetime(2026, 5, 1, 12, tzinfo=UTC)


def ok(**kw):
    base = {"conversation_id": "conv-1", "role": "user", "content": "hello"}
    base.update(kw)
    return validate_message(base, S, NOW)


def test_minimal_message_is_valid_and_unstamped():
    m = ok()
    assert (m.conversation_id, m.role, m.content, m.timestamp, m.message_id, m.metadata) == (
        "conv-1",
        "user",
        "hello",
        None,
        None,
        None,
    )


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
        ({"metadata": {"k": float("nan")}}, "metadata.k", "finite"),
        ({"metadata": {"k": "x" * 20_000}}, "metadata", "MEMQ_METADATA_MAX_BYTES"),
        ({"metadata": {"k": object()}}, "metadata.k", "JSON"),
        ({"metadata": {"k": ("a", "tuple")}}, "metadata.k", "JSON"),
        ({"metadata": {1: "int key"}}, "metadata", "not a string"),
        ({"metadata": {"k": "nul\x00"}}, "metadata.k", "NUL"),
        ({"metadata": {"k\x00": "nul in key"}}, "metadata", "NUL"),
        ({"metadata": {"k": "\ud800"}}, "metadata.k", "surrogate"),
        ({"metadata": {"tool_calls": 5}}, "metadata.tool_calls", "list of objects"),
        ({"metadata": {"tool_calls": ["search"]}}, "metadata.tool_calls", "list of objects"),
        ({"metadata": {"tool_name": {"n": 1}}}, "metadata.tool_name", "string"),
        ({"message_id": ""}, "message_id", "printable"),
        ({"message_id": "m-1\n"}, "message_id", "printable"),  # the old rule's $ let this through
        ({"message_id": "m 1"}, "message_id", "printable"),
        ({"message_id": "m-\x7f"}, "message_id", "printable"),
        ({"message_id": "é"}, "message_id", "printable"),
        ({"message_id": "m" * 201}, "message_id", "printable"),
        ({"message_id": 7}, "message_id", "printable"),
        ({"content": "lone \udc80 surrogate"}, "content", "surrogate"),
        ({"content": "nul \x00"}, "content", "NUL"),
        ({"timestamp": "1899-12-31T23:00:00Z"}, "timestamp", "before 1900"),
        ({"timestamp": "0001-01-01T00:00:00+14:00"}, "timestamp", "before 1900"),
        ({"tenant": "a/b"}, "tenant", "not a tenant id"),
        ({"tenant": ""}, "tenant", "not a tenant id"),
        ({"tenant": 7}, "tenant", "not a tenant id"),
    ],
)
def test_refusals_name_the_field(kw, field, words):
    with pytest.raises(ValidationError) as err:
        ok(**kw)
    assert err.value.field == field and words in str(err.value)


def test_deeply_nested_metadata_is_refused():
    deep: dict = {}
    node = deep
    for _ in range(40):
        node["x"] = {}
        node = node["x"]
    with pytest.raises(ValidationError, match="nested deeper"):
        ok(metadata=deep)


def test_a_message_may_name_its_tenant_and_defaults_to_the_callers():
    assert ok().tenant == S.tenant
    assert ok(tenant="acme").tenant == "acme"
    assert (
        validate_message({"conversation_id": "c", "role": "user", "content": "x"}, S, NOW, tenant="other").tenant
        == "other"
    )


def test_unknown_fields_are_refused():
    with pytest.raises(ValidationError, match="unknown field"):
        ok(text="typo for content")


def test_a_slightly_future_timestamp_within_clock_skew_is_fine():
    assert ok(timestamp=NOW + timedelta(minutes=4)).timestamp is not None


# -- found by tests/unit/producer/test_processable.py ----------------------------------
class _BrokenZone(tzinfo):
    def utcoffset(self, dt):
        return timedelta(hours=30)  # outside (-24 h, 24 h): datetime raises ValueError

    def dst(self, dt):
        return None


@pytest.mark.parametrize(
    "kw, field, words",
    [
        # Python's json cannot write or read integers of more than 4300 digits: this was a
        # ValueError out of the validator (and a message no worker could decode).
        ({"metadata": {"n": 10**4300}}, "metadata.n", "4300 digits"),
        ({"metadata": {"a": [-(7 * 10**5000)]}}, "metadata.a[0]", "send it as a string"),
        # tools_used read call["function"]["name"]: a string there failed every episode
        # creation of the segment with AttributeError.
        (
            {"metadata": {"tool_calls": [{"function": "search"}]}},
            "metadata.tool_calls[0].function",
            "must be an object",
        ),
        ({"metadata": {"tool_calls": [{"name": "a"}, {"name": 5}]}}, "metadata.tool_calls[1].name", "must be a string"),
        (
            {"metadata": {"tool_calls": [{"function": {"name": ["x"]}}]}},
            "metadata.tool_calls[0].function.name",
            "string",
        ),
        ({"metadata": {"name": 3}}, "metadata.name", "must be a string"),
        # Far-future overflow said "before 1900".
        ({"timestamp": "9999-12-31T23:59:59-14:00"}, "timestamp", "in the future"),
        ({"timestamp": datetime(2026, 5, 1, tzinfo=_BrokenZone())}, "timestamp", "unusable time zone"),  # type: ignore[abstract]  # broken on purpose
        # Odd keys are quoted in the field path instead of pasted raw.
        ({"metadata": {"a key\n": float("inf")}}, "metadata['a key\\n']", "finite"),
    ],
)
def test_refusals_found_by_the_property_test(kw, field, words):
    with pytest.raises(ValidationError) as err:
        ok(**kw)
    assert err.value.field == field and words in str(err.value)


def test_documented_tool_call_shapes_and_big_numbers_are_accepted():
    calls = [
        {"name": "search"},
        {"id": "c1", "type": "function", "function": {"name": "weather", "arguments": '{"city": "Oslo"}'}},
        {"type": "tool_use", "id": "t1", "name": "calc", "input": {"x": 1}},
        {"function": {"arguments": "{}"}},  # no name: recorded as no tool, not refused
        {"name": None, "function": None},
    ]
    meta = {"tool_calls": calls, "n": 10**4299, "x": -1e308}
    assert ok(role="assistant", metadata=meta).metadata == meta
