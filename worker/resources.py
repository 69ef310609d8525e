"""Per-process resources of a worker: the mailbox client and its scripts, PostgreSQL
connections, the embedder, the detector. Built lazily after Celery forks its pool
processes, once per process."""

from __future__ import annotations

import contextlib
import functools
import os
import threading
from collections.abc import Iterator

import psycopg

from memq.shared.celery_config import soft_time_limit
from memq.shared.connections import MailboxClient, mailbox_client, pg_connect, pg_owner_connect
from memq.shared.db.tenant_scope import scope, unscope
from memq.shared.embeddings import Embedder, LocalMiniLM, available_cpus, get_embedder
from memq.shared.mailbox.scripts import Scripts
from memq.shared.settings import Settings, SettingsKey, by_value, get_settings
from memq.worker.conversation_store import ConversationStore
from memq.worker.segmentation.detectors.base import Detector
from memq.worker.segmentation.detectors.registry import build_detector


@functools.lru_cache(maxsize=4)
def _mailbox(pid: int, key: SettingsKey) -> tuple[MailboxClient, Scripts]:
    client = mailbox_client(key.settings)
    return client, Scripts.register(client)


def settings() -> Settings:
    return get_settings()


def mailbox() -> tuple[MailboxClient, Scripts]:
    """(client, scripts) for this process."""
    return _mailbox(os.getpid(), by_value(settings()))


def store(tenant: str, conversation_id: str) -> ConversationStore:
    client, scripts = mailbox()
    return ConversationStore(client, scripts, settings(), tenant, conversation_id)


def database_timeouts(s: Settings) -> dict[str, int]:
    """PostgreSQL's own limits on a task's session, in milliseconds. A statement or a lock
    wait longer than half the task's soft time limit is cancelled by the server (a
    transient error: the task is retried) instead of being cut by the soft limit in the
    middle of a query, which would leave the query running on the server with the
    transaction's locks, ahead of every retry of the same conversation. A transaction
    left idle (its worker gone) is ended after the hard limit."""
    soft = soft_time_limit(s)
    return {
        "statement_timeout": max(1000, soft * 500),
        "lock_timeout": max(1000, soft * 500),
        "idle_in_transaction_session_timeout": max(1000, s.task_time_limit_seconds * 1000),
    }


# Connections kept between this process' tasks, as the owner with no tenant or scoped to
# the last task's tenant (every checkout sets the scope again), by the session limits they
# were opened with. A task used to open its own: a TCP handshake, authentication, the
# vector type's lookup and the scope (~3 ms and a PostgreSQL backend started and ended),
# some 170 times per 1,000 messages of the bench's pipeline. A process runs one task at a
# time; a task holds at most two at once (a tenant's and the owner's).
KEPT_CONNECTIONS = 2
_kept: dict[tuple[tuple[str, int], ...], list[psycopg.Connection]] = {}
_kept_pid = 0
_kept_lock = threading.Lock()


def _take(limits: tuple[tuple[str, int], ...]) -> psycopg.Connection | None:
    """A kept connection with these session limits that psycopg does not know to be closed."""
    global _kept_pid
    with _kept_lock:
        if _kept_pid != os.getpid():  # the parent's, inherited over a fork: never used (nor closed) here
            _kept.clear()
            _kept_pid = os.getpid()
        kept = _kept.get(limits, [])
        while kept:
            conn = kept.pop()
            if not conn.closed and not conn.broken:
                return conn
    return None


def _give_back(conn: psycopg.Connection, limits: tuple[tuple[str, int], ...]) -> None:
    """Kept when it is open and idle (no transaction left open) and there is room; else closed."""
    with _kept_lock:
        kept = _kept.setdefault(limits, [])
        idle = not conn.closed and conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        if idle and len(kept) < KEPT_CONNECTIONS and _kept_pid == os.getpid():
            kept.append(conn)
            return
    conn.close()


def _scoped(conn: psycopg.Connection, s: Settings, tenant: str | None) -> psycopg.Connection:
    """A kept connection under ``tenant``'s scope (None: back to the owner, no tenant)."""
    if tenant is None:
        unscope(conn)
        return conn
    return scope(conn, s.database_app_role, tenant)


