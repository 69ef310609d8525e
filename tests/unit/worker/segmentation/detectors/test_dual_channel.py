"""Plast Mem's dual channel on hand-made embeddings."""

import numpy as np
import pytest
from vectors import axis, message

from memq.shared.llm import LLMError
from memq.worker.segmentation.detectors.base import DetectionInput
from memq.worker.segmentation.detectors.dual_channel import DualChannelDetector
from memq.worker.segmentation.detectors.hysteresis import HysteresisDetector, HysteresisParams
from memq.worker.segmentation.detectors.topic_shift_llm import Signals, TopicShift
from memq.worker.segmentation.event_state import EventState
from memq.worker.segmentation.signals import cosine, normalise


def shift(is_boundary, confidence, model="the user now asks about cars"):
    return TopicShift(
        is_boundary=is_boundary,
        confidence=confidence,
        signals=Signals(topic_shift=0.9, intent_shift=0.2, temporal_marker=0.0),
        updated_event_model=model,
    )


def data(state, vec, seq=3, text="a message of ordinary length about something"):
    return DetectionInput(buffer=[message(1), message(2)], new=message(seq, text), embedding=vec, state=state)


def test_surprise_channel_triggers_directly_below_035_and_records_surprise():
    d = DualChannelDetector(confirm_llm=lambda *a: pytest.fail("no LLM on a surprise boundary"))
    state = EventState(event_model_embedding=axis(0), last_embedding=axis(0))
    v = d.check(data(state, axis(1)))  # cosine 0 with the event model
    assert (v.boundary, v.reason, v.source) == (True, "surprise", "embedding")
    assert v.surprise == pytest.approx(1.0)


def test_at_035_or_above_the_surprise_channel_stays_quiet():
    d = DualChannelDetector()
    tilted = axis(0, 1, mix=np.tan(np.arccos(0.36)))  # cosine 0.36 with axis 0
    state = EventState(event_model_embedding=axis(0), last_embedding=tilted)
    v = d.check(data(state, tilted))
    assert not v.boundary and v.surprise == pytest.approx(0.64, abs=1e-3)


def test_same_topic_updates_last_embedding_by_rolling_average():
    d = DualChannelDetector()
    last, new = axis(0), axis(0, 1, mix=0.5)
    v = d.check(data(EventState(last_embedding=last), new))
    assert not v.boundary and v.reason == "same_topic"
    assert v.state.last_embedding is not None
    np.testing.assert_allclose(v.state.last_embedding, normalise(0.8 * last + 0.2 * new), atol=1e-6)


def test_first_message_initialises_the_last_embedding():
    v = DualChannelDetector().check(data(EventState(), axis(2)))
    assert not v.boundary and v.reason == "topic_init"
    assert v.state.last_embedding is not None
    np.testing.assert_allclose(v.state.last_embedding, axis(2))


def test_topic_candidate_confirmed_by_llm_with_enough_confidence():
    calls = []

    def confirm(model, history, new):
        calls.append((model, [m.seq for m in history], new.seq))
        return shift(True, 0.9)

    d = DualChannelDetector(confirm_llm=confirm)
    state = EventState(event_model="planning a trip", last_embedding=axis(0))
    v = d.check(data(state, axis(1)))
    assert (v.boundary, v.reason, v.source) == (True, "topic_shift", "llm")
    assert calls == [("planning a trip", [1, 2], 3)]
    assert v.factors["confidence"] == 0.9 and v.factors["topic_shift"] == 0.9


def test_low_confidence_keeps_the_event_and_adopts_the_llms_event_model():
    d = DualChannelDetector(
        confirm_llm=lambda *a: shift(True, 0.6, "trip planning, now about trains"), embed_text=lambda text: axis(5)
    )
    v = d.check(data(EventState(event_model="planning a trip", last_embedding=axis(0)), axis(1)))
    assert not v.boundary and v.reason == "topic_continues"
    assert v.state.event_model == "trip planning, now about trains"
    assert v.state.event_model_embedding is not None
    np.testing.assert_allclose(v.state.event_model_embedding, axis(5))


def test_llm_failure_falls_back_to_hysteresis():
    def broken(*a):
        raise LLMError("topic_shift: malformed output")

    always = HysteresisDetector(HysteresisParams(high=0.0, low=-1.0, bias=1.0))
    d = DualChannelDetector(confirm_llm=broken, hysteresis=always)
    v = d.check(data(EventState(last_embedding=axis(0)), axis(1)))
    assert (v.boundary, v.source) == (True, "hysteresis") and v.factors["llm_failed"] == 1.0


def test_without_llm_hysteresis_rejects_a_weak_candidate():
    never = HysteresisDetector(HysteresisParams(high=2.0))
    v = DualChannelDetector(hysteresis=never).check(data(EventState(last_embedding=axis(0)), axis(1)))
    assert not v.boundary and v.reason == "topic_candidate_rejected"


def test_edge_message_starts_the_next_event():
    d = DualChannelDetector()
    state = EventState(event_model="old", event_model_embedding=axis(0), last_embedding=axis(0), event_size=7)
    fresh = d.start_event(message(9, "By the way, my car makes a noise"), axis(3), state)
    assert fresh.event_model is None and fresh.event_size == 1
    assert fresh.last_embedding is not None and fresh.event_model_embedding is not None
    np.testing.assert_allclose(fresh.last_embedding, axis(3))
    assert cosine(fresh.event_model_embedding, axis(3)) == pytest.approx(1.0)  # centroid of the edge alone
    assert fresh.extras["prev_text"].startswith("By the way")


def test_next_event_model_from_the_llm_carries_over_to_the_new_event():
    d = DualChannelDetector(
        confirm_llm=lambda *a: shift(True, 0.95, "the user asks about car repair"), embed_text=lambda t: axis(6)
    )
    v = d.check(data(EventState(event_model="trip", last_embedding=axis(0)), axis(1)))
    fresh = d.start_event(message(3), axis(1), v.state)
    assert fresh.event_model == "the user asks about car repair"
    assert fresh.event_model_embedding is not None
    np.testing.assert_allclose(fresh.event_model_embedding, axis(6))
