"""Episode titles and summaries through litellm's real HTTP path against a scripted
OpenAI-compatible server on 127.0.0.1, and the extractive fallback when it fails."""

from __future__ import annotations

import json

import numpy as np
import pytest

from memq.shared.db.episodes import list_episodes
from memq.shared.embeddings import episode_vector, get_embedder
from memq_lab.testing.scripted_llm import Reply

MESSAGES = [
    {"role": "user", "content": "My sourdough came out flat again, the starter is five days old."},
    {"role": "assistant", "content": "A five-day-old starter is often too weak; feed it twice a day for another week."},
    {"role": "user", "content": "OK, and should I change the hydration of the dough?"},
    {"role": "assistant", "content": "Drop from 80% to 70% hydration until the starter doubles reliably."},
]
GOOD = {
    "title": "Fixing a flat sourdough with a young starter",
    "summary": (
        "The user asked why their sourdough was flat. "
        "The assistant advised feeding the starter longer and lowering hydration to 70%."
    ),
}


@pytest.fixture(autouse=True)
def one_episode(settings):
    """Rule-layer segmentation only: these four messages stay one episode."""
    saved = settings.detector
    settings.detector = "rules"
    yield
    settings.detector = saved


def _run(producer, conv):
    producer.add_messages(MESSAGES, conversation_id=conv)
    producer.flush(conv)
    producer.wait_idle(conv, timeout=60)


def _stored_vectors(db, episode_id):
    (episode,) = db.execute("SELECT embedding FROM episodic_memory WHERE id = %s", (episode_id,)).fetchone()
    messages = [
        m[0].to_numpy()
        for m in db.execute("SELECT embedding FROM episode_message WHERE episode_id = %s ORDER BY seq", (episode_id,))
    ]
    return episode.to_numpy(), np.stack(messages)


def test_llm_title_and_summary_with_json_schema(worker, producer, db, tenant, scripted_llm, settings):
    scripted_llm.push(GOOD)
    _run(producer, "llm-ok")
    (e,) = list_episodes(db, tenant, "llm-ok")
    assert (e.title, e.summary, e.summary_source) == (GOOD["title"], GOOD["summary"], "llm")
    model = db.execute("SELECT summary_model FROM episodic_memory WHERE tenant_id = %s", (tenant,)).fetchone()[0]
    assert model == "openai/scripted"
    (request,) = scripted_llm.requests
    assert request["response_format"]["type"] == "json_schema"
    assert set(request["response_format"]["json_schema"]["schema"]["properties"]) == {"title", "summary"}
    assert "My sourdough came out flat" in request["messages"][1]["content"]
    # an LLM's summary says the episode in new words: its embedding is blended in
    stored, messages = _stored_vectors(db, e.id)
    summary = get_embedder(settings).embed([GOOD["summary"]])[0]
    assert np.allclose(stored, episode_vector(summary, messages, settings.episode_summary_weight), atol=1e-5)
    assert not np.allclose(stored, episode_vector(None, messages, 0.0), atol=1e-3)


def test_retry_after_503_then_success(worker, producer, db, tenant, scripted_llm):
    scripted_llm.push(Reply(status=503, content="overloaded"), GOOD)
    _run(producer, "llm-retry")
    (e,) = list_episodes(db, tenant, "llm-retry")
    assert e.summary_source == "llm" and scripted_llm.request_count == 2


def test_malformed_json_then_timeout_falls_back_to_extractive(worker, producer, db, tenant, scripted_llm, settings):
    # MEMQ_LLM_MAX_RETRIES=1 and a 2 s timeout in tests: two bad answers exhaust it.
    scripted_llm.push(Reply(body="{not json"), Reply(delay=5, content=json.dumps(GOOD)))
    _run(producer, "llm-bad")
    (e,) = list_episodes(db, tenant, "llm-bad")
    assert e.summary_source == "extractive"
    error = db.execute("SELECT summary_error FROM episodic_memory WHERE tenant_id = %s", (tenant,)).fetchone()[0]
    assert "episode_summary" in error
    # an extractive summary quotes the messages: the episode's vector is their mean alone
    stored, messages = _stored_vectors(db, e.id)
    assert np.allclose(stored, episode_vector(None, messages, settings.episode_summary_weight), atol=1e-5)


def test_title_outside_5_to_15_words_is_refused_then_retried(worker, producer, db, tenant, scripted_llm):
    scripted_llm.push({"title": "Sourdough", "summary": "Too short a title."}, GOOD)
    _run(producer, "llm-short")
    (e,) = list_episodes(db, tenant, "llm-short")
    assert e.title == GOOD["title"] and scripted_llm.request_count == 2


def test_rate_limited_until_retries_run_out_falls_back(worker, producer, db, tenant, scripted_llm):
    scripted_llm.default = Reply(status=429, content="slow down", headers={"retry-after-ms": "1"})
    _run(producer, "llm-429")
    (e,) = list_episodes(db, tenant, "llm-429")
    assert e.summary_source == "extractive" and scripted_llm.request_count == 2
