"""agent-memory's overlap: the previous segment's last <= 5 minutes and <= 500 tokens."""

from datetime import UTC, datetime, timedelta

from memq.worker.segmentation.overlap import select_overlap

T0 = datetime(2026, 1, 1, tzinfo=UTC)
W = timedelta(minutes=5)


def test_takes_the_tail_within_the_time_window():
    ts = [T0, T0 + timedelta(minutes=1), T0 + timedelta(minutes=7), T0 + timedelta(minutes=10)]
    assert select_overlap(["a", "b", "c", "d"], ts, [10] * 4, window=W, max_tokens=500) == ["c", "d"]


def test_stops_at_the_token_cap_keeping_order():
    ts = [T0] * 4
    assert select_overlap(["a", "b", "c", "d"], ts, [200, 200, 200, 200], window=W, max_tokens=500) == ["c", "d"]


def test_a_single_message_over_the_cap_gives_no_overlap():
    assert select_overlap(["a"], [T0], [501], window=W, max_tokens=500) == []


def test_empty_segment():
    assert select_overlap([], [], [], window=W, max_tokens=500) == []
