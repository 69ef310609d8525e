"""A closed segment's Redis record, ``"<fence> <json>"``: written and read in one place
(``Segment``), byte for byte as segments were always stored, so segments written by an
older worker are read by a newer one and the other way round."""

from __future__ import annotations

import uuid
from dataclasses import replace

from memq.shared.mailbox.segment import Segment, segment_id_for

MESSAGE = {"id": "m1", "seq": 4, "role": "user", "content": "Grüße", "timestamp": "2026-03-01T08:00:00+00:00"}
SEGMENT = Segment(
    id=segment_id_for("t1", "c1", 4, 4),
    tenant="t1",
    conversation_id="c1",
    messages=[MESSAGE],
    overlap=[],
    reason="flush",
    surprise=0.25,
    detector="rules",
    source="flush",
    token_count=3,
    fence=7,
)
RAW = (
    '7 {"episode_id":"' + SEGMENT.id + '","tenant":"t1","conversation_id":"c1","messages":[{"id":"m1","seq":4,'
    '"role":"user","content":"Grüße","timestamp":"2026-03-01T08:00:00+00:00"}],"overlap":[],"reason":"flush",'
    '"surprise":0.25,"detector":"rules","source":"flush","token_count":3}'
)


def test_the_id_is_derived_from_the_messages_covered():
    assert segment_id_for("t1", "c1", 4, 4) == str(uuid.uuid5(uuid.NAMESPACE_URL, "memq:t1/c1/4-4"))
    assert segment_id_for("t1", "c1", 4, 5) != segment_id_for("t1", "c1", 4, 4)
    assert segment_id_for("t1", "c2", 4, 4) != segment_id_for("t1", "c1", 4, 4)


def test_encoded_exactly_as_always():
    assert SEGMENT.encode() == RAW


def test_decoded_from_str_and_bytes():
    assert Segment.decode(RAW) == SEGMENT
    assert Segment.decode(RAW.encode()) == SEGMENT


def test_a_restamped_fence_is_read():
    """``sync.lua`` and ``adopt_segment.lua`` rewrite what precedes the first space."""
    assert Segment.decode("12" + RAW[RAW.index(" ") :]) == replace(SEGMENT, fence=12)


def test_a_record_without_the_optional_fields_reads_as_episode_creation_always_did():
    raw = (
        '3 {"episode_id":"' + SEGMENT.id + '","tenant":"t1","conversation_id":"c1","messages":[],"reason":"flush",'
        '"surprise":null,"detector":"","source":null}'
    )
    assert Segment.decode(raw) == replace(
        SEGMENT, messages=[], surprise=0.0, detector="rules", source="rules", token_count=0, fence=3
    )
