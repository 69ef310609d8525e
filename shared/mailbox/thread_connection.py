"""One connection per thread and client, kept, for ``scripts.run_queued``: the producer's
enqueue and the workers' look for other conversations' waiting messages.

Each call through redis-py's pool takes a connection out and puts it back: a lock, a pid
check and a poll of the socket for unread data each way, then the pipeline's own objects.
On a batch of 100 messages that was 30-40 µs of the ~0.9 ms ``add_messages`` takes. A thread
keeps its own connection instead (made by the client's pool, so with the same address,
credentials, TLS, timeouts, health checks and retry policy), used by one thread at a time,
checked before each use as the pool checks the ones it hands out.

It is replaced after a fork (the child never writes to its parent's socket) and dropped
after any error that may have left a reply unread (``call``), so it is never out of step.
The pool does not track it: when the thread ends or the client is gone it is closed as
garbage, and ``forget`` closes the calling thread's at once.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Sequence
from typing import Any, cast

import redis
from redis.connection import AbstractConnection
from redis.exceptions import ConnectionError, ResponseError, TimeoutError

_held: weakref.WeakKeyDictionary[redis.Redis, threading.local] = weakref.WeakKeyDictionary()
_registry = threading.Lock()


def _local(client: redis.Redis) -> threading.local:
    local = _held.get(client)
    if local is None:
        with _registry:
            local = _held.setdefault(client, threading.local())
    return local


def connection(client: redis.Redis) -> AbstractConnection:
    """The calling thread's connection of ``client`` (made on first use and after a fork)."""
    local = _local(client)
    conn: AbstractConnection | None = getattr(local, "conn", None)
    if conn is None or local.pid != os.getpid():
        conn = cast(AbstractConnection, client.connection_pool.make_connection())
        local.conn, local.pid = conn, os.getpid()
    return conn


def forget(client: redis.Redis) -> None:
    """Close and drop the calling thread's connection of ``client`` (a new one is made next)."""
    local = _local(client)
    conn = getattr(local, "conn", None)
    local.conn = None
    if conn is not None and local.pid == os.getpid():
        conn.disconnect()


def call(client: redis.Redis, commands: Sequence[tuple[Any, ...]]) -> list[Any]:
    """Send ``commands`` in one write and read their replies, each an error reply as its
    exception (``ResponseError``), like a non-transactional pipeline run with
    ``raise_on_error=False``. A lost connection or a timeout is retried by the client's retry
    policy, the whole batch again on a fresh connection (as redis-py's pipeline does); one
    the server closed while it was kept is made afresh first (as the pool does). Anything
    else that interrupts the exchange drops the connection and is raised."""
    conn = connection(client)
    try:  # what the pool checks on taking a connection out: closed by the server while kept
        if conn.can_read():  # (it reads as end of file) or, never expected, out of step
            conn.disconnect()
    except (ConnectionError, TimeoutError, OSError):
        conn.disconnect()

    def exchange() -> list[Any]:
        conn.send_packed_command(conn.pack_commands(commands))
        replies: list[Any] = []
        for _ in commands:
            try:
                replies.append(conn.read_response())
            except ResponseError as exc:
                replies.append(exc)
        return replies

    try:
        result: list[Any] = conn.retry.call_with_retry(exchange, lambda _error: conn.disconnect())
        return result
    except BaseException:
        forget(client)
        raise
