"""The bench corpus's pure parts: sizes, the plan, the rows (no database)."""

from __future__ import annotations

import json
import uuid

import numpy as np
import pytest

from memq.shared.ids import check_conversation_id, check_tenant
from memq_lab.bench import corpus


def _pool(n: int = 200, dim: int = 16) -> corpus.Pool:
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((n, dim)).astype(np.float32)
    texts = [f"Utterance number {i} about the trip to Lisbon and the bike." for i in range(n)]
    roles = ["user" if i % 2 == 0 else "assistant" for i in range(n)]
    return corpus.make_pool(texts, roles, vectors, "local/all-MiniLM-L6-v2")


def test_apportion_sums_and_respects_minimum() -> None:
    parts = corpus.apportion(1_000, [5.0, 3.0, 1.0, 1.0], minimum=10)
    assert sum(parts) == 1_000
    assert min(parts) >= 10
    assert parts[0] > parts[1] > parts[2]
    with pytest.raises(ValueError):
        corpus.apportion(30, [1.0, 1.0, 1.0, 1.0], minimum=10)


def test_tenants_are_skewed() -> None:
    sizes = corpus.tenant_sizes(1_000_000, corpus.TENANTS)
    assert sum(sizes) == 1_000_000
    assert sizes == sorted(sizes, reverse=True)
    assert sizes[0] / 1_000_000 > 0.2  # the largest tenant holds a large share
    assert sum(sizes[:5]) / 1_000_000 > 0.5  # a few tenants hold most of the data
    assert sizes[-1] >= corpus.EPISODE_MIN


@pytest.mark.parametrize("messages", [10, 11, 31, 45, 300, 4_321])
def test_episode_sizes(messages: int) -> None:
    sizes = corpus.episode_sizes(messages, np.random.default_rng(1))
    assert sum(sizes) == messages
    assert all(corpus.EPISODE_MIN <= s <= corpus.EPISODE_MAX for s in sizes)


@pytest.mark.parametrize("messages", [2_000, 10_000, 100_000])
def test_plan(messages: int) -> None:
    plan = corpus.plan(messages, 7, 15_000, "pool")
    assert sum(c.messages for c in plan.conversations) == messages
    assert sum(plan.tenants) == messages
    assert len(plan.tenants) >= 50
    for t, held in enumerate(plan.tenants):
        assert sum(c.messages for c in plan.conversations if c.tenant == t) == held
    for c in plan.conversations:
        assert sum(c.episodes) == c.messages
    assert 17 <= messages / plan.episodes <= 23  # ~20 messages per episode
    sizes = sorted(c.messages for c in plan.conversations)
    assert sizes[-1] > 5 * sizes[len(sizes) // 2]  # conversations are skewed too
    for tenant in plan.tenant_ids:
        check_tenant(tenant)
        assert tenant.startswith(corpus.PREFIX)
    check_conversation_id(plan.conversations[0].conversation_id)


def test_plan_is_deterministic() -> None:
    a, b = corpus.plan(10_000, 7, 15_000, "pool"), corpus.plan(10_000, 7, 15_000, "pool")
    assert a == b
    assert corpus.plan(10_000, 8, 15_000, "pool").conversations != a.conversations
    assert corpus.plan(10_000, 7, 15_000, "other pool").key != a.key
    assert corpus.plan(20_000, 7, 15_000, "pool").key != a.key


def test_noisy_vectors_stay_near_their_utterance() -> None:
    pool = _pool(dim=384)
    rng = np.random.default_rng(3)
    out = corpus.noisy(pool.vectors[:50], rng)
    assert np.allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-5)
    cos = np.sum(out * pool.vectors[:50], axis=1)
    assert cos.min() > 0.95 and cos.max() < 0.995
    again = corpus.noisy(pool.vectors[:50], np.random.default_rng(3))
    assert np.array_equal(out, again)


def test_partnered_copies_of_an_utterance_differ_yet_stay_nearest_it() -> None:
    pool = _pool(dim=384)
    rng = np.random.default_rng(5)
    same = np.repeat(pool.vectors[:1], 40, axis=0)  # 40 copies of one utterance
    out = corpus.partnered(same, pool.vectors, rng)
    assert np.allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-5)
    to_own = out @ pool.vectors[0]
    to_others = out @ pool.vectors[1:].T
    assert (to_own > to_others.max(axis=1)).all()  # each copy still nearest its own utterance
    between = out @ out.T
    off_diagonal = between[~np.eye(len(out), dtype=bool)]
    # near-duplicates only where two copies drew the same partner (40 draws from 200 here)
    assert (off_diagonal > 0.9).mean() < 0.05
    assert np.array_equal(out, corpus.partnered(same, pool.vectors, np.random.default_rng(5)))


def _clustered_pool(n: int = 600, dim: int = 64) -> corpus.Pool:
    """Utterance vectors sharing a common direction, as real embeddings do."""
    rng = np.random.default_rng(1)
    vectors = rng.standard_normal((n, dim)).astype(np.float32) + 3.0 * rng.standard_normal(dim).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return corpus.make_pool([f"utterance {i}" for i in range(n)], ["user"] * n, vectors, "m")


