"""Every LLM stage reads answers as real models give them (a fence, prose around the JSON,
an enum in another case, an optional field left out), through litellm's real request path
to the scripted server; each such answer is counted as repaired
(memq_llm_calls_total{outcome="repaired"}) and logged with its repairs."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from prometheus_client import REGISTRY

pytestmark = pytest.mark.integration

NOW = datetime(2026, 5, 4, 9, 0, tzinfo=UTC)


def repaired(stage: str) -> float:
    return REGISTRY.get_sample_value("memq_llm_calls_total", {"stage": stage, "outcome": "repaired"}) or 0.0


def test_episode_titles_read_from_prose_around_a_fenced_answer(scripted_llm, settings):
    from memq.worker.episodes.llm_summary import llm_title_and_summary

    before = repaired("episode_summary")
    answer = {"title": "Ana plans a spring garden with roses", "summary": "Ana and Ben plan the garden."}
    scripted_llm.push("Here is the summary:\n```json\n" + json.dumps(answer) + "\n```\nHope this helps!")
    said = [{"role": "user", "content": "Roses along the fence?", "timestamp": NOW.isoformat()}]
    title, summary, _ = llm_title_and_summary(settings, said, [], [])
    assert (title, summary) == (answer["title"], answer["summary"])
    assert repaired("episode_summary") == before + 1


def test_review_ratings_in_capitals_without_reasons(scripted_llm, settings):
    from memq.worker.review.fsrs_update import RATINGS
    from memq.worker.review.llm_rating import Reviewed, llm_ratings

    scripted_llm.push('{"ratings": [{"memory": 1, "rating": "GOOD"}, {"memory": 2, "rating": "Again"}]}')
    memories = [Reviewed(1, "Garden", "Roses.", ("roses",)), Reviewed(2, "Train", "The 9:40.", ("train",))]
    ratings, _ = llm_ratings(settings, ["user: the roses are in"], memories)
    assert ratings == {1: (RATINGS["good"], ""), 2: (RATINGS["again"], "")}


def test_the_topic_shift_check_with_a_sentence_before_its_json(scripted_llm, settings):
    from memq.shared.mailbox.codec import QueuedMessage
    from memq.worker.segmentation.detectors.topic_shift_llm import llm_topic_shift

    answer = {
        "is_boundary": True,
        "confidence": 0.8,
        "signals": {"topic_shift": 0.9, "intent_shift": 0.4, "temporal_marker": 0.0},
        "updated_event_model": "planning a train trip",
    }
    scripted_llm.push("The new message changes the subject. " + json.dumps(answer))
    new = QueuedMessage(None, "m2", "user", "Different topic: the train to Porto.", NOW, NOW, NOW)
    shift = llm_topic_shift(settings, "a garden", [], new)
    assert shift.is_boundary and shift.updated_event_model == "planning a train trip"


def test_consolidation_actions_with_enums_in_another_case(scripted_llm, settings):
    from memq.shared.llm import complete_json
    from memq.worker.consolidation.actions import Shown, answer_model, plan

    shown = Shown(episodes=(("00000000-0000-0000-0000-000000000001", NOW),), facts=())
    action = '{"action": "NEW", "episode": 1, "fact": "Ana lives in Porto.", "category": "Identity"}'
    scripted_llm.push('```\n{"actions": [' + action + "]}\n```")
    result = complete_json(settings, [{"role": "user", "content": "E1: ..."}], answer_model(shown), purpose="test")
    steps = plan(result.value, shown).steps
    assert [(s.kind, s.fact, s.category) for s in steps] == [("new", "Ana lives in Porto.", "identity")]


def test_an_answer_that_cannot_be_read_is_retried_then_given_up(scripted_llm, settings):
    from memq.shared.llm import LLMError
    from memq.worker.episodes.llm_summary import llm_title_and_summary

    failed = REGISTRY.get_sample_value("memq_llm_calls_total", {"stage": "episode_summary", "outcome": "failed"}) or 0
    scripted_llm.default = "I am sorry, I cannot summarise this conversation."
    with pytest.raises(LLMError, match="malformed output"):
        llm_title_and_summary(settings, [{"role": "user", "content": "x y z", "timestamp": NOW.isoformat()}], [], [])
    assert len(scripted_llm.requests) == settings.llm_max_retries + 1
    after = REGISTRY.get_sample_value("memq_llm_calls_total", {"stage": "episode_summary", "outcome": "failed"})
    assert after == failed + 1
