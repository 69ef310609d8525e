"""Re-embed stored messages with the current ``indexed_text`` (after a change of how
messages are indexed, or for messages stored before they had vectors). Runs in batches,
each its own transaction, so it can be stopped and started again; the vector leg skips
a message only while it has no vector."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import psycopg

from memq.shared.embeddings import Embedder
from memq.shared.messages import indexed_text


@dataclass(frozen=True)
class ReindexScope:
    tenant: str | None = None
    conversation_id: str | None = None
    missing_only: bool = True  # only messages without a vector

    def where(self) -> tuple[str, dict[str, str]]:
        clauses, params = ["TRUE"], {}
        if self.tenant is not None:
            clauses.append("tenant_id = %(tenant)s")
            params["tenant"] = self.tenant
        if self.conversation_id is not None:
            clauses.append("conversation_id = %(conversation)s")
            params["conversation"] = self.conversation_id
        if self.missing_only:
            clauses.append("embedding IS NULL")
        return " AND ".join(clauses), params


def count(conn: psycopg.Connection, scope: ReindexScope) -> int:
    where, params = scope.where()
    row = conn.execute(f"SELECT count(*) FROM episode_message WHERE {where}", params).fetchone()
    assert row is not None  # count(*) always gives a row
    n: int = row[0]
    return n


def _batches(conn: psycopg.Connection, scope: ReindexScope, size: int) -> Iterator[list[tuple[Any, ...]]]:
    """Keyset pages over (tenant, conversation, seq), so rows updated meanwhile are
    neither skipped nor read twice."""
    where, params = scope.where()
    after = ("", "", -1)
    while True:
        rows = conn.execute(
            f"SELECT tenant_id, conversation_id, seq, role, content, ts, metadata FROM episode_message "
            f"WHERE {where} AND (tenant_id, conversation_id, seq) > (%(t)s, %(c)s, %(s)s) "
            "ORDER BY tenant_id, conversation_id, seq LIMIT %(n)s",
            {**params, "t": after[0], "c": after[1], "s": after[2], "n": size},
        ).fetchall()
        if not rows:
            return
        yield rows
        after = rows[-1][:3]


def reindex_messages(
    conn: psycopg.Connection,
    embedder: Embedder,
    scope: ReindexScope,
    *,
    batch: int = 256,
    progress: Callable[[int], None] | None = None,
) -> int:
    """Re-embed the messages in ``scope``; returns how many were written."""
    done = 0
    for rows in _batches(conn, scope, batch):
        texts = [indexed_text({"role": r[3], "content": r[4], "timestamp": r[5], "metadata": r[6]}) for r in rows]
        vectors = embedder.embed(texts)
        with conn.transaction(), conn.cursor() as cur:
            cur.executemany(
                "UPDATE episode_message SET embedding = %s WHERE tenant_id = %s AND conversation_id = %s AND seq = %s",
                [(vectors[i], r[0], r[1], r[2]) for i, r in enumerate(rows)],
            )
        done += len(rows)
        if progress:
            progress(len(rows))
    return done
