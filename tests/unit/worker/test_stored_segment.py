"""A segment the engine closes is stored as a ``Segment``: the record a drain writes for it
is, byte for byte, the one drains always wrote (so episode creation on a worker of either
version reads it), and reads back as the same ``Segment``."""

from __future__ import annotations

import json

from memq.shared.mailbox.codec import decode_inbox_item
from memq.shared.mailbox.segment import Segment, segment_id_for
from memq.worker.conversation_store import episode_id_for, stored_segment
from memq.worker.segmentation.engine import ClosedSegment


def _closed() -> ClosedSegment:
    items = [
        '1700000000000000 1700000000000100 {"id":"m1","role":"user","content":"Grüße aus Kiel",'
        '"sent_us":1700000000000000}',
        '1700000000000200 1700000000000300 {"id":"m2","role":"tool","content":"ok","sent_us":1690000000000000,'
        '"metadata":{"tool_name":"search"}}',
    ]
    messages = tuple(decode_inbox_item(raw).numbered(seq) for seq, raw in enumerate(items, start=11))
    return ClosedSegment(
        messages=messages,
        reason="time_boundary",
        surprise=0.4375,
        detector="hysteresis",
        source="rules",
        overlap=({"id": "m0", "seq": 10, "role": "assistant", "content": "earlier", "timestamp": "x"},),
        token_count=9,
    )


def test_the_record_is_the_one_drains_always_wrote():
    closed = _closed()
    segment_id = segment_id_for("t1", "conv-1", 11, 12)
    before = {  # what ConversationStore.segment_record made of it
        "episode_id": segment_id,
        "tenant": "t1",
        "conversation_id": "conv-1",
        "messages": [m.to_record() for m in closed.messages],
        "overlap": list(closed.overlap),
        "reason": closed.reason,
        "surprise": closed.surprise,
        "detector": closed.detector,
        "source": closed.source,
        "token_count": closed.token_count,
    }
    stored = stored_segment("t1", "conv-1", closed, 5)
    assert stored.id == segment_id == episode_id_for("t1", "conv-1", 11, 12)
    assert stored.encode() == "5 " + json.dumps(before, ensure_ascii=False, separators=(",", ":"))
    assert Segment.decode(stored.encode()) == stored
