"""The memory review of one finished segment (Plast Mem, lifecycle step 4), orchestrated.

When a conversation's segment becomes an episode, the memories retrieved for that
conversation before the segment ended are reviewed: each is rated by how the segment
used it (an LLM when one is configured and answers, else the usage signal; the review
says which), and the rating is applied to its FSRS card (``fsrs_update.py``). Ratings
are computed first; then one transaction locks the pending reviews still open and the
memories' rows, applies the day's review of each memory and marks the pending reviews
consumed, so a retried or redelivered job applies nothing twice.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
import psycopg
import structlog

from memq.shared.db.reviews import Pending, consume, lock_cards, lock_open, pending_for, review_of_day, save_review
from memq.shared.llm import LLMError
from memq.shared.settings import Settings
from memq.worker.review.fsrs_update import NAMES, apply_rating
from memq.worker.review.llm_rating import Reviewed, llm_ratings
from memq.worker.review.usage import UsageParams, usage_rating

log = structlog.get_logger("memq.review")


@dataclass(frozen=True)
class SegmentView:
    episode_id: str
    end_at: datetime
    messages: list[tuple[datetime, str, str, np.ndarray | None]]  # (ts, who, content, vector)


@dataclass
class ReviewOutcome:
    reviewed: int = 0  # memories whose FSRS state changed
    consumed: int = 0  # pending reviews consumed
    source: str | None = None
    ratings: dict[str, str] = field(default_factory=dict)  # memory id -> rating name


def usage_params(settings: Settings) -> UsageParams:
    return UsageParams(
        settings.review_easy_similarity,
        settings.review_good_similarity,
        settings.review_hard_similarity,
        settings.review_easy_uptake,
        settings.review_good_uptake,
        settings.review_hard_uptake,
    )


def _segment(conn: psycopg.Connection, episode_id: str) -> SegmentView | None:
    head = conn.execute("SELECT end_at FROM episodic_memory WHERE id = %s", (episode_id,)).fetchone()
    if head is None:
        return None
    rows = conn.execute(
        "SELECT ts, coalesce(speaker, role), content, embedding FROM episode_message WHERE episode_id = %s "
        "ORDER BY seq",
        (episode_id,),
    ).fetchall()
    return SegmentView(
        episode_id, head[0], [(r[0], r[1], r[2], None if r[3] is None else np.asarray(r[3].to_numpy())) for r in rows]
    )


def _memories(conn: psycopg.Connection, ids: list[str]) -> dict[str, dict[str, Any]]:
    rows = conn.execute(
        "SELECT id::text, title, summary, embedding FROM episodic_memory WHERE id = ANY(%s::uuid[])", (ids,)
    ).fetchall()
    out = {
        r[0]: {"title": r[1], "summary": r[2], "vectors": [np.asarray(r[3].to_numpy())], "text": f"{r[1]} {r[2]}"}
        for r in rows
    }
    for eid, content, vector in conn.execute(
        "SELECT episode_id::text, content, embedding FROM episode_message WHERE episode_id = ANY(%s::uuid[]) "
        "ORDER BY seq",
        (ids,),
    ):
        out[eid]["text"] += " " + content
        if vector is not None:
            out[eid]["vectors"].append(np.asarray(vector.to_numpy()))
    return out


def review_segment(
    conn: psycopg.Connection, settings: Settings, tenant: str, conversation_id: str, episode_id: str
) -> ReviewOutcome:
    """``conn``: autocommit. Reviews what was retrieved for ``conversation_id`` before the
    segment that became ``episode_id`` ended."""
    segment = _segment(conn, episode_id)
    if segment is None:  # forgotten meanwhile
        return ReviewOutcome()
    pending = pending_for(conn, tenant, conversation_id, segment.end_at)
    pending = [p for p in pending if p.memory_id != episode_id]
    if not pending:
        return ReviewOutcome()
    groups: dict[str, list[Pending]] = defaultdict(list)
    for p in pending:
        groups[p.memory_id].append(p)
    memories = _memories(conn, list(groups))
    groups = {m: ps for m, ps in groups.items() if m in memories}

    def after(moment: datetime) -> list[tuple[datetime, str, str, np.ndarray | None]]:
        later = [m for m in segment.messages if m[0] >= moment]
        return later or segment.messages

    ratings: dict[str, tuple[int, dict[str, Any]]] = {}
    source = "usage"
    llm_error = None
    order = sorted(groups)
    if settings.llm_enabled and order:
        first = min(p.retrieved_at for ps in groups.values() for p in ps)
        shown = [
            Reviewed(
                i + 1, memories[m]["title"], memories[m]["summary"], tuple(dict.fromkeys(p.query for p in groups[m]))
            )
            for i, m in enumerate(order)
        ]
        try:
            answers, model = llm_ratings(settings, [f"- {who}: {text}" for _, who, text, _ in after(first)], shown)
            ratings = {
                m: (answers[i + 1][0], {"reason": answers[i + 1][1], "model": model}) for i, m in enumerate(order)
            }
            source = "llm"
        except LLMError as exc:
            llm_error = str(exc)[:300]
            log.warning("review_fallback_usage", episode_id=episode_id, error=":".join(llm_error.split(":")[:2]))
    if source == "usage":
        params = usage_params(settings)
        for m in order:
            later = after(min(p.retrieved_at for p in groups[m]))
            vectors = np.asarray([v for *_, v in later if v is not None])
            rated = usage_rating(
                np.asarray(memories[m]["vectors"]),
                vectors,
                memories[m]["text"],
                " ".join(text for _, _, text, _ in later),
                [p.query for p in groups[m]],
                params,
            )
            detail = rated.detail() | ({"llm_error": llm_error} if llm_error else {})
            ratings[m] = (rated.rating, detail)

    outcome = ReviewOutcome(source=source)
    with conn.transaction():
        still_open = lock_open(conn, [p.id for p in pending])
        cards = lock_cards(conn, order)
        for m in order:
            ids = [p.id for p in groups[m] if p.id in still_open]
            if not ids or m not in cards:
                continue  # consumed by an earlier run of this job, or forgotten
            rating, detail = ratings[m]
            memory_conversation, card = cards[m]
            at = segment.end_at
            day = review_of_day(conn, m, at.date())
            applied = apply_rating(
                card,
                rating,
                at,
                desired_retention=settings.desired_retention,
                same_day=None if day is None else (day.card_before, day.rating, day.merged),
            )
            queries = sorted({p.query for p in groups[m]})
            review_id = save_review(
                conn,
                tenant=tenant,
                conversation_id=memory_conversation,
                memory_id=m,
                at=at,
                rating=applied.rating,
                source=source,
                detail={**detail, "queries": queries, "asked_in": conversation_id},
                merged=applied.merged,
                card_before=applied.card_before,
                card_after=applied.card_after,
                segment_id=episode_id,
            )
            consume(conn, ids, review_id)
            outcome.reviewed += 1
            outcome.consumed += len(ids)
            outcome.ratings[m] = NAMES[applied.rating]
    log.info(
        "memories_reviewed",
        episode_id=episode_id,
        reviewed=outcome.reviewed,
        consumed=outcome.consumed,
        source=source,
        ratings=outcome.ratings,
    )
    return outcome
