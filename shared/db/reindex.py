"""Re-embed stored messages with the current ``indexed_text`` (after a change of how
messages are indexed, or for messages stored before they had vectors), and compute
episodes' vectors again (``reindex_episodes``). Runs in batches, each its own
transaction, so it can be stopped and started again; the vector leg skips a message only
while it has no vector."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import psycopg

from memq.shared.embeddings import Embedder, episode_vector, summary_is_embedded
from memq.shared.messages import indexed_text


@dataclass(frozen=True)
class ReindexScope:
    tenant: str | None = None
    conversation_id: str | None = None
    missing_only: bool = True  # only messages without a vector

    def where(self, alias: str = "") -> tuple[str, dict[str, str]]:
        """The SQL condition and its parameters; ``alias``: the table's alias in the query."""
        at = f"{alias}." if alias else ""
        clauses, params = ["TRUE"], {}
        if self.tenant is not None:
            clauses.append(f"{at}tenant_id = %(tenant)s")
            params["tenant"] = self.tenant
        if self.conversation_id is not None:
            clauses.append(f"{at}conversation_id = %(conversation)s")
            params["conversation"] = self.conversation_id
        if self.missing_only:
            clauses.append(f"{at}embedding IS NULL")
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


def count_episodes(conn: psycopg.Connection, scope: ReindexScope) -> int:
    where, params = ReindexScope(scope.tenant, scope.conversation_id, missing_only=False).where()
    row = conn.execute(f"SELECT count(*) FROM episodic_memory WHERE {where}", params).fetchone()
    assert row is not None  # count(*) always gives a row
    n: int = row[0]
    return n


def reindex_episodes(
    conn: psycopg.Connection,
    embedder: Embedder,
    scope: ReindexScope,
    summary_weight: float,
    *,
    batch: int = 64,
    progress: Callable[[int], None] | None = None,
) -> int:
    """Compute the vectors of the episodes in ``scope`` again as episode creation does now
    (``episode_vector``: its messages' mean, blended with an LLM summary's embedding), after an
    upgrade changed how episodes are indexed. Keyset pages over the episode id, each its
    own transaction; returns how many were written."""
    where, params = ReindexScope(scope.tenant, scope.conversation_id, missing_only=False).where("e")
    after, done = "00000000-0000-0000-0000-000000000000", 0
    while True:
        rows = conn.execute(
            f"SELECT e.id, e.summary, e.summary_source, (SELECT array_agg(m.embedding ORDER BY m.seq) "
            "FROM episode_message m "
            "WHERE m.episode_id = e.id AND m.embedding IS NOT NULL) "
            f"FROM episodic_memory e WHERE {where} "
            "AND e.id > %(after)s ORDER BY e.id LIMIT %(n)s",
            {**params, "after": after, "n": batch},
        ).fetchall()
        if not rows:
            return done
        messages = [np.stack([v.to_numpy() for v in r[3]]) if r[3] else None for r in rows]
        embedded = [i for i, r in enumerate(rows) if summary_is_embedded(r[2], len(r[3] or ()))]
        summaries: list[np.ndarray | None] = [None] * len(rows)
        for i, v in zip(embedded, embedder.embed([rows[i][1] for i in embedded]) if embedded else []):
            summaries[i] = v
        vectors = [episode_vector(summaries[i], messages[i], summary_weight) for i in range(len(rows))]
        with conn.transaction(), conn.cursor() as cur:
            cur.executemany(
                "UPDATE episodic_memory SET embedding = %s WHERE id = %s", [(v, r[0]) for v, r in zip(vectors, rows)]
            )
        done += len(rows)
        after = rows[-1][0]
        if progress:
            progress(len(rows))
