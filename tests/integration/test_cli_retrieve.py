"""``memq retrieve`` and ``memq recent`` through click's runner against the real database,
with episodes embedded by the real model (the commands embed the query with it too)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from click.testing import CliRunner
from stored import open_reviews
from test_retrieval import write_episode

from memq.cli import main
from memq.shared.tokens import count_tokens

pytestmark = pytest.mark.integration

EPISODES = {
    "paris": (
        "home",
        "Weekend in Paris",
        "They walked along the Seine and climbed the Eiffel Tower.",
        ["We climbed the Eiffel Tower at sunset.", "Then dinner by the Seine, it was lovely."],
        2,
    ),
    "taxes": (
        "home",
        "Filing the tax return",
        "Collecting receipts and payslips for the annual tax return.",
        ["Where are last year's payslips?", "In the blue folder with the receipts."],
        30,
    ),
    "bike": (
        "work",
        "Fixing a flat bicycle tyre",
        "Patching the inner tube of the bike's rear wheel.",
        ["The rear tyre is flat again.", "Use a patch kit on the inner tube."],
        5,
    ),
}


@pytest.fixture(scope="module")
def embedded(settings) -> dict[str, np.ndarray]:
    """Each episode's summary and message vectors, embedded once for the module."""
    from memq.shared.embeddings import get_embedder

    embedder = get_embedder(settings)
    return {key: embedder.embed([summary, *lines]) for key, (_, _, summary, lines, _) in EPISODES.items()}


@pytest.fixture
def stored(db, settings, tenant, embedded) -> dict[str, str]:
    """Three episodes in two conversations, ended 2 h, 30 h and 5 h before now."""
    now = datetime.now(UTC)
    ids = {}
    for key, (conv, title, summary, lines, hours_ago) in EPISODES.items():
        vectors = embedded[key]
        ids[key] = write_episode(
            db,
            settings,
            tenant,
            conv,
            title=title,
            summary=summary,
            vector=vectors[0],
            start=now - timedelta(hours=hours_ago, minutes=2),
            messages=[("user", lines[0], vectors[1]), ("assistant", lines[1], vectors[2])],
        )
    return ids


def run(tenant: str, *args: str):
    return CliRunner().invoke(main, [*args, "--tenant", tenant])


def memories(out) -> list[dict]:
    assert out.exit_code == 0, out.output
    return json.loads(out.stdout)["memories"]


def test_retrieve_prints_markdown(stored, tenant):
    out = run(tenant, "retrieve", "home", "climbing the Eiffel Tower", "--no-record")
    assert out.exit_code == 0, out.output
    assert "Weekend in Paris" in out.stdout and "Fixing a flat bicycle tyre" not in out.stdout
    assert "UTC (today)" in out.stdout or "UTC (yesterday)" in out.stdout
    assert "retrieved" not in out.stdout  # the library's log line, if any, is on stderr


def test_retrieve_json_has_every_score_and_keeps_the_budget(stored, tenant):
    out = run(tenant, "retrieve", "home", "climbing the Eiffel Tower", "--json", "--max-tokens", "120", "--no-record")
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert data["tenant"] == tenant and data["conversation_ids"] == ["home"] and data["max_tokens"] == 120
    assert data["memories"][0]["id"] == stored["paris"]
    assert {
        "vector_rank",
        "lexical_rank",
        "message_vector_rank",
        "message_lexical_rank",
        "rrf",
        "retrievability",
        "time_boost",
        "final",
    } <= set(data["memories"][0]["scores"])
    assert data["tokens"] == count_tokens(data["text"]) <= 120
    assert {m["id"] for m in data["memories"]} <= {stored["paris"], stored["taxes"]}


def test_scope_options(stored, tenant):
    only_home = {m["id"] for m in memories(run(tenant, "retrieve", "home", "tyre", "--json", "--no-record"))}
    assert stored["bike"] not in only_home
    everywhere = run(tenant, "retrieve", "home", "flat bicycle tyre", "--all-conversations", "--json", "--no-record")
    assert memories(everywhere)[0]["id"] == stored["bike"]
    both = run(tenant, "retrieve", "home", "flat bicycle tyre", "--conversation", "work", "--json", "--no-record")
    assert json.loads(both.stdout)["conversation_ids"] == ["home", "work"]
    assert memories(both)[0]["id"] == stored["bike"]
    clash = run(tenant, "retrieve", "home", "tyre", "--all-conversations", "--conversation", "work")
    assert clash.exit_code == 2 and "--all-conversations already searches every conversation" in clash.output


def test_detail_limit_and_time_window(stored, tenant):
    none = memories(run(tenant, "retrieve", "home", "Paris", "--detail", "none", "--json", "--no-record"))
    assert none and all(m["messages"] == [] for m in none)
    high = memories(run(tenant, "retrieve", "home", "Paris", "--detail", "high", "--json", "--no-record"))
    assert all(len(m["messages"]) == m["message_count"] for m in high)
    assert len(memories(run(tenant, "retrieve", "home", "Paris", "--limit", "1", "--json", "--no-record"))) == 1
    since = (datetime.now(UTC) - timedelta(hours=10)).isoformat()
    recent = memories(run(tenant, "retrieve", "home", "receipts", "--since", since, "--json", "--no-record"))
    assert {m["id"] for m in recent} == {stored["paris"]}  # the tax episode ended 30 h ago
    until = (datetime.now(UTC) - timedelta(hours=10)).isoformat()
    older = memories(run(tenant, "retrieve", "home", "receipts", "--until", until, "--json", "--no-record"))
    assert {m["id"] for m in older} == {stored["taxes"]}


