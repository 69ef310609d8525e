"""Each Lua script's reply, decoded into its named result: the exact shapes the scripts
return (``shared/mailbox/lua/*.lua``, "Returns ..."), as ``str`` (the mailbox client
decodes replies) and as ``bytes``."""

from __future__ import annotations

import pytest
from redis.exceptions import ResponseError

from memq.shared.mailbox.replies import (
    MESSAGE_STATUSES,
    Adopted,
    Adoption,
    EnqueueCode,
    Enqueued,
    FailureRecorded,
    FenceRefusal,
    FlushRequested,
    OutOfOrder,
    OwnedByOtherUser,
    Retried,
    SnapshotReply,
    Synced,
    decode_adopt_segment,
    decode_count,
    decode_enqueue,
    decode_flag,
    decode_items,
    decode_quarantine_retry,
    decode_record_failure,
    decode_request_flush,
    decode_snapshot,
    decode_sync,
    decode_version,
    fence_refusal,
)


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ([-2, "alice"], OwnedByOtherUser("alice")),
        ([-2, b"alice"], OwnedByOtherUser("alice")),
        ([-1, 3, "1700000000000000"], OutOfOrder(3, 1_700_000_000_000_000)),
        ([0, "ad"], Enqueued(EnqueueCode.ACCEPTED, "ad")),
        ([1, "acd"], Enqueued(EnqueueCode.PUBLISH_DRAIN, "acd")),
        ([2, b"a"], Enqueued(EnqueueCode.DRAIN_QUEUED, "a")),
        ([0, ""], Enqueued(EnqueueCode.ACCEPTED, "")),
    ],
)
def test_enqueue_replies(reply, expected):
    assert decode_enqueue(reply) == expected


def _enqueued(reply: list[object]) -> Enqueued:
    decoded = decode_enqueue(reply)
    assert isinstance(decoded, Enqueued)
    return decoded


def test_only_the_publish_code_asks_the_caller_to_publish_a_drain():
    assert [_enqueued([code, "a"]).publish_drain for code in (0, 1, 2)] == [False, True, False]


def test_duplicates_in_an_enqueue_reply():
    assert _enqueued([0, "acd"]).has_duplicates
    assert not _enqueued([1, "aca"]).has_duplicates
    assert [MESSAGE_STATUSES[c] for c in "acd"] == ["accepted", "clamped", "duplicate"]


def test_an_unknown_enqueue_code_is_refused():
    with pytest.raises(ValueError):
        decode_enqueue([3, "a"])


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ([0, 0], FlushRequested(publish_drain=False, has_work=False)),
        ([0, 1], FlushRequested(publish_drain=False, has_work=True)),
        ([1, 1], FlushRequested(publish_drain=True, has_work=True)),
    ],
)
def test_request_flush_replies(reply, expected):
    assert decode_request_flush(reply) == expected


def test_a_snapshot_of_a_new_conversation():
    assert decode_snapshot(["abc", [], "", "", "", "", "", "", ""]) == SnapshotReply(
        run_id="abc", buffer=[], rid=None, fence=0, seq=0, version=0, last_eff_us=None, event=None, flush=None
    )


def test_a_snapshot_with_every_field():
    reply = [b"abc", [b"1 2 3 {}", "2 3 4 {}"], "abc", "7", "12", "40", "1700000000000001", '{"k":1}', "3:explicit"]
    assert decode_snapshot(reply) == SnapshotReply(
        run_id="abc",
        buffer=["1 2 3 {}", "2 3 4 {}"],
        rid="abc",
        fence=7,
        seq=12,
        version=40,
        last_eff_us=1_700_000_000_000_001,
        event='{"k":1}',
        flush="3:explicit",
    )


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        ("LOCK", FenceRefusal.LOCK),
        ("VERSION", FenceRefusal.VERSION),
        ("HEAD", FenceRefusal.HEAD),
        ("Error running script (call to f_0123): @user_script:1: LOCK", FenceRefusal.LOCK),
        ("NOSCRIPT No matching script", None),
    ],
)
def test_fence_refusals(error, expected):
    assert fence_refusal(ResponseError(error)) is expected


def test_versions_flags_counts_and_items():
    assert decode_version(41) == 41 and decode_version(b"41") == 41
    assert [decode_flag(r) for r in (0, 1, b"1", "0")] == [False, True, True, False]
    assert decode_count(3) == 3
    assert decode_items([]) == []
    assert decode_items(["t1/c1", b"t1/c2/00000000-0000-4000-8000-000000000001"]) == [
        "t1/c1",
        "t1/c2/00000000-0000-4000-8000-000000000001",
    ]


def test_sync_replies():
    assert decode_sync([8, 2]) == Synced(version=8, restamped=2)


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (-1, Adopted(Adoption.GONE)),
        (0, Adopted(Adoption.NEEDS_SYNC)),
        (5, Adopted(Adoption.ADOPTED, 5)),
    ],
)
def test_adopt_segment_replies(reply, expected):
    assert decode_adopt_segment(reply) == expected


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ([0, 0], FailureRecorded(failures=0, quarantined=False)),
        ([2, 0], FailureRecorded(failures=2, quarantined=False)),
        ([3, 1], FailureRecorded(failures=3, quarantined=True)),
    ],
)
def test_record_failure_replies(reply, expected):
    assert decode_record_failure(reply) == expected


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ([], None),
        (["message", "m-1", 1], Retried("message", "m-1", publish=True)),
        ([b"message", b"m-1", 0], Retried("message", "m-1", publish=False)),
        (
            ["segment", "00000000-0000-4000-8000-000000000001", 1],
            Retried("segment", "00000000-0000-4000-8000-000000000001", True),
        ),
    ],
)
def test_quarantine_retry_replies(reply, expected):
    assert decode_quarantine_retry(reply) == expected
