"""The lexical legs beyond one conversation (``memq/memory/retrieval/legs.py``,
``shared/db/lexical.py``), on real PostgreSQL: the full-text indexes hold the tenant, and
the message leg ranks messages holding two of the query's words before those holding one,
reading the latter only when too few hold two."""

from __future__ import annotations

from datetime import timedelta

import psycopg
import pytest
from test_retrieval import NOW, axis, other_tenant, write_episode

from memq.memory.retrieval import legs
from memq.memory.retrieval.request import build_request
from memq.shared.db.lexical import TENANT_QUERY, indexed_search

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("table", ["episode_message", "episodic_memory"])
def test_the_full_text_indexes_are_what_the_legs_match(db, table):
    """The legs' expression (``indexed_search``) is the one the migration indexed: a search
    by it and the tenant's lexeme is answered from the index (were they to drift apart,
    every wide search would read whole tables)."""
    with db.transaction():
        db.execute("SET LOCAL enable_seqscan = off")
        plan = "\n".join(
            r[0]
            for r in db.execute(
                f"EXPLAIN SELECT 1 FROM {table} t WHERE {indexed_search('t')} @@ "
                f"(to_tsquery('simple', 'garden') && {TENANT_QUERY})",
                {"tenant": "any-tenant"},
            )
        )
    assert f"Bitmap Index Scan on {table}_search_gin" in plan, plan


def _lexical_ranks(
    db, settings, request, candidates: int, pairs_enough: int | None = None
) -> dict[tuple[str, int], int]:
    """(episode id, seq) -> rank in the message lexical leg."""
    found = legs.run_legs(
        db,
        request,
        axis(7),
        ("message_lexical",),
        candidates,
        settings.hnsw_ef_search,
        query_text=request.query,
        pairs_enough=pairs_enough,
    )
    return {(e, seq): r["lexical"] for e, per_seq in found.messages.items() for seq, r in per_seq.items()}


def test_a_wide_search_ranks_two_of_the_words_before_one(db, settings, tenant):
    """Tenant-wide, the message holding both of the query's words comes first even where
    messages holding one of them, many times over and shorter, would rank higher by cover
    density alone; those come next while fewer than k (or MEMQ_LEXICAL_PAIRS_ENOUGH) rows
    hold two words, and not at all once they do. Another tenant's messages holding both
    words are never read into it."""
    start = NOW - timedelta(days=3)
    both = write_episode(
        db,
        settings,
        tenant,
        "c-both",
        title="Plans",
        summary="Weekend plans.",
        vector=axis(1),
        messages=[
            ("user", "We talked for a long while about many things and then the tomatoes in the garden", axis(1)),
            ("assistant", "Nothing to do with it.", axis(2)),
        ],
        start=start,
    )
    one = write_episode(
        db,
        settings,
        tenant,
        "c-one",
        title="Chat",
        summary="Small talk.",
        vector=axis(3),
        messages=[("user", "garden garden garden", axis(3)), ("user", "tomatoes, tomatoes", axis(4))],
        start=start,
    )
    elsewhere = other_tenant()
    write_episode(
        db,
        settings,
        elsewhere,
        "c-x",
        title="Other",
        summary="Other.",
        vector=axis(1),
        messages=[("user", "garden tomatoes", axis(1))],
        start=start,
    )
    request = build_request(settings, tenant=tenant, query="garden tomatoes", now=NOW)
    ranks = _lexical_ranks(db, settings, request, candidates=10)
    assert ranks == {(both, 1): 1, (one, 1): 2, (one, 2): 3}, ranks
    assert _lexical_ranks(db, settings, request, candidates=1) == {(both, 1): 1}
    # the one-word rows only while fewer than MEMQ_LEXICAL_PAIRS_ENOUGH rows hold two words
    assert _lexical_ranks(db, settings, request, candidates=10, pairs_enough=2) == ranks
    assert _lexical_ranks(db, settings, request, candidates=10, pairs_enough=1) == {(both, 1): 1}

    # one word: every message holding it, as before
    single = build_request(settings, tenant=tenant, query="tomatoes", now=NOW)
    assert set(_lexical_ranks(db, settings, single, candidates=10)) == {(both, 1), (one, 2)}

    # two conversations named: the same tiers
    two = build_request(settings, tenant=tenant, query="garden tomatoes", conversation_ids=["c-both", "c-one"], now=NOW)
    assert _lexical_ranks(db, settings, two, candidates=10)[(both, 1)] == 1

    # one conversation: read row by row and ranked by cover density alone (the repeated word wins)
    one_conv = build_request(settings, tenant=tenant, query="garden tomatoes", conversation_id="c-one", now=NOW)
    assert _lexical_ranks(db, settings, one_conv, candidates=10) == {(one, 1): 1, (one, 2): 2}


