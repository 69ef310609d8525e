import json
from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

from memq.shared.mailbox.codec import (
    decode_buffer_item,
    decode_inbox_item,
    encode_line,
    encode_payload,
    to_micros,
)

SENT = datetime(2026, 1, 1, 10, tzinfo=UTC)
ARRIVAL = datetime(2026, 1, 1, 10, 7, tzinfo=UTC)


def test_inbox_item_round_trip_and_numbering_keeps_the_payload():
    effective = datetime(2026, 1, 1, 10, 5, tzinfo=UTC)
    payload = encode_payload("m-1", "user", "héllo wörld", to_micros(SENT), {"k": [1, 2]})
    m = decode_inbox_item(f"{to_micros(effective)} {to_micros(ARRIVAL)} {payload}")
    assert (m.seq, m.id, m.role, m.content, m.timestamp, m.sent_at, m.received_at, m.metadata) == (
        None,
        "m-1",
        "user",
        "héllo wörld",
        effective,
        SENT,
        ARRIVAL,
        {"k": [1, 2]},
    )
    n = m.numbered(7)
    assert n.raw == f"7 {m.raw}"
    assert decode_buffer_item(n.raw) == n
    assert n.clamped and n.to_record()["sent_at"] == SENT.isoformat() and n.to_record()["seq"] == 7


def test_numbering_clamps_to_the_previous_effective_timestamp():
    payload = encode_payload("m-2", "user", "late", to_micros(SENT), None)
    m = decode_inbox_item(f"{to_micros(SENT)} {to_micros(ARRIVAL)} {payload}")
    later = to_micros(ARRIVAL)
    n = m.numbered(3, not_before_us=later)
    assert n.timestamp == ARRIVAL and n.sent_at == SENT
    assert decode_buffer_item(n.raw).timestamp == ARRIVAL
    assert m.numbered(3, not_before_us=to_micros(SENT) - 1).timestamp == SENT  # not older: unchanged


def test_a_message_sent_without_a_timestamp_was_sent_on_arrival():
    payload = encode_payload("x", "assistant", "a b\nc  d", None, None)
    m = decode_inbox_item(f"{to_micros(ARRIVAL)} {to_micros(ARRIVAL)} {payload}")
    assert m.content == "a b\nc  d" and m.sent_at == ARRIVAL and not m.clamped and "sent_at" not in m.to_record()


@given(
    st.text(min_size=1),
    st.sampled_from(["user", "assistant", "tool"]),
    st.text(),
    st.none() | st.integers(-(2**53), 2**53),
    st.none() | st.dictionaries(st.text(max_size=5), st.text(max_size=5) | st.integers(), max_size=3),
)
def test_the_payload_is_the_json_encoders_byte_for_byte(message_id, role, content, sent_us, metadata):
    expected = {"id": message_id, "role": role, "content": content}
    if sent_us is not None:
        expected["sent_us"] = sent_us
    if metadata:
        expected["metadata"] = metadata
    encoded = encode_payload(message_id, role, content, sent_us, metadata)
    assert encoded == json.dumps(expected, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    assert "\n" not in encoded  # enqueue.lua splits a batch on newlines


@given(
    st.text(alphabet=st.characters(min_codepoint=33, max_codepoint=126), min_size=1, max_size=20),
    st.sampled_from(["user", "assistant", "tool"]),
    st.text(),
    st.none() | st.integers(-(2**53), 2**53),
    st.none() | st.dictionaries(st.text(max_size=5), st.text(max_size=5) | st.integers(), max_size=3),
)
def test_a_line_is_the_id_the_sent_time_and_the_payload(message_id, role, content, sent_us, metadata):
    line = encode_line(message_id, role, content, sent_us, metadata)
    sent = "" if sent_us is None else str(sent_us)
    assert line == f"{message_id} {sent} {encode_payload(message_id, role, content, sent_us, metadata)}"
    assert "\n" not in line  # enqueue.lua splits a batch on newlines
