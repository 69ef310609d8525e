"""End to end on real Redis, PostgreSQL and a real Celery worker."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from invariants import assert_every_message_in_exactly_one_episode

from memq.shared.db.episodes import list_episodes

SAMPLE = Path(__file__).resolve().parents[2] / "producer" / "samples" / "demo_conversation.jsonl"


def _sample() -> list[dict]:
    return [json.loads(line) for line in SAMPLE.read_text().splitlines() if line.strip()]


def test_sample_conversation_becomes_episodes_and_conserves_every_message(worker, producer, db, settings, tenant):
    messages = _sample()
    results = producer.add_messages(messages)
    assert all(r.status == "accepted" for r in results) and len(results) == len(messages)
    assert producer.flush("demo-alex")
    producer.wait_idle("demo-alex", timeout=120)

    assert_every_message_in_exactly_one_episode(db, producer.redis, settings, tenant, "demo-alex", len(messages))
    episodes = list_episodes(db, tenant, "demo-alex")
    # Every gap over 15 minutes starts an episode at its message, unless that message
    # was the 50th of a full buffer (force-create comes first in Plast Mem's rules).
    gap_starts = [
        i + 1
        for i in range(1, len(messages))
        if datetime.fromisoformat(messages[i]["timestamp"].replace("Z", "+00:00"))
        - datetime.fromisoformat(messages[i - 1]["timestamp"].replace("Z", "+00:00"))
        > timedelta(minutes=15)
    ]
    assert len(gap_starts) >= 4
    for g in gap_starts:
        (e,) = [e for e in episodes if e.first_seq <= g <= e.last_seq]
        assert e.first_seq == g or (e.boundary_reason == "force_create" and e.last_seq == g), (g, e)
    assert all(e.message_count <= settings.max_messages for e in episodes)
    assert episodes[-1].last_seq == len(messages)
    for e in episodes:
        words = len(e.title.split())
        assert settings.extractive_title_min_words <= words <= settings.extractive_title_max_words, e.title
        assert e.summary_source == "extractive"
        assert f": {e.message_count} message" in e.summary.split(".")[0]  # who, when: how many
        assert 0.0 <= e.surprise <= 1.0
        assert e.stability == pytest.approx(2.3065 * (1 + 0.5 * e.surprise), rel=1e-3)  # FSRS-6 Good, surprise boost
    tool_episodes = [e for e in episodes if e.tools_used]
    assert {t for e in tool_episodes for t in e.tools_used} == {"web_search", "calculator", "calendar"}


def test_episode_row_holds_messages_embedding_and_fsrs_card(worker, producer, db, tenant):
    t0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
    conv = "row-check"
    texts = [
        "I want to plan a weekend hike in the Alps near Garmisch.",
        "Sure. How long should the hike be, and what is your fitness level?",
        "About six hours, I am fairly fit and have hiked the Zugspitze before.",
        "Then the Alpspitze via the Nordwand-Steig could suit you; it needs a via ferrata set.",
    ]
    producer.add_messages(
        [
            {"role": "user" if i % 2 == 0 else "assistant", "content": t, "timestamp": t0 + timedelta(minutes=i)}
            for i, t in enumerate(texts)
        ],
        conversation_id=conv,
    )
    producer.flush(conv)
    producer.wait_idle(conv, timeout=60)
    row = db.execute(
        "SELECT messages, embedding, fsrs_card, start_at, end_at, summary_source, embedding_model, boundary_reason, "
        "vector_dims(embedding), search @@ plainto_tsquery('english', 'hike') "
        "FROM episodic_memory WHERE tenant_id = %s",
        (tenant,),
    ).fetchone()
    messages, embedding, card, start_at, end_at, source, model, reason, dims, matches = row
    assert [m["content"] for m in messages] == texts
    assert [m["seq"] for m in messages] == [1, 2, 3, 4]
    assert dims == 384 and abs(float((embedding.to_numpy() ** 2).sum()) - 1.0) < 1e-3
    assert card["state"] == 2 and card["stability"] > 0
    assert start_at == t0 and end_at == t0 + timedelta(minutes=3)
    assert source == "extractive" and model == "local/all-MiniLM-L6-v2" and reason == "flush"
    assert matches  # the full-text index covers title + summary


def test_episode_creation_is_idempotent_on_redelivery(worker, producer, db, settings, tenant, celery_app):
    """A second delivery of the same episode_creation task (as Redis redelivery or a
    retry would do) must not create a second episode."""
    from memq.shared import tasks
    from memq.shared.mailbox.scripts import Scripts
    from memq.worker.conversation_store import ConversationStore

    conv = "idem"
    producer.add_messages(
        [{"role": "user", "content": f"message number {i} about idempotency"} for i in range(5)], conversation_id=conv
    )
    producer.flush(conv)
    producer.wait_idle(conv, timeout=60)
    (episode_id,) = [r[0] for r in db.execute("SELECT id::text FROM episodic_memory WHERE tenant_id = %s", (tenant,))]

    # Put the segment back as if the first run had died after inserting, then redeliver.
    store = ConversationStore(producer.redis, Scripts.register(producer.redis), settings, tenant, conv)
    messages = db.execute("SELECT messages FROM episodic_memory WHERE id = %s", (episode_id,)).fetchone()[0]
    producer.redis.hset(
        store.keys.segments,
        episode_id,
        "0 "
        + json.dumps(
            {
                "episode_id": episode_id,
                "tenant": tenant,
                "conversation_id": conv,
                "messages": messages,
                "overlap": [],
                "reason": "flush",
                "surprise": 0.0,
                "detector": "rules",
                "source": "flush",
                "token_count": 0,
                "cut_at": 0,
            }
        ),
    )
    for _ in range(2):
        celery_app.send_task(tasks.EPISODE_CREATION, args=[tenant, conv, episode_id])
    producer.wait_idle(conv, timeout=60)
    assert db.execute("SELECT count(*) FROM episodic_memory WHERE tenant_id = %s", (tenant,)).fetchone()[0] == 1