@pytest.mark.parametrize(
    "args, says",
    [
        (["retrieve", "home", ""], "query: is empty"),
        (["retrieve", "home", "   "], "query: is empty"),
        (
            ["retrieve", "home", "Paris", "--since", "yesterday"],
            "time_range.start: 'yesterday' is not an ISO-8601 time",
        ),
        (["retrieve", "home", "Paris", "--since", "2025-01-01T00:00:00"], "timezone"),
        (["retrieve", "home", "Paris", "--max-tokens", "10"], "max_tokens: must be a whole number from 50"),
        (["retrieve", "home", "Paris", "--limit", "0"], "limit: must be a whole number from 1"),
        (["retrieve", "bad/conversation", "Paris"], "conversation_id:"),
        (["recent", "home", "--days", "0"], "days: must be a number of days above 0"),
    ],
)
def test_refused_input_is_a_usage_error(settings, tenant, args, says):
    out = run(tenant, *args)
    assert out.exit_code == 2 and says in out.output, out.output
    assert "Traceback" not in out.output


def test_an_oversized_query_is_refused(settings, tenant):
    out = run(tenant, "retrieve", "home", "x" * (settings.query_max_chars + 1))
    assert out.exit_code == 2 and f"at most {settings.query_max_chars}" in out.output


def test_retrieve_records_for_review_unless_no_record(db, stored, tenant):
    assert run(tenant, "retrieve", "home", "Paris", "--no-record").exit_code == 0
    assert open_reviews(db, tenant) == []
    assert run(tenant, "retrieve", "home", "Paris", "--limit", "1").exit_code == 0
    rows = open_reviews(db, tenant)
    assert [(r[0], r[1], r[2]) for r in rows] == [(stored["paris"], "Paris", 1)]


def test_recent_lists_the_newest_first(stored, tenant):
    out = run(tenant, "recent", "home", "--json")
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert [m["id"] for m in data["memories"]] == [stored["paris"], stored["taxes"]]
    assert data["tokens"] == count_tokens(data["text"])
    assert [m["id"] for m in memories(run(tenant, "recent", "home", "--days", "1", "--json"))] == [stored["paris"]]
    assert [m["id"] for m in memories(run(tenant, "recent", "home", "--limit", "1", "--json"))] == [stored["paris"]]
    text = run(tenant, "recent", "home").stdout
    assert text.index("Weekend in Paris") < text.index("Filing the tax return")
    empty = run(tenant, "recent", "nobody")
    assert empty.exit_code == 0 and "No memories in the last 7 days of nobody." in empty.stdout


def test_reindex_fills_missing_message_vectors_and_retrieval_finds_them_again(db, stored, tenant, settings):
    """Messages stored without a vector (before migration 0003) are skipped by the vector
    leg until ``memq reindex`` embeds them with the current ``indexed_text``."""
    from memq.shared.messages import indexed_text

    db.execute("UPDATE episode_message SET embedding = NULL WHERE tenant_id = %s", (tenant,))
    missing = db.execute(
        "SELECT count(*) FROM episode_message WHERE tenant_id = %s AND embedding IS NULL", (tenant,)
    ).fetchone()[0]
    assert missing == 6
    out = run(tenant, "reindex")
    assert out.exit_code == 0, out.output
    assert "re-embedded 6 messages" in out.stdout
    assert (
        db.execute(
            "SELECT count(*) FROM episode_message WHERE tenant_id = %s AND embedding IS NULL", (tenant,)
        ).fetchone()[0]
        == 0
    )
    from memq.shared.embeddings import get_embedder

    row = db.execute(
        "SELECT content, embedding FROM episode_message WHERE tenant_id = %s ORDER BY seq LIMIT 1", (tenant,)
    ).fetchone()
    expected = get_embedder(settings).embed([indexed_text({"role": "user", "content": row[0]})])[0]
    assert np.allclose(np.asarray(row[1].to_numpy()), expected, atol=1e-5)
    again = run(tenant, "reindex")
    assert again.exit_code == 0 and "nothing to re-embed" in again.stdout
    everything = run(tenant, "reindex", "--conversation", "home", "--all")
    assert everything.exit_code == 0 and "re-embedded 4 messages" in everything.stdout


def test_reindex_episodes_gives_stored_episodes_the_vectors_new_ones_get(db, stored, tenant, settings):
    """Episodes stored with an older vector (their summary's alone) get the one episode
    creation computes now, from their stored messages (and an LLM summary's embedding)."""
    from memq.shared.embeddings import episode_vector, get_embedder

    embedder = get_embedder(settings)
    rows = db.execute("SELECT id, summary FROM episodic_memory WHERE tenant_id = %s ORDER BY id", (tenant,)).fetchall()
    for episode_id, summary in rows:  # as they were stored before: the summary's embedding alone
        db.execute(
            "UPDATE episodic_memory SET embedding = %s WHERE id = %s", (embedder.embed([summary])[0], episode_id)
        )
    out = run(tenant, "reindex", "--episodes")
    assert out.exit_code == 0, out.output
    assert f"re-indexed {len(rows)} episodes" in out.stdout
    for episode_id, _ in rows:
        messages = db.execute(
            "SELECT embedding FROM episode_message WHERE episode_id = %s ORDER BY seq", (episode_id,)
        ).fetchall()
        # extractive summaries (no LLM here): the messages' mean, as episode creation makes it
        expected = episode_vector(None, np.stack([m[0].to_numpy() for m in messages]), settings.episode_summary_weight)
        (stored_vector,) = db.execute("SELECT embedding FROM episodic_memory WHERE id = %s", (episode_id,)).fetchone()
        assert np.allclose(stored_vector.to_numpy(), expected, atol=1e-5)
