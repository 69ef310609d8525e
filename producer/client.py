"""The thin producer: validate, append to the conversation's Redis inbox with one Lua
script per conversation (one round trip per batch), and publish a drain task by name
when the script says none is queued yet.

If publishing fails after the script succeeded, the message is still safely queued:
the ``drain_queued`` mark stays and the workers' stalled-drain sweeper publishes the
task again, so nothing is lost and no error reaches a caller whose message was stored.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import redis
import structlog
from celery import Celery

from producer.validation import ValidMessage, check_conversation_id, validate_message
from shared import tasks
from shared.celery_config import celery_config
from shared.connections import redis_client, service_urls
from shared.errors import ServiceError, ValidationError
from shared.mailbox.codec import encode_payload, to_micros
from shared.mailbox.keys import ConversationKeys, GlobalKeys
from shared.mailbox.scripts import Scripts
from shared.settings import Settings, get_settings

log = structlog.get_logger("memq.producer")

_STATUS = {"a": "accepted", "c": "clamped", "d": "duplicate"}


@dataclass(frozen=True)
class AddResult:
    conversation_id: str
    message_id: str
    status: str  # "accepted" | "clamped" (accepted, timestamp raised to the previous one) | "duplicate"
    seq: int | None  # position in the conversation; None for a duplicate

    @property
    def accepted(self) -> bool:
        return self.status != "duplicate"


@dataclass(frozen=True)
class ConversationStatus:
    inbox: int
    buffer: int
    segments: int
    drain_queued: bool
    flush_requested: bool
    next_seq: int

    @property
    def idle(self) -> bool:
        """Nothing waits: every accepted message is in an episode."""
        return not (self.inbox or self.buffer or self.segments or self.drain_queued or self.flush_requested)


class Producer:
    def __init__(self, settings: Settings | None = None, client: redis.Redis | None = None):
        self.settings = settings or get_settings()
        self.redis = client or redis_client(self.settings)
        self.scripts = Scripts.register(self.redis)
        self.globals = GlobalKeys(self.settings.key_prefix)
        self._celery: Celery | None = None

    # -- public API ---------------------------------------------------------------
    def add_message(
        self,
        conversation_id: str,
        role: str,
        content: str,
        timestamp: datetime | str | None = None,
        message_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        *,
        tenant: str | None = None,
    ) -> AddResult:
        raw = {"conversation_id": conversation_id, "role": role, "content": content}
        for name, value in (("timestamp", timestamp), ("message_id", message_id), ("metadata", metadata)):
            if value is not None:
                raw[name] = dict(value) if name == "metadata" else value
        return self.add_messages([raw], tenant=tenant)[0]

    def add_messages(
        self,
        messages: Iterable[Mapping[str, Any]],
        *,
        conversation_id: str | None = None,
        tenant: str | None = None,
    ) -> list[AddResult]:
        """Validate the whole batch first (all or nothing), then queue it in one round trip.

        Each message is a mapping with ``role``, ``content`` and optionally
        ``conversation_id`` (or pass ``conversation_id=`` for all), ``timestamp``,
        ``message_id``, ``metadata``. Results come back in input order.
        """
        tenant = tenant or self.settings.tenant
        now = datetime.now(UTC)
        valid: list[ValidMessage] = []
        for index, raw in enumerate(messages):
            item = dict(raw)
            if conversation_id is not None:
                item.setdefault("conversation_id", conversation_id)
            valid.append(validate_message(item, self.settings, now, index=index))
        if not valid:
            return []

        received_us = to_micros(now)
        groups: dict[str, list[tuple[int, ValidMessage, str]]] = {}
        for index, msg in enumerate(valid):
            groups.setdefault(msg.conversation_id, []).append((index, msg, msg.message_id or uuid.uuid4().hex))

        pipe = self.redis.pipeline(transaction=False)
        order = list(groups)
        for conv in order:
            keys = ConversationKeys(self.settings.key_prefix, tenant, conv)
            args: list[Any] = [
                self.settings.out_of_order_policy,
                repr(time.time()),
                self.settings.dedup_ttl_days * 86400,
                keys.member,
            ]
            for _, msg, mid in groups[conv]:
                sent_us = to_micros(msg.timestamp) if msg.timestamp else received_us
                args += [mid, sent_us, encode_payload(mid, msg.role, msg.content, sent_us, received_us, msg.metadata)]
            self.scripts.enqueue(
                keys=[keys.inbox, keys.state, keys.ids, self.globals.active, self.globals.drains],
                args=args,
                client=pipe,
            )
        try:
            replies = pipe.execute()
        except redis.RedisError as exc:
            raise ServiceError(f"could not queue messages in Redis: {exc}") from exc

        results: list[AddResult | None] = [None] * len(valid)
        for conv, reply in zip(order, replies):
            group = groups[conv]
            if int(reply[0]) == -1:
                bad = group[int(reply[1])][0]
                raise ValidationError(
                    "is older than the conversation's last message and MEMQ_OUT_OF_ORDER_POLICY=reject "
                    "(nothing in this conversation's part of the batch was queued)",
                    field="timestamp",
                    index=bad,
                )
            for (index, _, mid), status, seq in zip(group, reply[1::2], reply[2::2]):
                results[index] = AddResult(conv, mid, _STATUS[status], int(seq) or None)
            if int(reply[0]) == 1:
                self._publish_drain(tenant, conv)
        return [r for r in results if r is not None]

    def flush(self, conversation_id: str, *, tenant: str | None = None, reason: str = "explicit") -> bool:
        """Ask the workers to close the conversation's open event into an episode once
        its inbox is drained. Returns False when there was nothing to flush."""
        tenant = tenant or self.settings.tenant
        check_conversation_id(conversation_id, self.settings)
        keys = ConversationKeys(self.settings.key_prefix, tenant, conversation_id)
        schedule, has_work = self.scripts.request_flush(
            keys=[keys.state, self.globals.drains, keys.inbox, keys.buffer],
            args=[repr(time.time()), keys.member, reason],
        )
        if schedule:
            self._publish_drain(tenant, conversation_id)
        return bool(has_work)

    def status(self, conversation_id: str, *, tenant: str | None = None) -> ConversationStatus:
        keys = ConversationKeys(self.settings.key_prefix, tenant or self.settings.tenant, conversation_id)
        pipe = self.redis.pipeline(transaction=False)
        pipe.llen(keys.inbox)
        pipe.llen(keys.buffer)
        pipe.hlen(keys.segments)
        pipe.hmget(keys.state, ["drain_queued", "flush_requested", "next_seq"])
        inbox, buffer, segments, (queued, flush, next_seq) = pipe.execute()
        return ConversationStatus(inbox, buffer, segments, queued is not None, flush is not None, int(next_seq or 0))

    def wait_idle(
        self, conversation_id: str, *, tenant: str | None = None, timeout: float = 300.0, on_progress=None
    ) -> ConversationStatus:
        """Block until every accepted message of the conversation is in an episode."""
        deadline = time.monotonic() + timeout
        while True:
            status = self.status(conversation_id, tenant=tenant)
            if on_progress:
                on_progress(status)
            if status.idle:
                return status
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"conversation {conversation_id!r} not idle after {timeout:.0f} s ({status}); "
                    "are workers running? (`memq worker`)"
                )
            time.sleep(0.2)

    # -- internals ----------------------------------------------------------------
    def _publish_drain(self, tenant: str, conversation_id: str) -> None:
        try:
            self.celery.send_task(tasks.EVENT_SEGMENTATION, args=[tenant, conversation_id])
        except Exception as exc:  # the message is stored; the sweeper re-publishes
            log.warning(
                "drain_publish_failed",
                conversation_id=conversation_id,
                error=str(exc),
                hint="message is queued; the stalled-drain sweeper will publish the task",
            )

    @property
    def celery(self) -> Celery:
        if self._celery is None:
            app = Celery("memq-producer", set_as_current=False)
            app.conf.update(celery_config(self.settings, service_urls(self.settings).redis_url))
            self._celery = app
        return self._celery


_default: Producer | None = None


def default_producer() -> Producer:
    global _default
    if _default is None:
        _default = Producer()
    return _default
