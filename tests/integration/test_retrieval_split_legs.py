"""Beyond one conversation the legs are shared between the connection and a second one,
each leg a statement of its own at its own HNSW breadth (``legs.run_legs`` with a
``spare``; ``MEMQ_RETRIEVAL_SPLIT_LEGS``), on real PostgreSQL under row-level security:
the same rows as one statement, and one statement still whenever the spare is not there
or not needed."""

from __future__ import annotations

import contextlib
from dataclasses import asdict
from datetime import timedelta

import pytest
from test_retrieval import NOW, axis, blend, other_tenant, write_episode

from memq.memory.retrieval import legs
from memq.memory.retrieval.request import build_request
from memq.memory.retrieval.service import retrieve_memory
from memq.shared.connections import pg_connect

pytestmark = pytest.mark.integration

WORDS = ("garden tomatoes", "rain all day", "the garden in the rain", "tomatoes for dinner", "a long walk")


def _tenant_of_several_conversations(db, settings, tenant: str) -> None:
    for i in range(12):
        write_episode(
            db,
            settings,
            tenant,
            f"c-{i % 4}",
            title=f"Episode {i}",
            summary=f"About {WORDS[i % len(WORDS)]}.",
            vector=blend((axis(i % 6), 1.0), (axis(6 + i % 5), 0.5)),
            messages=[
                ("user", WORDS[(i + j) % len(WORDS)], blend((axis((i + j) % 9), 1.0), (axis(9 + j), 0.3)))
                for j in range(3)
            ],
            start=NOW - timedelta(days=30 - i),
        )
    # another tenant holding the same words and vectors is never read into either run
    write_episode(
        db,
        settings,
        other_tenant(),
        "c-0",
        title="Garden",
        summary="About garden tomatoes.",
        vector=axis(0),
        messages=[("user", "garden tomatoes", axis(0))],
        start=NOW - timedelta(days=2),
    )


@pytest.fixture
def spare_db(settings, tenant):
    """A second connection scoped to the test's tenant, as the API's pool hands one over."""
    with pg_connect(settings, tenant=tenant, autocommit=True) as conn:
        yield conn


@pytest.mark.parametrize(
    ("full", "fused", "returned"),
    [(True, 5, None), (True, 8, (2, 0.9)), (True, 100, (1, 1.0)), (True, 3, (3, 0.5)), (False, 5, None)],
)
def test_split_legs_find_what_one_statement_finds(db, tenant_db, spare_db, settings, tenant, full, fused, returned):
    """Split, the episodes retrieval can return are chosen in Python (``fusion.kept``), in
    one statement by SQL (``legs._KEPT``): the same ones, whatever the cut."""
    _tenant_of_several_conversations(db, settings, tenant)
    query = blend((axis(0), 1.0), (axis(7), 0.4), (axis(2), 0.2))
    handed: list[int] = []

    def spare() -> contextlib.AbstractContextManager:
        handed.append(1)
        return contextlib.nullcontext(spare_db)

    for conversations in (None, ["c-0", "c-2"]):
        request = build_request(
            settings, tenant=tenant, query="garden tomatoes in the rain", conversation_ids=conversations, now=NOW
        )
        runs = [
            legs.run_legs(
                tenant_db,
                request,
                query,
                settings.legs,
                settings.retrieval_candidates,
                settings.hnsw_ef_search,
                full=full,
                fuse=(settings.rrf_k, fused) if full else None,
                facts=(10, 0.3) if full else None,
                returned=returned,
                spare=given,
                episode_ef_search=settings.hnsw_ef_search_episodes,
            )
            for given in (None, spare)
        ]
        one, split = (asdict(r) for r in runs)
        assert not runs[0].split and runs[1].split
        one.pop("split"), split.pop("split")
        assert one == split
        assert runs[0].episodes["episode_lexical"] and runs[0].episodes["message_vector"]
        if full:
            assert runs[0].hits and runs[0].shown
    assert len(handed) == 2


def test_retrieval_splits_its_legs_only_where_it_helps_and_a_spare_is_there(db, tenant_db, spare_db, settings, tenant):
    """One conversation: one statement, the spare never asked for. No spare free (None):
    one statement. Either way the same answer as with the split."""
    _tenant_of_several_conversations(db, settings, tenant)
    asked: list[str] = []

    def spare(conn):
        def give() -> contextlib.AbstractContextManager:
            asked.append("asked")
            return contextlib.nullcontext(conn)

        return give

    def answer(conversation_id, given):
        return retrieve_memory(
            "garden tomatoes",
            tenant=tenant,
            conversation_id=conversation_id,
            now=NOW,
            settings=settings,
            conn=tenant_db,
            embed=lambda _: axis(0),
            record=False,
            spare=given,
        )

    one = answer("c-0", spare(spare_db))
    assert asked == [] and one.hits
    texts = {answer(None, given).text for given in (spare(spare_db), spare(None), None)}
    assert asked == ["asked", "asked"]
    assert len(texts) == 1 and texts != {""}


def test_split_legs_that_find_nothing_answer_as_one_statement(tenant_db, spare_db, settings):
    """A tenant with nothing stored: the legs hand over no row at all, and what follows
    them still runs and finds nothing."""
    request = build_request(settings, tenant="no-such-tenant", query="garden tomatoes", now=NOW)
    runs = [
        legs.run_legs(
            tenant_db,
            request,
            axis(0),
            settings.legs,
            settings.retrieval_candidates,
            settings.hnsw_ef_search,
            full=True,
            fuse=(settings.rrf_k, 5),
            facts=(10, 0.3),
            spare=given,
        )
        for given in (None, lambda: contextlib.nullcontext(spare_db))
    ]
    assert runs[1].split and not runs[0].split
    for found in runs:
        assert not any(found.episodes.values()) and not found.hits and not found.shown and not found.facts
