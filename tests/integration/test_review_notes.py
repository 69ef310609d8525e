"""The review-notes writer on real PostgreSQL: what retrievals returned reaches
``pending_review`` off the request path, in batches, survives PostgreSQL being away,
and skips a memory forgotten before its note was written."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest
from stored import open_reviews
from test_retrieval import axis, fixed, write_episode

from memq.memory.retrieval.service import retrieve_memory
from memq.shared.db.reviews import Retrieved, ReviewNote
from memq.shared.review_notes import ReviewNotes

pytestmark = pytest.mark.integration

NOW = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)


@pytest.fixture
def episodes(db, settings, tenant) -> list[str]:
    v = axis(120)
    return [
        write_episode(
            db,
            settings,
            tenant,
            "notes",
            title=f"Sourdough attempt {i}",
            summary="Baking bread.",
            vector=v,
            start=NOW - timedelta(days=1 + i),
            messages=[("user", "The starter finally bubbled.", v)],
        )
        for i in range(3)
    ]


def note(tenant: str, memory_ids: list[str], query: str = "sourdough", asked_in: str | None = None) -> ReviewNote:
    return ReviewNote(
        tenant, query, NOW, tuple(Retrieved("notes", m, i + 1, 0.5) for i, m in enumerate(memory_ids)), asked_in
    )


def test_a_burst_of_notes_is_written_together(db, settings, tenant, episodes):
    writer = ReviewNotes(settings.model_copy(update={"review_notes_linger_ms": 200.0}))
    try:
        for i in range(20):
            writer.add(note(tenant, episodes, query=f"bread {i}", asked_in="chat"))
        assert writer.flush(10)
        rows = open_reviews(db, tenant, "chat")
        assert len(rows) == 60 and {r[1] for r in rows} == {f"bread {i}" for i in range(20)}
        assert writer.batches <= 3, "twenty notes within the linger went in a few statements, not twenty"
    finally:
        writer.close()


def test_a_memory_forgotten_before_its_note_is_written_is_skipped(db, settings, tenant, episodes):
    writer = ReviewNotes(settings)
    try:
        db.execute("DELETE FROM episode_message WHERE episode_id = %s", (episodes[0],))
        db.execute("DELETE FROM episodic_memory WHERE id = %s", (episodes[0],))
        writer.add(note(tenant, episodes))
        writer.add(note(tenant, [str(uuid.uuid4())]))  # never existed
        assert writer.flush(10)
        assert sorted(r[0] for r in open_reviews(db, tenant)) == sorted(episodes[1:])
        assert writer.dropped == 0
    finally:
        writer.close()


def test_notes_wait_while_postgresql_is_away_and_are_written_when_it_is_back(db, settings, tenant, episodes):
    away = settings.model_copy(update={"database_url": "postgresql://memq@127.0.0.1:9/memq"})  # nothing listens
    writer = ReviewNotes(away)
    try:
        writer.add(note(tenant, episodes))
        assert not writer.flush(0.5), "nothing can be written while PostgreSQL is away"
        assert open_reviews(db, tenant) == []
        writer._settings = settings  # PostgreSQL is back
        assert writer.flush(15)
        assert len(open_reviews(db, tenant)) == 3 and writer.dropped == 0
    finally:
        writer.close()


def test_past_the_queue_limit_notes_are_dropped_and_counted(db, settings, tenant, episodes):
    away = settings.model_copy(
        update={"database_url": "postgresql://memq@127.0.0.1:9/memq", "review_notes_queue_max": 2}
    )
    writer = ReviewNotes(away)
    try:
        for _ in range(5):
            writer.add(note(tenant, episodes[:1]))
        assert writer.dropped == 3
        writer._settings = settings.model_copy(update={"review_notes_queue_max": 2})
        assert writer.flush(15)
        assert len(open_reviews(db, tenant)) == 2
    finally:
        writer.close()


def test_retrieval_hands_its_note_to_the_writer_and_returns(db, settings, tenant, episodes):
    from memq.shared.review_notes import flush_review_notes

    result = retrieve_memory(
        "sourdough starter", tenant=tenant, embed=fixed(axis(120)), settings=settings, conn=db, now=NOW, asked_in="chat"
    )
    assert result.reviews_recorded == 3
    assert flush_review_notes()
    assert sorted(r[0] for r in open_reviews(db, tenant, "chat")) == sorted(episodes)