@contextlib.contextmanager
def _session(tenant: str | None) -> Iterator[psycopg.Connection]:
    """An autocommit connection for a ``with`` block: scoped to ``tenant`` (None: the owner),
    a kept one when this process has one, kept again after a block that ended normally.
    Interrupted in a query (Celery's soft time limit, any exception raised from a signal
    handler), the query is cancelled on the server first (psycopg does so only for
    KeyboardInterrupt, and a query left running keeps its locks) and the connection closed."""
    s = settings()
    timeouts = database_timeouts(s)
    limits = tuple(sorted(timeouts.items()))
    conn = _take(limits)
    if conn is not None:
        try:
            _scoped(conn, s, tenant)
        except psycopg.OperationalError:  # closed by the server since (a restart, an idle limit): a new one
            conn.close()
            conn = None
    if conn is None:
        conn = (
            pg_connect(s, tenant=tenant, autocommit=True, timeouts=timeouts)
            if tenant is not None
            else pg_owner_connect(s, autocommit=True, timeouts=timeouts)
        )
    try:
        yield conn
    except BaseException:
        if conn.info.transaction_status == psycopg.pq.TransactionStatus.ACTIVE:
            with contextlib.suppress(Exception):
                conn.cancel_safe(timeout=2.0)
        conn.close()
        raise
    _give_back(conn, limits)


def database(tenant: str) -> contextlib.AbstractContextManager[psycopg.Connection]:
    """An autocommit connection scoped to ``tenant`` by row-level security (transactions
    are explicit: ``conn.transaction()``), for a ``with`` block (``_session``)."""
    return _session(tenant)


def owner_database() -> contextlib.AbstractContextManager[psycopg.Connection]:
    """An autocommit connection as the schema's owner, for work across tenants (the
    webhook sweep and deliveries, which are found by id), for a ``with`` block."""
    return _session(None)


# The pool processes of this worker, recorded by the main process before it forks them
# (``memq.worker.app``): the CPUs are shared among them.
POOL_PROCESSES = 1


def threads_per_process(cpus: int, processes: int) -> int:
    """Each pool process's share of the CPUs (at least one)."""
    return max(1, cpus // max(1, processes))


def embedder() -> Embedder:
    return get_embedder(settings(), threads=threads_per_process(available_cpus(), POOL_PROCESSES))


@functools.lru_cache(maxsize=8)
def _detector(key: SettingsKey) -> Detector:
    return build_detector(key.settings, key.settings.detector, embed_text=lambda text: embedder().embed([text])[0])


def detector() -> Detector:
    """The detector the settings name, built once per distinct settings' values."""
    return _detector(by_value(settings()))


def warm_up() -> None:
    """Load everything a task may need, once per process (see ``memq.worker.app``)."""
    import structlog

    from memq.shared.tokens import count_tokens

    s = settings()
    model = embedder()
    if isinstance(model, LocalMiniLM):  # a remote model is not called before a task needs it
        model.warm_up()
    detector()
    count_tokens("warm up", s.tokenizer_encoding)
    if s.llm_enabled:
        from memq.shared.llm import import_litellm

        import_litellm()
    mark_ready()
    structlog.get_logger("memq.worker").info(
        "worker_process_ready",
        pid=os.getpid(),
        llm=s.llm_model,
        detector=s.detector,
        embedding_threads=getattr(model, "threads", None),  # the local model's share of the CPUs
    )


READY_TTL_SECONDS = 86_400


def ready_key(prefix: str, host: str, pid: int) -> str:
    return f"{prefix}:workers:{host}:{pid}"


def mark_ready() -> None:
    """Record on the broker's Redis that this pool process is warm and takes tasks
    (``<prefix>:workers:<host>:<pid>`` = epoch seconds; what `memq soak` waits for)."""
    import socket
    import time

    from memq.shared.connections import redis_client

    with contextlib.suppress(Exception):  # bookkeeping only: never keep a worker from starting
        redis_client(settings()).set(
            ready_key(settings().key_prefix, socket.gethostname(), os.getpid()), repr(time.time()), ex=READY_TTL_SECONDS
        )
