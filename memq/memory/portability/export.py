"""Reading a tenant (or one conversation, or one user's conversations) as ``memq-export``
records, in constant memory.

One REPEATABLE READ, read-only transaction (a consistent snapshot however long the export
runs) with one server-side cursor per table, each ordered by conversation (the tables'
indexes give that order); the cursors are walked side by side, a conversation at a time.
Nothing is held but the rows of the current batch (``itersize``)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import psycopg

from memq.memory.portability.format import encode, end, header
from memq.shared.errors import MemqError
from memq.shared.settings import Settings
from memq.shared.vector_codec import encode_vector

ITERSIZE = 500


class ExportError(MemqError):
    """What PostgreSQL holds cannot be written as it is (run ``memq audit``)."""


def _scope(conversation_id: str | None, user_id: str | None, column: str = "conversation_id") -> str:
    out = f" AND {column} = %(c)s" if conversation_id is not None else ""
    if user_id is not None:  # the user's conversations
        out += (
            f" AND {column} IN (SELECT u.conversation_id FROM conversation u "
            "WHERE u.tenant_id = %(t)s AND u.user_id = %(u)s)"
        )
    return out


# (record type, SELECT list, FROM ... WHERE ..., ORDER BY); the first column is always the conversation.
def _queries(conversation_id: str | None, user_id: str | None) -> dict[str, str]:
    s, fs = _scope(conversation_id, user_id), _scope(conversation_id, user_id, "f.conversation_id")
    return {
        "conversations": (
            "SELECT k.conversation_id, c.fence, c.last_seq, c.last_message_at, c.message_count, c.episode_count, "
            "c.created_at, c.user_id FROM ("
            f"SELECT conversation_id FROM conversation WHERE tenant_id = %(t)s{s} "
            f"UNION SELECT conversation_id FROM episodic_memory WHERE tenant_id = %(t)s{s} "
            f"UNION SELECT conversation_id FROM seq_gap WHERE tenant_id = %(t)s{s} "
            f"UNION SELECT conversation_id FROM semantic_fact WHERE tenant_id = %(t)s{s}) k "
            "LEFT JOIN conversation c ON c.tenant_id = %(t)s AND c.conversation_id = k.conversation_id "
            "ORDER BY k.conversation_id"
        ),
        "gap": (
            "SELECT conversation_id, first_seq, last_seq, reason, message_id, recorded_at FROM seq_gap "
            f"WHERE tenant_id = %(t)s{s} ORDER BY conversation_id, first_seq"
        ),
        "episode": (
            "SELECT conversation_id, id::text, message_count, first_seq, last_seq, title, summary, embedding, "
            "embedding_model, stability, difficulty, fsrs_card, surprise, boundary_reason, boundary_source, detector, "
            "summary_source, summary_model, summary_error, tools_used, overlap, token_count, start_at, end_at, "
            f"created_at, last_reviewed_at, consolidated_at FROM episodic_memory WHERE tenant_id = %(t)s{s} "
            "ORDER BY conversation_id, first_seq"
        ),
        "message": (
            "SELECT conversation_id, episode_id::text, seq, message_id, role, content, ts, sent_at, metadata, speaker, "
            f"embedding FROM episode_message WHERE tenant_id = %(t)s{s} ORDER BY conversation_id, seq"
        ),
        "review": (
            "SELECT conversation_id, memory_id::text, review_day, reviewed_at, rating, source, detail, card_before, "
            "card_after, reviews_merged, segment_id::text, created_at, updated_at FROM memory_review "
            f"WHERE tenant_id = %(t)s{s} ORDER BY conversation_id, reviewed_at, id"
        ),
        "pending_review": (
            "SELECT p.conversation_id, p.memory_id::text, p.query, p.rank, p.score, p.retrieved_at, p.consumed_at, "
            "p.asked_in, r.memory_id::text, r.review_day FROM pending_review p "
            "LEFT JOIN memory_review r ON r.id = p.review_id "
            f"WHERE p.tenant_id = %(t)s{_scope(conversation_id, user_id, 'p.conversation_id')} "
            "ORDER BY p.conversation_id, p.id"
        ),
        "fact": (
            "SELECT conversation_id, id::text, category, content, embedding, valid_at, invalid_at, created_at, "
            "expired_at, superseded_by::text, source_episode_ids::text[], reinforcements, last_reinforced_at, model "
            f"FROM semantic_fact WHERE tenant_id = %(t)s{s} ORDER BY conversation_id, created_at DESC, id"
        ),
        # in the facts' order, so each fact's changes are read right after it
        "history": (
            "SELECT f.conversation_id, h.fact_id::text, h.action, h.at, h.run_id::text, h.episode_ids::text[], "
            "h.detail FROM semantic_fact_history h JOIN semantic_fact f ON f.id = h.fact_id "
            f"WHERE f.tenant_id = %(t)s{fs} ORDER BY f.conversation_id, f.created_at DESC, f.id, h.at, h.id"
        ),
    }


class _Stream:
    """A cursor's rows, read a key at a time (rows come ordered by that key)."""

    def __init__(self, rows: Iterator[tuple[Any, ...]]):
        self._rows = rows
        self._head = next(rows, None)

    def take(self, *key: Any) -> Iterator[tuple[Any, ...]]:
        while self._head is not None and self._head[: len(key)] == key:
            row, self._head = self._head, next(self._rows, None)
            yield row

    @property
    def head(self) -> tuple[Any, ...] | None:
        return self._head


