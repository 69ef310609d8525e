"""episodic_agent's hysteresis: weighted factors, trigger at high, re-arm below low."""

import numpy as np
import pytest
from vectors import axis, message

from memq.worker.segmentation.detectors.base import DetectionInput
from memq.worker.segmentation.detectors.hysteresis import HysteresisDetector, HysteresisParams, factors, score
from memq.worker.segmentation.event_state import EventState


def test_seed_defaults():
    p = HysteresisParams()
    assert (p.high, p.low, p.time_interval, p.prediction_weight, p.marker_weight, p.time_weight) == (
        0.8,
        0.3,
        100,
        0.3,
        1.0,
        0.2,
    )


def test_factors_and_weighted_score():
    state = EventState(event_model_embedding=axis(0), recent=[axis(0), axis(0)], event_size=50)
    f = factors(state, "By the way, how is your dog?", axis(1), [], window=3, time_interval=100)
    assert f == pytest.approx({"pred": 1.0, "drift": 1.0, "drop": 1.0, "marker": 1.0, "time": 0.5})
    p = HysteresisParams(prediction_weight=0.3, drift_weight=0.5, marker_weight=0.0, time_weight=0.2)
    assert score(f, p) == pytest.approx(0.3 + 0.5 + 0.1)
    assert score(f, HysteresisParams()) == 1.0  # clamped


def test_look_ahead_enters_the_drift_window():
    state = EventState(recent=[axis(0)])
    alone = factors(state, "x", axis(1), [], window=3, time_interval=100)["drift"]
    with_next = factors(state, "x", axis(1), [axis(0)], window=3, time_interval=100)["drift"]
    assert with_next < alone


def _step(det, state, scale):
    """A message whose score is ``scale`` (pred factor only, weight 1)."""
    v = axis(0, 1, mix=np.tan(np.arccos(1 - scale))) if scale < 1 else axis(1)
    d = DetectionInput(
        buffer=[message(1)],
        new=message(2, "plain text here"),
        embedding=v,
        state=state.evolve(event_model_embedding=axis(0), recent=[]),
    )
    return det.check(d)


def test_triggers_once_then_rearms_only_below_low():
    det = HysteresisDetector(
        HysteresisParams(high=0.8, low=0.3, prediction_weight=1.0, drift_weight=0, marker_weight=0, time_weight=0)
    )
    state = EventState()
    fired = []
    for s in (0.5, 0.9, 0.85, 0.5, 0.9, 0.2, 0.9):
        v = _step(det, state, s)
        fired.append(v.boundary)
        state = v.state
    assert fired == [False, True, False, False, False, False, True]


def test_verdict_carries_score_and_factors_for_verbose_logs():
    det = HysteresisDetector(HysteresisParams(prediction_weight=1.0, drift_weight=0, marker_weight=0, time_weight=0))
    v = _step(det, EventState(), 0.9)
    assert v.score == pytest.approx(0.9, abs=1e-3) and set(v.factors) == {"pred", "drift", "drop", "marker", "time"}
