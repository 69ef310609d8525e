"""After a forget, the bytes (``memq forget --compact``).

Forget deletes rows and keys, so nothing memq reads holds the conversation any more. The
bytes can outlive that in storage until the servers reuse the space: PostgreSQL keeps dead
tuples in table and index pages until a vacuum, and old row versions in its write-ahead log
until checkpoints recycle the segments; Redis keeps the deleted keys' commands in its
append-only file until it is rewritten (and in an RDB snapshot until the next one). For
those who must not keep them, ``compact``:

- rewrites every table forget touches (``VACUUM (FULL, ANALYZE)``: a new copy of the table
  and its indexes without the dead tuples; it holds an exclusive lock on each table while it
  runs, so retrieval and episode creation wait: run it off-peak);
- asks PostgreSQL for a ``CHECKPOINT`` (needs superuser or ``pg_checkpoint``; skipped and
  said so otherwise), after which WAL segments older than it can be recycled;
- has each Redis (the mailbox, every node of a Cluster, and the broker) rewrite its
  append-only file and, where it keeps snapshots, save a new one, and waits for the rewrite.

Backups and replicas made before are not touched: expire them by your retention policy
(docs/api.md, "Forget").
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import psycopg
import structlog

from memq.shared.forget import TOUCHED

log = structlog.get_logger("memq.forget")


@dataclass
class Compacted:
    tables: list[str] = field(default_factory=list)
    checkpoint: bool = False
    redis_rewritten: int = 0  # Redis servers whose append-only file was rewritten
    notes: list[str] = field(default_factory=list)  # what could not be done, and why


def compact(conn: psycopg.Connection, redis_servers: Sequence[Any], timeout: float = 300.0) -> Compacted:
    """``conn`` in autocommit (VACUUM cannot run in a transaction); ``redis_servers``: one
    client per server (``redis_servers`` gives them)."""
    done = Compacted()
    for table in TOUCHED:
        conn.execute(f"VACUUM (FULL, ANALYZE) {table}")
        done.tables.append(table)
    try:
        conn.execute("CHECKPOINT")
        done.checkpoint = True
    except psycopg.errors.InsufficientPrivilege:
        done.notes.append("CHECKPOINT skipped: the database role is neither superuser nor pg_checkpoint")
    for server in redis_servers:
        _wait_rewrite(server, timeout)  # one already running would refuse another
        server.bgrewriteaof()
        _wait_rewrite(server, timeout)
        if server.config_get("save").get("save"):  # snapshots configured: replace the last one too
            server.bgsave(schedule=True)
        done.redis_rewritten += 1
    log.info("forget_compacted", tables=len(done.tables), checkpoint=done.checkpoint, redis=done.redis_rewritten)
    return done


def redis_servers(*clients: Any) -> list[Any]:
    """One client per server behind ``clients`` (each node of a Redis Cluster), each server once
    (the mailbox and the broker are often the same Redis)."""
    servers: dict[tuple[Any, ...], Any] = {}
    for client in clients:
        get_nodes = getattr(client, "get_nodes", None)
        for server in [client.get_redis_connection(n) for n in get_nodes()] if get_nodes else [client]:
            kwargs = server.connection_pool.connection_kwargs
            servers.setdefault((kwargs.get("host"), kwargs.get("port"), kwargs.get("path")), server)
    return list(servers.values())


def _wait_rewrite(server: Any, timeout: float) -> None:
    """Until the server reports no append-only rewrite in progress or scheduled."""
    deadline = time.monotonic() + timeout
    while True:
        info = server.info("persistence")
        if not info.get("aof_rewrite_in_progress") and not info.get("aof_rewrite_scheduled"):
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"Redis did not finish rewriting its append-only file within {timeout:.0f} s")
        time.sleep(0.1)  # poll interval: Redis announces no end of a rewrite
