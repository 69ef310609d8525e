"""One consolidation run for a conversation (Plast Mem, lifecycle step 5), orchestrated.

1. The oldest episodes not yet consolidated (up to ``MEMQ_CONSOLIDATION_MAX_EPISODES``)
   and the related facts already known (``MEMQ_CONSOLIDATION_CANDIDATES``, by the same
   hybrid search as retrieval, over the facts' own vectors and text, with each episode as
   a query), numbered E1.. and F1.. for the LLM. Known facts are those of every
   conversation of the conversation's user (``fact_scope``), of the conversation alone
   when it has no user; a new fact belongs to the conversation whose episode taught it.
2. The LLM answers actions (``actions.py``: validated as a whole, retried when not).
3. One transaction: the episodes are locked (a run that finds any of them consolidated
   meanwhile stops: a retry or a concurrent run did the work), the targeted facts are
   locked, every step is applied (a new fact within ``MEMQ_FACT_DUPLICATE_SIMILARITY`` of
   an active one reinforces it instead), history rows are written and the episodes'
   ``consolidated_at`` is set.

With no LLM configured nothing happens: the episodes stay pending until one is
(``memq consolidate``).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np
import psycopg
import structlog

from memq.shared.db.facts import Fact, add_fact, lock_facts, nearest_active, reinforce_fact, retire_fact, search_facts
from memq.shared.embeddings import Embedder
from memq.shared.llm import LLMError, complete_json
from memq.shared.settings import Settings
from memq.shared.users import owner, user_conversations
from memq.worker.consolidation.actions import Shown, Step, answer_model, plan

log = structlog.get_logger("memq.consolidation")

SYSTEM = (
    "You maintain the long-term semantic memory of an AI agent: lasting facts about the people in its conversations "
    "(who they are, what they prefer, like, are like, whom they know, what they did, want, and how the agent should "
    "behave). From the new episodes (E1, E2, ...) extract the facts that will still matter later, each one "
    "self-contained sentence naming its subject. Known facts related to them are listed as F1, F2, ...; for each fact "
    "you find, answer one action:\n"
    "- new: a fact not known yet (give its category, and valid_from if the episode says when it became true);\n"
    "- reinforce: the episodes confirm known fact Fn;\n"
    "- update: known fact Fn changed; give the new fact that replaces it;\n"
    "- invalidate: known fact Fn is no longer true and nothing replaces it.\n"
    "Act on each known fact at most once. Skip small talk and passing details. Categories: identity, preference, "
    'interest, personality, relationship, experience, goal, guideline. Answer {"actions": []} when nothing lasts.'
)


@dataclass
class ConsolidationOutcome:
    status: str  # "done" | "waiting" (no LLM) | "nothing" | "failed" (LLM) | "raced"
    episodes: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    error: str | None = None
    run_id: str | None = None


def fact_scope(conn: psycopg.Connection, tenant: str, conversation_id: str) -> list[str]:
    """The conversations whose facts a run of ``conversation_id`` reads and acts on: every
    conversation of its user (a fact learnt in one is reinforced, updated or invalidated
    by another of the same person), or the conversation alone when it has no user."""
    user = owner(conn, tenant, conversation_id)
    if user is None:
        return [conversation_id]
    return sorted({conversation_id, *user_conversations(conn, tenant, user)})


def _episodes(conn: psycopg.Connection, tenant: str, conversation_id: str, limit: int) -> list[tuple[Any, ...]]:
    return conn.execute(
        "SELECT id::text, title, summary, start_at, end_at, embedding FROM episodic_memory "
        "WHERE tenant_id = %s AND conversation_id = %s AND consolidated_at IS NULL ORDER BY start_at, id LIMIT %s",
        (tenant, conversation_id, limit),
    ).fetchall()


def _messages(conn: psycopg.Connection, episode_ids: list[str], per_episode: int = 60) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for eid, who, content in conn.execute(
        "SELECT episode_id::text, coalesce(speaker, role), content FROM episode_message "
        "WHERE episode_id = ANY(%s::uuid[]) "
        "ORDER BY seq",
        (episode_ids,),
    ):
        lines = out.setdefault(eid, [])
        if len(lines) < per_episode:
            text = " ".join(content.split())
            lines.append(f"- {who}: {text[:400]}{' …' if len(text) > 400 else ''}")
    return out


def render(
    episodes: list[tuple[Any, ...]], messages: dict[str, list[str]], facts: list[tuple[Fact, float, dict[str, int]]]
) -> str:
    parts = ["NEW EPISODES:"]
    for i, (eid, title, summary, start, end, _) in enumerate(episodes, start=1):
        parts.append(f"E{i} ({start:%Y-%m-%d %H:%M}–{end:%H:%M} UTC): {title}\nSummary: {summary}")
        parts += messages.get(eid, [])
    parts.append("\nKNOWN FACTS:" if facts else "\nKNOWN FACTS: none")
    for j, (fact, _, _) in enumerate(facts, start=1):
        since = f", true since {fact.valid_at:%Y-%m-%d}" if fact.valid_at else ""
        parts.append(f"F{j} [{fact.category}{since}] {fact.content}")
    return "\n".join(parts)


def consolidate(
    conn: psycopg.Connection, settings: Settings, embedder: Embedder, tenant: str, conversation_id: str
) -> ConsolidationOutcome:
    """``conn``: autocommit. One run over the oldest pending episodes."""
    if not settings.llm_enabled:
        return ConsolidationOutcome("waiting")
    episodes = _episodes(conn, tenant, conversation_id, settings.consolidation_max_episodes)
    if not episodes:
        return ConsolidationOutcome("nothing")
    scope = fact_scope(conn, tenant, conversation_id)
    queries = [(f"{title} {summary}", vector.to_numpy()) for _, title, summary, _, _, vector in episodes]
    known = search_facts(conn, tenant, scope, queries, settings.consolidation_candidates, k=settings.rrf_k)
    shown = Shown(tuple((e[0], e[3]) for e in episodes), tuple((f.id, f.valid_at) for f, _, _ in known))
    ids = [e[0] for e in episodes]
    try:
        result = complete_json(
            settings,
            [
                {"role": "system", "content": SYSTEM},
                {"role": "user", "content": render(episodes, _messages(conn, ids), known)},
            ],
            answer_model(shown),
            purpose="semantic_consolidation",
        )
    except LLMError as exc:
        log.warning(
            "consolidation_failed",
            conversation_id=conversation_id,
            episodes=len(ids),
            error=":".join(str(exc).split(":")[:2]),  # purpose and kind: the rest can quote the answer
            hint="the episodes stay pending; a later run (or `memq consolidate`) tries again",
        )
        return ConsolidationOutcome("failed", len(ids), error=str(exc)[:300])
    steps = plan(result.value, shown).steps
    texts = [s.fact for s in steps if s.fact]
    vectors = dict(zip(texts, embedder.embed(texts))) if texts else {}

    run_id = str(uuid.uuid4())
    now = datetime.now(UTC)
    counts: dict[str, int] = {}
    with conn.transaction():
        locked = {
            r[0]
            for r in conn.execute(
                "SELECT id::text FROM episodic_memory WHERE id = ANY(%s::uuid[]) AND consolidated_at IS NULL "
                "ORDER BY id "
                "FOR UPDATE",
                (ids,),
            )
        }
        targets = lock_facts(conn, [s.target_id for s in steps if s.target_id])
        if (
            locked != set(ids)
            or any(not f.active for f in targets.values())
            or len(targets) != len({s.target_id for s in steps if s.target_id})
        ):
            log.info("consolidation_raced", conversation_id=conversation_id, hint="another run did this work")
            return ConsolidationOutcome("raced", len(ids))
        common: dict[str, Any] = {
            "tenant": tenant,
            "conversation_id": conversation_id,
            "scope": scope,
            "at": now,
            "run_id": run_id,
        }
        for step in steps:
            kind = _apply(conn, step, vectors, common, settings, result.model)
            counts[kind] = counts.get(kind, 0) + 1
        conn.execute("UPDATE episodic_memory SET consolidated_at = %s WHERE id = ANY(%s::uuid[])", (now, ids))
    log.info(
        "consolidated", conversation_id=conversation_id, episodes=len(ids), known=len(known), run_id=run_id, **counts
    )
    return ConsolidationOutcome("done", len(ids), counts, run_id=run_id)


def _apply(
    conn: psycopg.Connection,
    step: Step,
    vectors: dict[str, np.ndarray],
    common: dict[str, Any],
    settings: Settings,
    model: str,
) -> str:
    episodes = [step.episode_id]
    tenant, conversation_id = common["tenant"], common["conversation_id"]
    if step.kind == "reinforce":
        assert step.target_id is not None  # validated: reinforce names a known fact
        reinforce_fact(
            conn,
            step.target_id,
            episode_ids=episodes,
            tenant=tenant,
            conversation_id=conversation_id,
            at=common["at"],
            run_id=common["run_id"],
        )
        return "reinforced"
    if step.kind == "invalidate":
        assert step.target_id is not None  # validated: invalidate names a known fact
        retire_fact(
            conn,
            step.target_id,
            invalid_at=step.at,
            episode_ids=episodes,
            tenant=tenant,
            conversation_id=conversation_id,
            at=common["at"],
            run_id=common["run_id"],
        )
        return "invalidated"
    assert step.fact is not None and step.category is not None  # validated: new and update carry both
    vector = vectors[step.fact]
    near = nearest_active(conn, tenant, common["scope"], vector)
    if (
        near is not None
        and near[1] >= settings.fact_duplicate_similarity
        and (step.kind == "new" or near[0] == step.target_id)
    ):
        # the same fact again (or an "update" that changes nothing): reinforce, do not duplicate
        reinforce_fact(
            conn,
            near[0],
            episode_ids=episodes,
            tenant=tenant,
            conversation_id=conversation_id,
            at=common["at"],
            run_id=common["run_id"],
            detail={"as": step.kind, "similarity": round(near[1], 4), "said": step.fact},
        )
        return "reinforced"
    new_id = add_fact(
        conn,
        tenant=tenant,
        conversation_id=conversation_id,
        category=step.category,
        content=step.fact,
        embedding=vector,
        valid_at=step.at,
        episode_ids=episodes,
        at=common["at"],
        run_id=common["run_id"],
        model=model,
        detail={"as": step.kind},
    )
    if step.kind == "update":
        assert step.target_id is not None  # validated: update names a known fact
        retire_fact(
            conn,
            step.target_id,
            invalid_at=step.at,
            superseded_by=new_id,
            episode_ids=episodes,
            tenant=tenant,
            conversation_id=conversation_id,
            at=common["at"],
            run_id=common["run_id"],
        )
        return "updated"
    return "new"
