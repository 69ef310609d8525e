"""Repository for ``episodic_memory`` rows and the messages they hold (``episode_message``).

Storing an episode is one transaction under the conversation's row lock: the fence is
checked (an episode cut from a Redis state that was since re-synced is refused), the
messages PostgreSQL already holds are recognised, and the episode and its messages are
written together. See ``store_episode``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
import psycopg
from psycopg.types.json import Jsonb

from memq.shared.db.conversations import lock_conversation, record_gap
from memq.shared.episode_listing import COLUMNS as LISTING_COLUMNS
from memq.shared.episode_listing import EpisodeListing
from memq.shared.errors import MemqError
from memq.shared.messages import speaker_of
from memq.shared.webhooks import events as webhook_events


class StaleSegment(MemqError):
    """The segment was cut before its conversation was re-synced with PostgreSQL (its
    fence is older than the conversation's): it must not be written as it is."""


class SequenceCollision(MemqError):
    """A sequence number PostgreSQL holds for one message was given to another."""


class StoredChanged(MemqError):
    """What PostgreSQL holds of the segment changed while its episode was being built."""


@dataclass(frozen=True)
class EpisodeRow:
    """An episode as the worker writes it: every column, its messages and vectors (what is
    listed and shown is ``EpisodeListing``)."""

    id: str
    tenant_id: str
    conversation_id: str
    messages: list[dict[str, Any]]
    first_seq: int
    last_seq: int
    title: str
    summary: str
    embedding: np.ndarray
    stability: float
    difficulty: float
    fsrs_card: dict[str, Any]
    surprise: float
    boundary_reason: str
    boundary_source: str
    detector: str
    summary_source: str
    summary_model: str | None
    summary_error: str | None
    embedding_model: str
    start_at: datetime
    end_at: datetime
    tools_used: list[str] = field(default_factory=list)
    overlap: list[dict[str, Any]] = field(default_factory=list)
    token_count: int = 0
    last_reviewed_at: datetime | None = None
    message_embeddings: np.ndarray | None = None  # one row per message, aligned with ``messages``

    @property
    def message_count(self) -> int:
        return len(self.messages)


_COLUMNS = (
    "id, tenant_id, conversation_id, messages, message_count, first_seq, last_seq, title, summary, "
    "embedding, stability, difficulty, fsrs_card, surprise, boundary_reason, boundary_source, detector, "
    "summary_source, summary_model, summary_error, embedding_model, tools_used, overlap, token_count, "
    "start_at, end_at, last_reviewed_at"
)


@dataclass(frozen=True)
class StoredCheck:
    """How a segment's messages relate to what PostgreSQL holds."""

    stored: frozenset[int]  # seqs already stored with this same message id
    duplicates: tuple[tuple[int, str], ...]  # (seq, id) whose id is stored under another seq
    collisions: tuple[tuple[int, str, str], ...]  # (seq, our id, stored id)

    def keep(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The messages still to store."""
        drop = set(self.stored) | {seq for seq, _ in self.duplicates}
        return [m for m in messages if m["seq"] not in drop]


def check_stored(
    conn: psycopg.Connection, tenant: str, conversation_id: str, messages: list[dict[str, Any]]
) -> StoredCheck:
    seqs = [m["seq"] for m in messages]
    ids = [m["id"] for m in messages]
    rows = conn.execute(
        "SELECT seq, message_id FROM episode_message WHERE tenant_id = %s AND conversation_id = %s "
        "AND (seq = ANY(%s) OR message_id = ANY(%s))",
        (tenant, conversation_id, seqs, ids),
    ).fetchall()
    by_seq: dict[int, str] = dict(rows)
    by_id = {mid: seq for seq, mid in rows}
    stored, duplicates, collisions = set(), [], []
    for m in messages:
        held = by_seq.get(m["seq"])
        if held == m["id"]:
            stored.add(m["seq"])
        elif held is not None:
            collisions.append((m["seq"], m["id"], held))
        elif m["id"] in by_id:
            duplicates.append((m["seq"], m["id"]))
    return StoredCheck(frozenset(stored), tuple(duplicates), tuple(collisions))


@dataclass(frozen=True)
class StoreOutcome:
    inserted: bool  # an episode row was written by this call
    duplicates: int  # messages not stored because their id was already held


def store_episode(
    conn: psycopg.Connection,
    *,
    tenant: str,
    conversation_id: str,
    fence: int,
    messages: list[dict[str, Any]],
    expected: StoredCheck,
    row: EpisodeRow | None,
) -> StoreOutcome:
    """Write the episode built from ``expected.keep(messages)`` (``row``; None when every
    message was already held), in one transaction, committed here.

    Raises ``StaleSegment`` when the fence is not the conversation's, ``StoredChanged``
    when PostgreSQL's holdings moved since ``expected`` was computed (rebuild and call
    again), ``SequenceCollision`` when a number is held by another message."""
    with conn.transaction():
        current = lock_conversation(conn, tenant, conversation_id)
        if current.fence != fence:
            raise StaleSegment(
                f"segment cut under fence {fence}, conversation {tenant}/{conversation_id} is at fence {current.fence}"
            )
        check = check_stored(conn, tenant, conversation_id, messages)
        if check.collisions:
            seq, ours, theirs = check.collisions[0]
            raise SequenceCollision(f"seq {seq} is held by message {theirs!r}; this segment gives it to {ours!r}")
        if check != expected:
            raise StoredChanged("messages of this segment were stored while its episode was being built")
        for seq, message_id in check.duplicates:
            record_gap(conn, tenant, conversation_id, seq, seq, "duplicate", message_id)
        inserted = False
        if row is not None:
            inserted = insert_episode(conn, row)
            if inserted:
                _insert_messages(conn, row)
                conn.execute(
                    "UPDATE conversation SET last_seq = greatest(last_seq, %s), "
                    "last_message_at = CASE WHEN %s >= last_seq THEN %s ELSE last_message_at END, "
                    "message_count = message_count + %s, episode_count = episode_count + 1, updated_at = now() "
                    "WHERE tenant_id = %s AND conversation_id = %s",
                    (row.last_seq, row.last_seq, row.end_at, row.message_count, tenant, conversation_id),
                )
                webhook_events.episode_created(
                    conn,
                    tenant,
                    conversation_id,
                    row.id,
                    messages=row.message_count,
                    first_seq=row.first_seq,
                    last_seq=row.last_seq,
                    title=row.title,
                    summary=row.summary,
                )
    return StoreOutcome(inserted, len(check.duplicates))


def _insert_messages(conn: psycopg.Connection, e: EpisodeRow) -> None:
    vectors = e.message_embeddings if e.message_embeddings is not None else [None] * len(e.messages)
    speakers: dict[str, Any] = {}
    for m in e.messages:
        name = speaker_of(m)
        if name is not None and name not in speakers:
            speakers[name] = m["timestamp"]
    with conn.cursor() as cur:
        if speakers:
            cur.executemany(
                "INSERT INTO conversation_participant (tenant_id, conversation_id, name, first_seen_at) "
                "VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING",
                [(e.tenant_id, e.conversation_id, name, at) for name, at in speakers.items()],
            )
        cur.executemany(
            "INSERT INTO episode_message (tenant_id, conversation_id, seq, message_id, episode_id, role, content, ts, "
            "sent_at, metadata, speaker, embedding) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
            [
                (
                    e.tenant_id,
                    e.conversation_id,
                    m["seq"],
                    m["id"],
                    e.id,
                    m["role"],
                    m["content"],
                    m["timestamp"],
                    m.get("sent_at"),
                    Jsonb(m["metadata"]) if m.get("metadata") else None,
                    speaker_of(m),
                    vector,
                )
                for m, vector in zip(e.messages, vectors)
            ],
        )


def insert_episode(conn: psycopg.Connection, e: EpisodeRow) -> bool:
    """Insert unless an episode with this id exists. True when this call inserted it."""
    cur = conn.execute(
        f"INSERT INTO episodic_memory ({_COLUMNS}) VALUES "
        "(%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s) "
        "ON CONFLICT (id) DO NOTHING",
        (
            e.id,
            e.tenant_id,
            e.conversation_id,
            Jsonb(e.messages),
            e.message_count,
            e.first_seq,
            e.last_seq,
            e.title,
            e.summary,
            e.embedding,
            e.stability,
            e.difficulty,
            Jsonb(e.fsrs_card),
            e.surprise,
            e.boundary_reason,
            e.boundary_source,
            e.detector,
            e.summary_source,
            e.summary_model,
            e.summary_error,
            e.embedding_model,
            Jsonb(e.tools_used),
            Jsonb(e.overlap),
            e.token_count,
            e.start_at,
            e.end_at,
            e.last_reviewed_at,
        ),
    )
    return cur.rowcount == 1


def list_episodes(conn: psycopg.Connection, tenant_id: str, conversation_id: str) -> list[EpisodeListing]:
    rows = conn.execute(
        f"SELECT {LISTING_COLUMNS} FROM episodic_memory WHERE tenant_id = %s AND conversation_id = %s "
        "ORDER BY first_seq",
        (tenant_id, conversation_id),
    ).fetchall()
    return [EpisodeListing.from_row(row) for row in rows]
