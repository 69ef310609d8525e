"""The memq-export records as their models check them: each refusal names the line, the
record and the field, and says what the field must be."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from memq.memory.portability.format import (
    RECORDS,
    FormatError,
    FormatTooNew,
    check_header,
    encode,
    end,
    header,
    parse_line,
)

RUN = "6f1c1f0e-7a55-4c2e-9a57-0c7f0f6a3b10"


def gap(**changes):
    record = {
        "type": "gap",
        "tenant": "acme",
        "conversation_id": "c1",
        "first_seq": 3,
        "last_seq": 5,
        "reason": "expired",
        "message_id": None,
        "recorded_at": "2026-03-01T09:00:00+00:00",
    }
    return {**record, **changes}


def fact(**changes):
    record = {
        "type": "fact",
        "tenant": "acme",
        "conversation_id": "c1",
        "id": RUN,
        "category": "preference",
        "content": "Lena prefers trains",
        "embedding": "AACAPw==",
        "valid_at": None,
        "invalid_at": None,
        "created_at": "2026-03-01T09:00:00+00:00",
        "expired_at": None,
        "superseded_by": None,
        "source_episode_ids": [RUN],
        "reinforcements": 1,
        "last_reinforced_at": None,
        "model": None,
        "history": [
            {"action": "add", "at": "2026-03-01T09:00:00+00:00", "run_id": RUN, "episode_ids": [], "detail": {}}
        ],
    }
    return {**record, **changes}


def refusal(record, line: int = 7) -> str:
    with pytest.raises(FormatError) as raised:
        parse_line(json.dumps(record) + "\n", line)
    return str(raised.value)


def test_what_memq_writes_reads_back_as_written():
    first = header(
        tenant="acme",
        conversation_id=None,
        embedding_model="m",
        embedding_dim=384,
        exported_at=datetime(2026, 3, 1, 9, tzinfo=UTC),
    )
    for record in (first, gap(), fact(), end(3)):
        assert parse_line(encode(record), 1) == json.loads(encode(record))
    check_header(first)


def test_every_record_type_has_its_model():
    assert set(RECORDS) == {
        "header",
        "conversation",
        "gap",
        "episode",
        "message",
        "review",
        "pending_review",
        "fact",
        "end",
    }


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"first_seq": "3"}, "line 7: the gap record field 'first_seq' must be an integer, not \"3\""),
        ({"first_seq": True}, "line 7: the gap record field 'first_seq' must be an integer, not true"),
        ({"reason": None}, "line 7: the gap record field 'reason' must be a string, not null"),
        (
            {"recorded_at": "yesterday"},
            "line 7: the gap record field 'recorded_at' must be an ISO-8601 timestamp, not \"yesterday\"",
        ),
        ({"message_id": 12}, "line 7: the gap record field 'message_id' must be a string, not 12"),
    ],
)
def test_a_field_of_the_wrong_kind_is_named_with_what_it_must_be(changes, reason):
    assert refusal(gap(**changes)) == reason


def test_a_missing_field_is_named():
    record = gap()
    del record["last_seq"]
    assert refusal(record) == "line 7: the gap record has no field 'last_seq'"


def test_a_field_added_after_version_one_may_be_absent_and_unknown_fields_are_ignored():
    record = header(
        tenant="acme",
        conversation_id="c1",
        embedding_model="m",
        embedding_dim=384,
        exported_at=datetime(2026, 3, 1, tzinfo=UTC),
    )
    del record["user_id"]
    assert parse_line(json.dumps({**record, "added_later": 1}), 1)["added_later"] == 1


def test_a_facts_history_is_checked_entry_by_entry():
    assert refusal(fact(history=["add"])) == "line 7: the fact record's history[0] is not an object"
    bad = {**fact()["history"][0], "run_id": "not-a-uuid"}
    assert refusal(fact(history=[bad])) == (
        "line 7: the fact record's history[0] field 'run_id' must be a UUID, not \"not-a-uuid\""
    )
    assert refusal(fact(history={})) == "line 7: the fact record field 'history' must be an array, not {}"
    assert (
        refusal(fact(reinforcements=1.5))
        == "line 7: the fact record field 'reinforcements' must be an integer, not 1.5"
    )


def test_a_number_may_be_an_integer_but_not_a_boolean():
    assert parse_line(json.dumps(fact()), 1)  # sanity
    with pytest.raises(FormatError, match="'score' must be a number, not true"):
        parse_line(
            json.dumps(
                {
                    "type": "pending_review",
                    "tenant": "a",
                    "conversation_id": "c",
                    "memory_id": RUN,
                    "query": "q",
                    "rank": 1,
                    "score": True,
                    "retrieved_at": "2026-03-01T09:00:00+00:00",
                    "consumed_at": None,
                    "asked_in": None,
                    "review_memory_id": None,
                    "review_day": None,
                }
            ),
            1,
        )


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (b"\xff\n", "line 2: not UTF-8 (invalid start byte at byte 0)"),
        (
            '{"type": "gap"',
            "line 2: not valid JSON (Expecting ',' delimiter at column 15) (the file was cut in the middle of it?)",
        ),
        ("[1]\n", "line 2: not a JSON object"),
        (
            '{"type": "epsiode"}\n',
            "line 2: unknown record type 'epsiode' (known: header, conversation, gap, episode, "
            "message, review, pending_review, fact, end)",
        ),
    ],
)
def test_a_line_that_is_no_record_says_why(raw, reason):
    with pytest.raises(FormatError) as raised:
        parse_line(raw, 2)
    assert str(raised.value) == reason


def test_a_newer_version_is_refused_with_what_to_do():
    record = header(
        tenant="acme",
        conversation_id=None,
        embedding_model="m",
        embedding_dim=384,
        exported_at=datetime(2026, 3, 1, tzinfo=UTC),
    )
    with pytest.raises(FormatTooNew, match="upgrade memq here"):
        check_header({**record, "version": 2})
