"""The verbose boundary-score line (episodic_agent's debug output)."""

import structlog

from memq.worker.segmentation.detectors.base import Verdict
from memq.worker.segmentation.engine import Step
from memq.worker.segmentation.event_state import EventState
from memq.worker.segmentation.job import log_boundary_score


def test_boundary_score_line_names_score_factors_and_trigger():
    verdict = Verdict(
        True,
        EventState(),
        score=0.85,
        reason="learned_boundary",
        source="embedding",
        factors={"p": 0.85, "cos_prev": 0.12},
    )
    step = Step(drop=3, push=True, segment=None, state=EventState(), action="boundary", verdict=verdict)
    with structlog.testing.capture_logs() as logs:
        log_boundary_score(42, step)
        log_boundary_score(43, Step(0, True, None, EventState(), "skip"))
    assert (
        logs[0]["event"]
        == "seq 42: Boundary score: 0.85 (p=0.85, cos_prev=0.12) -> TRIGGER (learned_boundary, embedding)"
    )
    assert logs[1]["event"] == "seq 43: rule layer -> skip"
