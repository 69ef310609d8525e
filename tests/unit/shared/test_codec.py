from datetime import UTC, datetime

from shared.mailbox.codec import decode_item, encode_payload, to_micros


def test_item_round_trip_with_clamped_timestamp():
    sent = datetime(2026, 1, 1, 10, tzinfo=UTC)
    effective = datetime(2026, 1, 1, 10, 5, tzinfo=UTC)
    payload = encode_payload("m-1", "user", "héllo wörld", to_micros(sent), to_micros(sent), {"k": [1, 2]})
    m = decode_item(f"7 {to_micros(effective)} {payload}")
    assert (m.seq, m.id, m.role, m.content, m.timestamp, m.sent_at, m.metadata) == (7, "m-1", "user", "héllo wörld", effective, sent, {"k": [1, 2]})
    assert m.clamped and m.to_record()["sent_at"] == sent.isoformat()


def test_content_with_spaces_and_newlines_survives():
    ts = to_micros(datetime(2026, 1, 1, tzinfo=UTC))
    m = decode_item(f"1 {ts} " + encode_payload("x", "assistant", "a b\nc  d", ts, ts, None))
    assert m.content == "a b\nc  d" and not m.clamped and "sent_at" not in m.to_record()