@pytest.mark.parametrize("conversation", [None, "c-messages"])
def test_the_episode_leg_finds_an_episode_by_its_messages_words_below_its_title_and_summary(
    db, settings, tenant, conversation
):
    """An episode's search holds its messages' content too (migration 0016), weighted below
    its title and summary: the episode lexical leg finds it by a word only a message holds,
    in one conversation and tenant-wide, and ranks an episode whose title says the word
    first. Words of two messages are not adjacent in it."""
    start = NOW - timedelta(days=2)
    by_message = write_episode(
        db,
        settings,
        tenant,
        "c-messages",
        title="Weekend",
        summary="Plans for the weekend.",
        vector=axis(1),
        messages=[("user", "I finally repotted the monstera", axis(1)), ("assistant", "Survived the move?", axis(2))],
        start=start,
    )
    by_title = write_episode(
        db,
        settings,
        tenant,
        "c-messages",
        title="Monstera",
        summary="A plant.",
        vector=axis(3),
        messages=[("user", "It has three new leaves", axis(3))],
        start=start + timedelta(hours=1),
    )
    request = build_request(settings, tenant=tenant, query="monstera", conversation_id=conversation, now=NOW)
    found = legs.run_legs(
        db, request, axis(7), ("episode_lexical",), 10, settings.hnsw_ef_search, query_text="monstera"
    )
    assert found.episodes["episode_lexical"] == [by_title, by_message]
    adjacent = db.execute(
        "SELECT search @@ to_tsquery('english', 'monstera <-> survived') FROM episodic_memory WHERE id = %s",
        (by_message,),
    ).fetchone()[0]
    assert adjacent is False


def _one_message(db, settings, tenant: str, text: str) -> str:
    """An episode of one message in conversation c-1; its id."""
    return write_episode(
        db,
        settings,
        tenant,
        "c-1",
        title="Plans",
        summary="Weekend plans.",
        vector=axis(1),
        messages=[("user", text, axis(1))],
        start=NOW - timedelta(days=1),
    )


def test_under_row_level_security_a_wide_search_reads_through_the_views(db, tenant_db, settings, tenant):
    """A connection scoped to a tenant reads the lexical legs of a wide scope through the
    search views, whose conditions can reach the full-text index (through the tables, under
    the policy, they cannot: ``@@`` is not leakproof, so the whole tenant would be read);
    the owner reads the tables; both find the same by words."""
    found = _one_message(db, settings, tenant, "the tomatoes in the garden are ripe")
    request = build_request(settings, tenant=tenant, query="garden tomatoes", now=NOW)
    sql = legs.legs_sql(request, ("message_lexical", "episode_lexical"), views=True)
    assert "memq_message_search" in sql and "memq_episode_search" in sql
    # which index the planner takes for a one-message tenant is its choice (the tenant's
    # btree, rightly); the bench measures the index at work (docs/benchmarks.md)
    with tenant_db.transaction():
        assert legs.set_search_options(tenant_db, settings.hnsw_ef_search, "force_custom_plan") is True
    with db.transaction():  # the owner is not under the policies: the tables
        assert legs.set_search_options(db, settings.hnsw_ef_search) is False

    for conn in (tenant_db, db):
        ranks = _lexical_ranks(conn, settings, request, candidates=10)
        assert ranks == {(found, 1): 1}


def test_the_search_views_hold_the_scoped_tenants_rows_only_and_are_read_only(db, tenant_db, settings, tenant):
    """The views filter by the policy's own condition: scoped to a tenant they show its rows
    and no other's; with no tenant set, nothing. The application role may only read them."""
    from memq.shared.connections import pg_connect

    for t in (tenant, other_tenant()):
        _one_message(db, settings, t, "garden")
    for view in ("memq_message_search", "memq_episode_search"):
        assert {r[0] for r in tenant_db.execute(f"SELECT DISTINCT tenant_id FROM {view}")} == {tenant}
        with pg_connect(settings, tenant=None, autocommit=True) as unscoped:
            assert unscoped.execute(f"SELECT count(*) FROM {view}").fetchone() == (0,)
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            tenant_db.execute(f"DELETE FROM {view} WHERE tenant_id = %s", (tenant,))