def _vector(value: Any) -> str | None:
    return None if value is None else encode_vector(value)


def _episode(tenant: str, r: tuple[Any, ...]) -> dict[str, Any]:
    names = (
        "conversation_id id message_count first_seq last_seq title summary embedding embedding_model stability "
        "difficulty fsrs_card surprise boundary_reason boundary_source detector summary_source summary_model "
        "summary_error tools_used overlap token_count start_at end_at created_at last_reviewed_at consolidated_at"
    )
    record = _named("episode", tenant, names, r)
    record["embedding"] = _vector(record["embedding"])
    return record


def _message(tenant: str, r: tuple[Any, ...]) -> dict[str, Any]:
    names = "conversation_id episode_id seq id role content timestamp sent_at metadata speaker embedding"
    record = _named("message", tenant, names, r)
    record["embedding"] = _vector(record["embedding"])
    return record


def _named(kind: str, tenant: str, names: str, r: tuple[Any, ...]) -> dict[str, Any]:
    return {"type": kind, "tenant": tenant, **dict(zip(names.split(), r, strict=True))}


def _fact(tenant: str, r: tuple[Any, ...], history: Iterator[tuple[Any, ...]]) -> dict[str, Any]:
    names = (
        "conversation_id id category content embedding valid_at invalid_at created_at expired_at superseded_by "
        "source_episode_ids reinforcements last_reinforced_at model"
    )
    record = _named("fact", tenant, names, r)
    record["embedding"] = _vector(record["embedding"])
    record["history"] = [
        {"action": h[2], "at": h[3], "run_id": h[4], "episode_ids": h[5], "detail": h[6]} for h in history
    ]
    return record


def _conversation_records(
    tenant: str, conversation: tuple[Any, ...], streams: dict[str, _Stream]
) -> Iterator[dict[str, Any]]:
    cid = conversation[0]
    yield _named(
        "conversation",
        tenant,
        "conversation_id fence last_seq last_message_at message_count episode_count created_at user_id",
        conversation,
    )
    for r in streams["gap"].take(cid):
        yield _named("gap", tenant, "conversation_id first_seq last_seq reason message_id recorded_at", r)
    for r in streams["episode"].take(cid):
        yield _episode(tenant, r)
        for m in streams["message"].take(cid, r[1]):
            yield _message(tenant, m)
    left = streams["message"].head
    if left is not None and left[0] == cid:
        raise ExportError(
            f"message {cid}/{left[2]} is stored under episode {left[1]}, outside that episode's place in the "
            f"conversation: run `memq audit --tenant {tenant}`"
        )
    for r in streams["review"].take(cid):
        yield _named(
            "review",
            tenant,
            "conversation_id memory_id review_day reviewed_at rating source detail card_before card_after "
            "reviews_merged segment_id created_at updated_at",
            r,
        )
    for r in streams["pending_review"].take(cid):
        yield _named(
            "pending_review",
            tenant,
            "conversation_id memory_id query rank score retrieved_at consumed_at asked_in review_memory_id review_day",
            r,
        )
    for r in streams["fact"].take(cid):
        yield _fact(tenant, r, streams["history"].take(cid, r[1]))


def count_rows(
    conn: psycopg.Connection, tenant: str, conversation_id: str | None = None, user_id: str | None = None
) -> int:
    """How many records an export of this scope writes, about (for a progress bar)."""
    s = _scope(conversation_id, user_id)
    tables = ("conversation", "seq_gap", "episodic_memory", "episode_message", "memory_review", "pending_review")
    sql = " + ".join(f"(SELECT count(*) FROM {t} WHERE tenant_id = %(t)s{s})" for t in (*tables, "semantic_fact"))
    row = conn.execute(f"SELECT {sql}", {"t": tenant, "c": conversation_id, "u": user_id}).fetchone()
    return int(row[0]) if row else 0


def export_records(
    conn: psycopg.Connection,
    tenant: str,
    *,
    settings: Settings,
    conversation_id: str | None = None,
    user_id: str | None = None,
    now: datetime | None = None,
) -> Iterator[dict[str, Any]]:
    """The header (naming the configured embedding model), every record of the scope (the
    tenant, one conversation, or the conversations of one user), then the end record.
    ``conn``: an autocommit connection, used by nothing else while this runs."""
    yield header(
        tenant=tenant,
        conversation_id=conversation_id,
        user_id=user_id,
        embedding_model=settings.embedding_model,
        embedding_dim=settings.embedding_dim,
        exported_at=now or datetime.now(UTC),
    )
    written = 1
    params = {"t": tenant, "c": conversation_id, "u": user_id}
    with conn.transaction():
        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        streams: dict[str, _Stream] = {}
        cursors = []
        for n, (name, sql) in enumerate(_queries(conversation_id, user_id).items()):
            cursor = conn.cursor(name=f"memq_export_{n}")
            cursor.itersize = ITERSIZE
            cursor.execute(sql, params)
            cursors.append(cursor)
            streams[name] = _Stream(iter(cursor))
        try:
            for conversation in streams.pop("conversations").take():
                for record in _conversation_records(tenant, conversation, streams):
                    written += 1
                    yield record
        finally:
            for cursor in cursors:
                cursor.close()
    yield end(written)


def export_lines(records: Iterator[dict[str, Any]], size: int = 64) -> Iterator[str]:
    """The records as lines, joined ``size`` at a time (fewer, larger writes to a socket or file)."""
    while chunk := list(itertools.islice(records, size)):
        yield "".join(encode(r) for r in chunk)
