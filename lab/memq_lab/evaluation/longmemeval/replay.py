"""Push LongMemEval haystacks through the real producer to real Celery workers, one tenant
per question (sessions recur across questions: one question's memory must never see
another's), one conversation per session, every conversation owned by the question's one
user, and wait until every turn is in an episode.

A turn is sent with its role (user or assistant: both are memory), its session's start
plus a per-turn offset as its time, and ``turn_key(session, index)`` as its message id,
so a repeated replay adds nothing and a returned message names the turn it is.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from memq_lab.evaluation.longmemeval.data import Question, Session

USER_ID = "user"  # every question's haystack is one user's history
TENANT_PREFIX = "lme-"
BATCH = 100  # messages per producer call
LOOK_AHEAD = 100  # conversations found busy before a pass of the wait stops asking


def tenant_of(question: Question, prefix: str = TENANT_PREFIX) -> str:
    """The tenant a question's haystack is replayed into (a tenant id: at most 64 of
    ``[A-Za-z0-9_-]``)."""
    safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in question.id)
    return (prefix + safe)[:64]


def messages_of(session: Session) -> list[dict[str, Any]]:
    return [
        {
            "conversation_id": session.id,
            "role": t.role if t.role in ("user", "assistant") else "user",
            "content": t.content,
            "timestamp": t.at.isoformat(),
            "message_id": t.key,
        }
        for t in session.turns
        if t.content.strip()  # the producer refuses an empty message; no evidence turn is one
    ]


def sent_turns(question: Question) -> int:
    """How many of the question's turns a replay sends (``messages_of``)."""
    return sum(len(messages_of(s)) for s in question.sessions)


@dataclass
class ReplayTimes:
    messages: int
    enqueue_s: float
    process_s: float  # segmentation and episode creation, until every conversation is idle

    @property
    def messages_per_second(self) -> float:
        return self.messages / max(1e-9, self.enqueue_s + self.process_s)


def send(producer: Any, tenant: str, session: Session) -> int:
    """Enqueue a session's turns and flush it (as an agent closing a chat does); how many
    were sent."""
    batch = messages_of(session)
    for i in range(0, len(batch), BATCH):
        producer.add_messages(batch[i : i + BATCH], tenant=tenant, user_id=USER_ID)
    if batch:
        producer.flush(session.id, tenant=tenant)
    return len(batch)


def replay(
    producer: Any,
    questions: Sequence[Question],
    on_progress: Callable[[int, int], None],
    *,
    prefix: str = TENANT_PREFIX,
    timeout: float = 3600.0,
    before_session: Callable[[str, Session], None] | None = None,
) -> ReplayTimes:
    """Enqueue every session of every question, then wait until every conversation is idle;
    ``on_progress(turns in episodes, turns sent)``. With ``before_session(tenant,
    session)`` (an agent's retrieval at the start of a chat), one session at a time: each
    is in episodes before the next one's retrieval, as in a user's life."""
    started = time.monotonic()
    if before_session is not None:
        total = sum(len(messages_of(s)) for q in questions for s in q.sessions)
        done = 0
        for q in questions:
            tenant = tenant_of(q, prefix)
            for s in q.sessions:
                before_session(tenant, s)
                done += send(producer, tenant, s)
                producer.wait_idle(s.id, tenant=tenant, timeout=timeout)
                on_progress(done, total)
        return ReplayTimes(total, 0.0, time.monotonic() - started)
    pending: dict[tuple[str, str], int] = {}
    for q in questions:
        tenant = tenant_of(q, prefix)
        for s in q.sessions:
            sent = send(producer, tenant, s)
            if sent:
                pending[(tenant, s.id)] = sent
    enqueued = time.monotonic()
    total = sum(pending.values())
    done = 0
    deadline = enqueued + timeout
    while pending:
        busy = 0
        for key in list(pending):  # in the order sent, which is about the order workers take them
            if producer.status(key[1], tenant=key[0]).idle:
                done += pending.pop(key)
            else:
                busy += 1
                if busy >= LOOK_AHEAD:  # the rest wait behind these: asking after each is wasted
                    break
        on_progress(done, total)
        if not pending:
            break
        if time.monotonic() > deadline:
            raise TimeoutError(f"{len(pending)} conversations not idle after {timeout:.0f} s; are workers running?")
        time.sleep(1.0)
    return ReplayTimes(total, enqueued - started, time.monotonic() - enqueued)
