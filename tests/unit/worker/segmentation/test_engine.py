"""The segmenter step: what leaves the open event, what stays, and the overlap."""

from datetime import UTC, datetime, timedelta

from memq.shared.mailbox.codec import QueuedMessage
from memq.worker.segmentation.detectors.base import DetectionInput, Verdict
from memq.worker.segmentation.detectors.rules_only import RulesOnlyDetector
from memq.worker.segmentation.engine import Buffered, OverlapParams, close_open_event, step
from memq.worker.segmentation.event_state import EventState
from memq.worker.segmentation.rules import RuleParams

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def msg(
    seq: int, minute: float, text: str = "a message with enough characters to count here", role: str = "user"
) -> Buffered:
    ts = T0 + timedelta(minutes=minute)
    return Buffered(QueuedMessage(seq, f"m{seq}", role, text, ts, ts, ts), tokens=10)


def run(buffer, new, detector=None, state=None):
    return step(
        buffer, new, None, state or EventState(), detector or RulesOnlyDetector(), RuleParams(), OverlapParams()
    )


def test_time_boundary_closes_the_buffer_and_keeps_the_edge_message():
    buffer = [msg(1, 0), msg(2, 1), msg(3, 2)]
    result = run(buffer, msg(4, 30))
    assert (result.drop, result.push, result.action) == (3, True, "time_boundary")
    assert [m.seq for m in result.segment.messages] == [1, 2, 3]
    assert result.segment.surprise == 0.0 and result.segment.source == "rules"


def test_force_create_drains_all_including_the_new_message():
    buffer = [msg(i, i * 0.1) for i in range(1, 50)]
    result = run(buffer, msg(50, 5))
    assert (result.drop, result.push) == (49, False)
    assert [m.seq for m in result.segment.messages] == list(range(1, 51))


def test_skip_and_continue_only_append():
    assert (run([msg(1, 0)], msg(2, 1)).action, run([msg(1, 0)], msg(2, 1)).drop) == ("skip", 0)
    result = run([msg(1, 0), msg(2, 1)], msg(3, 2))
    assert (result.action, result.drop, result.push, result.segment) == ("continue", 0, True, None)


def test_overlap_of_a_closed_segment_is_handed_to_the_next_one():
    buffer = [msg(1, 0), msg(2, 1), msg(3, 8), msg(4, 9)]
    first = run(buffer, msg(5, 40))
    assert first.segment.overlap == ()
    assert [m["seq"] for m in first.state.overlap] == [3, 4]  # within 5 minutes of the end
    second = close_open_event([msg(5, 40)], first.state, RulesOnlyDetector(), OverlapParams(), reason="flush")
    assert second is not None and second.segment is not None
    assert [m["seq"] for m in second.segment.overlap] == [3, 4]


class AlwaysBoundary(RulesOnlyDetector):
    def check(self, data: DetectionInput) -> Verdict:
        return Verdict(boundary=True, state=data.state, surprise=0.8, reason="surprise", source="embedding")


def test_detector_boundary_keeps_the_edge_and_records_surprise():
    result = run([msg(1, 0), msg(2, 1), msg(3, 2)], msg(4, 3), detector=AlwaysBoundary(name="always"))
    assert (result.drop, result.push, result.action) == (3, True, "boundary")
    assert (result.segment.reason, result.segment.surprise, result.segment.detector) == ("surprise", 0.8, "always")


def test_flush_of_an_empty_event_does_nothing():
    assert close_open_event([], EventState(), RulesOnlyDetector(), OverlapParams(), reason="flush") is None
