"""Plast Mem's LLM topic-shift check through litellm against the scripted server, and
the dual-channel detector in the real pipeline, confirming boundaries by LLM."""

from __future__ import annotations

import json

import pytest
from waiting import wait_until

from memq.shared.db.episodes import list_episodes
from memq.shared.llm import LLMError
from memq.shared.mailbox.codec import QueuedMessage
from memq.worker.segmentation.detectors.topic_shift_llm import llm_topic_shift
from memq_lab.testing.scripted_llm import Reply

SHIFT = {
    "is_boundary": True,
    "confidence": 0.92,
    "signals": {"topic_shift": 0.9, "intent_shift": 0.6, "temporal_marker": 1.0},
    "updated_event_model": "The user asks about repairing a car.",
}
NO_SHIFT = {
    "is_boundary": False,
    "confidence": 0.8,
    "signals": {"topic_shift": 0.2, "intent_shift": 0.1, "temporal_marker": 0.0},
    "updated_event_model": "The user plans a sourdough bake, now about flour.",
}
LOW = {**SHIFT, "confidence": 0.55}


def _msg(seq, text):
    from datetime import UTC, datetime

    now = datetime(2026, 1, 1, tzinfo=UTC)
    return QueuedMessage(seq, f"m{seq}", "user", text, now, now, now)


@pytest.mark.parametrize(
    "reply, boundary, confidence", [(SHIFT, True, 0.92), (NO_SHIFT, False, 0.8), (LOW, True, 0.55)]
)
def test_answers_are_parsed(settings, scripted_llm, reply, boundary, confidence):
    scripted_llm.push(reply)
    out = llm_topic_shift(
        settings, "The user bakes sourdough.", [_msg(1, "my loaf is flat")], _msg(2, "By the way, my car rattles")
    )
    assert (out.is_boundary, out.confidence) == (boundary, confidence)
    req = scripted_llm.requests[0]
    assert req["response_format"]["json_schema"]["name"] == "TopicShift"
    assert "EVENT MODEL: The user bakes sourdough." in req["messages"][1]["content"]
    assert "NEW MESSAGE:\nuser: By the way, my car rattles" in req["messages"][1]["content"]


@pytest.mark.parametrize(
    "replies",
    [
        [Reply(body="{oops"), Reply(body='{"is_boundary": "maybe"}')],  # malformed, then schema-invalid
        [Reply(delay=5, content=json.dumps(SHIFT)), Reply(delay=5, content=json.dumps(SHIFT))],  # timeouts
        [Reply(status=503, content="down"), Reply(status=429, content="slow", headers={"retry-after-ms": "1"})],
    ],
    ids=["malformed", "timeout", "503-429"],
)
def test_failures_after_retries_raise_llm_error(settings, scripted_llm, replies):
    scripted_llm.push(*replies)
    with pytest.raises(LLMError, match="topic_shift"):
        llm_topic_shift(settings, None, [], _msg(1, "hello there"))
    assert scripted_llm.request_count == 2  # MEMQ_LLM_MAX_RETRIES=1 in tests


def test_a_429_then_an_answer_succeeds(settings, scripted_llm):
    scripted_llm.push(Reply(status=429, content="slow", headers={"retry-after-ms": "1"}), SHIFT)
    assert llm_topic_shift(settings, None, [], _msg(1, "hello")).is_boundary


CONVERSATION = [
    ("user", "I'm baking sourdough this weekend and my starter is very active."),
    ("assistant", "Great, an active starter helps; feed it the night before you mix the dough."),
    ("user", "Should I use bread flour or all-purpose flour for the loaf?"),
    ("assistant", "Bread flour gives more structure; all-purpose works at slightly lower hydration."),
    ("user", "Changing topic completely: my car's brakes squeal when I stop at lights."),
    ("assistant", "Squealing brakes often mean worn pads; have the pad thickness checked soon."),
    ("user", "How much does replacing brake pads usually cost at a garage?"),
]


def _router(topic_reply):
    """Answer topic-shift requests with ``topic_reply`` and summaries with a fixed summary."""

    def route(request):
        name = request["response_format"]["json_schema"]["name"]
        if name == "TopicShift":
            return topic_reply
        return {
            "title": "A conversation segment summarised by the scripted model",
            "summary": "The user and the assistant talked.",
        }

    return route


@pytest.fixture
def dual_channel(settings):
    saved = (settings.detector, settings.surprise_threshold)
    settings.detector = "dual_channel"
    settings.surprise_threshold = -1.0  # keep the surprise channel out of the way: exercise the topic channel
    yield
    settings.detector, settings.surprise_threshold = saved


def test_pipeline_llm_confirms_a_topic_shift(worker, producer, db, tenant, scripted_llm, dual_channel):
    scripted_llm.default = _router(SHIFT)
    producer.add_messages([{"role": r, "content": c} for r, c in CONVERSATION], conversation_id="shift")
    producer.flush("shift")
    producer.wait_idle("shift", timeout=60)
    episodes = list_episodes(db, tenant, "shift")
    topic_requests = [r for r in scripted_llm.requests if r["response_format"]["json_schema"]["name"] == "TopicShift"]
    assert topic_requests, "the topic channel never asked the LLM"
    first = episodes[0]
    assert (first.boundary_reason, first.boundary_source) == ("topic_shift", "llm")
    assert all(e.summary_source == "llm" for e in episodes)
    assert sum(e.message_count for e in episodes) == len(CONVERSATION)
    # The next episode's summariser sees the previous segment's tail as context only (agent-memory).
    summaries = [
        r["messages"][1]["content"]
        for r in scripted_llm.requests
        if r["response_format"]["json_schema"]["name"] != "TopicShift"
    ]
    assert any("CONTEXT [" in s and "sourdough" in s.split("\n")[0] for s in summaries)


def test_pipeline_llm_says_same_event_and_updates_the_event_model(
    worker, producer, db, tenant, scripted_llm, dual_channel, settings
):
    scripted_llm.default = _router(NO_SHIFT)
    producer.add_messages([{"role": r, "content": c} for r, c in CONVERSATION], conversation_id="same")
    wait_until(lambda: not producer.status("same").inbox, 30, message="the inbox was not drained")
    from memq.worker.segmentation.event_state import EventState

    raw = producer.redis.hget(producer.keys("same").state, "event")
    assert EventState.from_json(raw).event_model == NO_SHIFT["updated_event_model"]
    producer.flush("same")
    producer.wait_idle("same", timeout=60)
    (episode,) = list_episodes(db, tenant, "same")
    assert episode.message_count == len(CONVERSATION) and episode.boundary_reason == "flush"
