"""The segmenter across a flush: the closed conversation keeps its state at rest (no
vectors, no message text but the overlap tail), with any detector profile."""

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from memq.shared.mailbox.codec import QueuedMessage
from memq.shared.settings import Settings
from memq.worker.segmentation.detectors.registry import build_detector
from memq.worker.segmentation.event_state import PREV_TEXT, EventState
from memq.worker.segmentation.segmenter import Segmenter

T0 = datetime(2026, 1, 1, tzinfo=UTC)
TEXTS = [
    "Did you book the train to Porto for Friday?",
    "Yes, the 9:40 one, it arrives just after one.",
    "Great, then we can have lunch near the river.",
    "I also want to see the bookshop with the staircase.",
    "We need tickets for that, they sell out in the morning.",
    "I'll buy them tonight. How is your knee, by the way?",
    "Better. The physio says two more weeks of exercises.",
    "Then no long hikes this time, just the old town.",
]


def message(seq: int) -> QueuedMessage:
    ts = T0 + timedelta(minutes=seq)
    return QueuedMessage(seq, f"m{seq}", "user" if seq % 2 else "assistant", TEXTS[seq % len(TEXTS)], ts, ts, ts)


def vectors(n: int, dim: int = 384) -> list[np.ndarray]:
    rng = np.random.default_rng(7)
    out = rng.normal(size=(n, dim)).astype(np.float32)
    return list(out / np.linalg.norm(out, axis=1, keepdims=True))


def segmenter(profile: str) -> Segmenter:
    settings = Settings(_env_file=None)
    return Segmenter.from_settings(settings, build_detector(settings, profile))


def advance(s: Segmenter, seqs: range, vs: list[np.ndarray]) -> None:
    for i in seqs:
        s.advance(message(i), vs[i], vs[i + 1 : i + 1 + s.detector.lookahead])


@pytest.mark.parametrize("profile", ["default", "learned", "either", "hysteresis"])
def test_a_flush_leaves_no_vectors_and_no_text_but_the_overlap(profile):
    s, vs = segmenter(profile), vectors(12)
    advance(s, range(8), vs)
    assert s.state.recent, "an open event keeps its left window"
    closing = s.close("flush")
    assert closing is not None and closing.segment is not None and s.buffer == []
    rest = EventState.from_json(s.state.to_json())
    assert rest.recent == [] and rest.last_embedding is None and rest.event_model_embedding is None
    assert PREV_TEXT not in rest.extras
    assert [m["seq"] for m in rest.overlap] == [m.seq for m in closing.segment.messages][-len(rest.overlap) :]
    assert rest.overlap, "the next episode still begins with the closed one's tail"
    overlap = sum(len(m["content"]) for m in rest.overlap)
    assert len(s.state.to_json()) < overlap + 800  # was ~12 kB more: six base64 vectors


def test_a_flush_with_nothing_open_still_rests_the_state():
    s, vs = segmenter("default"), vectors(4)
    s.state = EventState(recent=vs[:3], extras={PREV_TEXT: "the last words", "sims": [1.0, 0.5, 0.1]})
    assert s.close("inactivity") is None
    assert s.state.recent == [] and s.state.extras == {"sims": [1.0, 0.5, 0.1]}


def test_the_conversation_goes_on_after_a_flush_without_looking_back():
    s, vs = segmenter("default"), vectors(16)
    advance(s, range(8), vs)
    s.close("flush")
    advance(s, range(8, 11), vs)
    assert all(any(np.array_equal(r, v) for v in vs[8:11]) for r in s.state.recent)
    assert s.buffer[0].message.seq == 8