def test_a_wide_retrieval_reads_the_rows_of_the_episodes_it_will_score_only(db, settings, tenant):
    """Beyond one conversation the statement reads the rows of the best ``n`` episodes by
    Reciprocal Rank Fusion (and any tied with the last), the ones retrieval goes on to
    score: ``fusion.rrf`` on the legs' ranks picks the same."""
    from memq.memory.retrieval.fusion import rrf

    for i in range(6):
        write_episode(
            db,
            settings,
            tenant,
            f"c-{i % 2}",
            title=f"Episode {i}",
            summary="About the garden." if i % 3 else "About the weather.",
            vector=axis(i),
            messages=[("user", "garden tomatoes" if i % 2 else "rain all day", axis(i))],
            start=NOW - timedelta(days=10 - i),
        )
    request = build_request(settings, tenant=tenant, query="garden tomatoes", now=NOW)
    query = axis(0) + 0.5 * axis(1) + 0.25 * axis(2)
    for n in (1, 2, 4, 100):
        found = legs.run_legs(db, request, query, settings.legs, 10, settings.hnsw_ef_search, full=True, fuse=(60.0, n))
        ranked = rrf(found.episodes, 60.0)
        last = ranked[min(n, len(ranked)) - 1].score
        assert set(found.hits) == {f.id for f in ranked if f.score >= last - 1e-12}, n
    assert len(ranked) == 6
    # of those, only the ones re-ranking could still lift into the ``returned`` best: a
    # score below the returned-th best times ``keep`` (the least re-ranking multiplies by
    # over the most) is not read, nor are its episode's messages
    sizes: dict[tuple[int, float], int] = {}
    for returned, keep in ((1, 0.9), (2, 0.9), (2, 0.5), (3, 0.0)):
        found = legs.run_legs(
            db,
            request,
            query,
            settings.legs,
            10,
            settings.hnsw_ef_search,
            full=True,
            fuse=(60.0, 100),
            returned=(returned, keep),
        )
        ranked = rrf(found.episodes, 60.0)
        bar = ranked[returned - 1].score * keep
        kept = {f.id for f in ranked if f.score >= bar - 1e-12}
        assert set(found.hits) == kept, (returned, keep)
        assert set(found.shown) <= kept, (returned, keep)
        sizes[(returned, keep)] = len(kept)
    assert sizes[(1, 0.9)] < sizes[(2, 0.5)] <= sizes[(3, 0.0)] == 6, sizes


def test_the_rerank_reach_bounds_what_re_ranking_can_do(settings):
    """``rerank_reach``: the least re-ranking multiplies a kept episode's score by, over
    the most: the time boost in [1, MEMQ_TIME_BOOST] when the query names a time, else 1.
    FSRS decay, whatever its influence, decides nothing of what is kept (``rerank``)."""
    from memq.memory.retrieval.service import rerank_reach
    from memq.memory.retrieval.time_expressions import find_time

    named = find_time("what did we do last week?", NOW)
    assert named is not None
    base = settings.model_copy(update={"retrievability_influence": 0.1, "retrievability_weight": 1.0})
    assert rerank_reach(base, None) == 1.0
    assert rerank_reach(base.model_copy(update={"time_boost": 1.5}), named) == pytest.approx(1 / 1.5)
    assert rerank_reach(base.model_copy(update={"retrievability_influence": 1.0}), None) == 1.0


@pytest.mark.parametrize("conversation", [None, "c-lessons"])
def test_words_most_of_the_scope_holds_are_left_out_of_the_lexical_legs(db, settings, tenant, conversation):
    """BM25's inverse document frequency, as a cut (``common_words.py``): "time" and
    "lesson" are in twelve of the thirteen messages, so the lexical legs search "pottery"
    alone and the one message holding it ranks first. Searching every word, the twelve
    messages holding two of them fill the wide leg's first tier and the pottery message is
    never read (one conversation: ranked below them by cover density)."""
    from memq.memory.retrieval.service import lexical_text

    start = NOW - timedelta(days=2)
    lessons = [("user", f"lesson time again, lesson {i} of the time I have", axis(10 + i)) for i in range(12)]
    pottery = ("user", "I signed up for pottery on Thursdays", axis(30))
    episode = write_episode(
        db,
        settings,
        tenant,
        "c-lessons",
        title="Weekly plan",
        summary="Plans.",
        vector=axis(9),
        messages=[*lessons, pottery],
        start=start,
    )
    request = build_request(
        settings, tenant=tenant, query="what time is my pottery lesson", conversation_id=conversation, now=NOW
    )
    counted, total = legs.word_counts(db, request, request.query.split(), settings.lexical_common_max_messages)
    assert total == 13
    assert {word: counts for word, _, counts in counted} == {
        "what": (),
        "time": (12,),
        "is": (),
        "my": (),
        "pottery": (1,),
        "lesson": (12,),
    }
    assert legs.word_counts(db, request, ["pottery"], 12)[0] == [("pottery", ("potteri",), None)]  # too large
    searched = lexical_text(db, request, request.query, settings)
    assert searched == "what is my pottery"
    ranks = legs.run_legs(
        db, request, axis(7), ("message_lexical",), 10, settings.hnsw_ef_search, query_text=searched
    ).messages
    assert ranks[episode][13]["lexical"] == 1

    everything = legs.run_legs(
        db, request, axis(7), ("message_lexical",), 10, settings.hnsw_ef_search, query_text=request.query
    ).messages
    assert everything[episode].get(13, {}).get("lexical", 99) > 10
    assert lexical_text(db, request, request.query, settings.model_copy(update={"lexical_common_share": 0.0})) == (
        request.query
    )