def test_episode_partners_vary_copies_of_a_window_without_a_shared_part() -> None:
    pool = _clustered_pool()
    window = pool.vectors[:20].mean(axis=0)
    own = np.repeat((window / np.linalg.norm(window))[None, :], 40, axis=0)  # 40 copies of one episode
    out = corpus.episode_partnered(own, pool, np.random.default_rng(2))
    assert np.allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-5)
    between = (out @ out.T)[~np.eye(len(out), dtype=bool)]
    # copies differ (but where two drew the same window) yet stay near their own window
    assert (between > 0.99).mean() < 0.05 and (out @ own[0]).min() > 0.9
    # unrelated episodes: partnering does not pull them together (the partners are centred)
    rng = np.random.default_rng(3)
    starts = rng.integers(0, len(pool) - 20, size=60)
    windows = np.stack([pool.vectors[s : s + 20].mean(axis=0) for s in starts])
    windows /= np.linalg.norm(windows, axis=1, keepdims=True)
    off = ~np.eye(60, dtype=bool)
    before = (windows @ windows.T)[off].mean()
    after_ = corpus.episode_partnered(windows, pool, np.random.default_rng(4))
    assert (after_ @ after_.T)[off].mean() <= before + 0.01
    assert np.array_equal(out, corpus.episode_partnered(own, pool, np.random.default_rng(2)))


def test_rows() -> None:
    pool = _pool()
    plan = corpus.plan(600, 7, len(pool), "pool")
    c = plan.conversations[0]
    tenant = plan.tenant_id(c.tenant)
    data = corpus.conversation_data(c, pool, 7)
    vectors = data.vectors(c, pool, 7)
    assert np.array_equal(vectors, data.vectors(c, pool, 7))
    assert data.timestamps == sorted(data.timestamps)
    assert data.timestamps[-1] < corpus.NOW
    texts = [corpus.episode_text(corpus.message_dicts(data, pool, f, last)) for f, last in data.bounds]
    episode_vectors = data.episode_vectors(c, pool, 7)
    assert np.array_equal(episode_vectors, data.episode_vectors(c, pool, 7))
    episodes = corpus.episode_rows(c, tenant, data, episode_vectors, pool, texts, 7)
    assert len(episodes) == len(c.episodes)
    columns = [x.strip() for x in corpus.EPISODE_COLUMNS.split(",")]
    assert len(columns) == len(corpus.EPISODE_TYPES) == len(episodes[0])
    nullable = {"summary_model", "summary_error", "last_reviewed_at", "consolidated_at"}
    seq = 1
    for row in episodes:
        e = dict(zip(columns, row))
        assert all(e[name] is not None for name in columns if name not in nullable)
        assert e["first_seq"] == seq and e["last_seq"] - e["first_seq"] + 1 == e["message_count"]
        seq = e["last_seq"] + 1
        assert e["start_at"] <= e["end_at"] <= e["created_at"] <= corpus.NOW
        assert e["title"] and f": {e['message_count']} messages (" in e["summary"].split(".")[0]
        assert abs(float(np.linalg.norm(e["embedding"])) - 1.0) < 1e-5
        messages = json.loads(json.dumps(e["messages"].obj))
        assert [m["seq"] for m in messages] == list(range(e["first_seq"], e["last_seq"] + 1))
        assert 0.0 <= e["surprise"] <= 1.0 and e["stability"] > 0
        assert e["fsrs_card"].obj["last_review"] == e["end_at"].isoformat()
    messages = list(corpus.message_rows(data, c, tenant, vectors, pool))
    assert len(messages) == c.messages
    assert len(messages[0]) == len(corpus.MESSAGE_TYPES)
    assert [m[2] for m in messages] == list(range(1, c.messages + 1))
    assert len({m[3] for m in messages}) == c.messages  # message ids are unique
    assert {m[4] for m in messages} == {row[0] for row in episodes}
    assert all(isinstance(m[4], uuid.UUID) and m[6] for m in messages)
    row = corpus.conversation_row(c, tenant, data.timestamps[0], data.timestamps[-1], episodes[-1][26])
    assert len(row) == len(corpus.CONVERSATION_TYPES)
    assert row[3] == row[5] == c.messages and row[6] == len(c.episodes)


def test_queries_and_recall() -> None:
    from memq_lab.bench import retrieval

    plan = corpus.plan(10_000, 7, 15_000, "pool")
    asked = ("What did Caroline research?", "When did Melanie paint a sunrise?", "Which bike did Alex buy?")
    picked = retrieval.pick_queries(plan, asked, 40, 7)
    assert picked == retrieval.pick_queries(plan, asked, 40, 7)
    assert len(picked["conversation"]) == len(picked["tenant"]) == 40
    assert {q.tenant for q in picked["tenant"]} == {plan.tenant_id(0)}
    assert all(q.conversation_id is None for q in picked["tenant"])
    sizes: dict[tuple[str, str | None], int] = {
        (plan.tenant_id(c.tenant), c.conversation_id): c.messages for c in plan.conversations
    }
    for q in picked["conversation"]:
        assert sizes[(q.tenant, q.conversation_id)] == q.scope_messages
    # drawn by size: the conversations asked about are larger than the typical one
    assert np.median([q.scope_messages for q in picked["conversation"]]) > np.median(list(sizes.values()))
    assert retrieval.recall({1, 2, 3}, {2, 3, 4, 5}) == 0.5
    assert retrieval.recall(set(), set()) == 1.0
