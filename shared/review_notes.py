"""What each retrieval returned, written to ``pending_review`` off the request path.

A retrieval hands its note (tenant, query, time, memories, asked_in) to this process's
writer and returns; a daemon thread writes the notes queued meanwhile in one statement
on its own connection (``record_pending_many``). A retrieval therefore never waits on
PostgreSQL for its review notes; the review stage reads them when the conversation's
next segment ends, seconds or hours later.

What can be lost, and how it is said: notes queued when the process is killed
(``atexit`` writes what is queued on a normal exit; ``flush`` waits for the writer),
notes past ``MEMQ_REVIEW_NOTES_QUEUE_MAX`` while PostgreSQL is unreachable (counted and
logged), and notes for a memory forgotten before they were written (skipped). A lost
note costs one FSRS review, never a memory or a message.

After a fork (Celery's prefork pool) the child starts its own writer on first use.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import os
import threading
import time
from collections import deque

import psycopg
import structlog

from memq.shared.db.reviews import ReviewNote, record_pending_many
from memq.shared.settings import Settings

log = structlog.get_logger("memq.review_notes")

_BATCH = 500  # notes per statement at most


class ReviewNotes:
    """One writer per process (``review_notes(settings)``)."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._queue: deque[ReviewNote] = deque()
        self._cond = threading.Condition()
        self._queued = 0  # notes ever queued
        self._done = 0  # queued notes since written, skipped or refused
        self.dropped = 0  # notes lost (queue full, or refused by the database)
        self.batches = 0  # statements written
        self._thread: threading.Thread | None = None
        self._conn: psycopg.Connection | None = None
        self._closed = False
        self._flushing = 0  # callers waiting in ``flush``: write at once

    # --- the request path ---------------------------------------------------------------

    def add(self, note: ReviewNote) -> None:
        with self._cond:
            if len(self._queue) >= self._settings.review_notes_queue_max:
                self.dropped += 1
                log.warning(
                    "review_note_dropped",
                    reason="queue full (PostgreSQL slow or unreachable)",
                    queued=len(self._queue),
                    dropped=self.dropped,
                    tenant=note.tenant,
                )
                return
            self._queue.append(note)
            self._queued += 1
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="memq-review-notes", daemon=True)
                self._thread.start()
            if len(self._queue) == 1 or len(self._queue) >= _BATCH:  # wake an idle writer, or a lingering one when full
                self._cond.notify_all()

    def flush(self, timeout: float = 10.0) -> bool:
        """Wait until every note queued so far is written (or skipped); False on timeout."""
        deadline = time.monotonic() + timeout
        with self._cond:
            target = self._queued
            self._flushing += 1
            self._cond.notify_all()
            try:
                return self._wait_done(target, deadline)
            finally:
                self._flushing -= 1

    def _wait_done(self, target: int, deadline: float) -> bool:
        while self._done < target:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            self._cond.wait(left)
        return True

    # --- the writer ---------------------------------------------------------------------

    def _run(self) -> None:
        backoff = 0.05
        while True:
            with self._cond:
                while not self._queue and not self._closed:
                    self._cond.wait()
                if not self._queue:
                    return
                # linger a moment so that the notes of a burst of retrievals go in one statement
                deadline = time.monotonic() + self._settings.review_notes_linger_ms / 1000
                while not (self._closed or self._flushing or len(self._queue) >= _BATCH):
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    self._cond.wait(left)
                batch = list(itertools.islice(self._queue, _BATCH))
            try:
                self._write(batch)
            except (psycopg.OperationalError, psycopg.InterfaceError) as exc:  # PostgreSQL down: keep them, retry
                log.warning("review_notes_write_failed", error=str(exc)[:200], notes=len(batch), retry_in_s=backoff)
                self._reset_connection()
                time.sleep(backoff)
                backoff = min(5.0, backoff * 2)
                continue
            except psycopg.Error:  # one note the database refuses must not hold back the others
                self._write_singly(batch)
            backoff = 0.05
            with self._cond:
                for _ in batch:
                    self._queue.popleft()
                self._done += len(batch)
                self._cond.notify_all()

    def _write(self, batch: list[ReviewNote]) -> None:
        from memq.shared.db.tenant_scope import tenant_transaction

        if self._conn is None or self._conn.closed:
            from memq.shared.connections import pg_connect

            # the notes of every tenant: the tenant is set per transaction
            self._conn = pg_connect(self._settings, tenant=None, autocommit=True)
        self.batches += 1
        by_tenant: dict[str, list[ReviewNote]] = {}
        for note in batch:
            by_tenant.setdefault(note.tenant, []).append(note)
        written = 0
        for tenant, notes in by_tenant.items():
            with tenant_transaction(self._conn, tenant):
                written += record_pending_many(self._conn, notes)
        skipped = sum(len(n.hits) for n in batch) - written
        if skipped:
            log.info("review_notes_skipped", memories=skipped, reason="memory forgotten before the note was written")

    def _write_singly(self, batch: list[ReviewNote]) -> None:
        for note in batch:
            try:
                self._write([note])
            except psycopg.Error as exc:
                self.dropped += 1
                log.error("review_note_refused", error=str(exc)[:200], tenant=note.tenant, memories=len(note.hits))

    def _reset_connection(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):  # already broken
                conn.close()

    def close(self, timeout: float = 5.0) -> None:
        """Write what is queued, then stop the writer (at exit)."""
        self.flush(timeout)
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(timeout)
        self._reset_connection()


_writer: ReviewNotes | None = None
_lock = threading.Lock()


def review_notes(settings: Settings) -> ReviewNotes:
    """This process's writer (created on first use)."""
    global _writer
    with _lock:
        if _writer is None:
            _writer = ReviewNotes(settings)
        return _writer


def flush_review_notes(timeout: float = 10.0) -> bool:
    """Wait until this process's review notes are written (tests, the CLI, shutdown)."""
    return True if _writer is None else _writer.flush(timeout)


def _at_exit() -> None:
    if _writer is not None:
        _writer.close()


def _after_fork() -> None:
    global _writer, _lock
    _writer, _lock = None, threading.Lock()  # the parent's thread and connection are not the child's


atexit.register(_at_exit)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)
