"""The thin producer: validate, append to each conversation's Redis inbox with one Lua
script per conversation (one pipelined round trip per batch), and have a drain task
queued when the conversation has none: by the script itself, in the same atomic step,
when the broker is the mailbox's Redis (``memq.shared.task_message``), else published by
name when the script says so.

Exactly-once from the caller's side rests on message ids: every message gets one
before anything is sent (the caller's ``message_id``, or a fresh one), a repeat within
the dedup window is reported ``duplicate``, and PostgreSQL keeps each id once per
conversation for good. So when a batch fails half-way, ``BatchIncomplete.results`` says
per message what is known, and sending the unknown ones again with the same ids
(``retry_messages``) can neither lose nor duplicate anything.

If publishing the drain task (the second way) fails after the script succeeded, the
message is still safely queued: the conversation keeps its "drain queued" mark in its
shard's drains index, where the workers' stalled-work sweeper finds it and publishes the
task again.
"""

from __future__ import annotations

import operator
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, NamedTuple

import redis
import structlog
from celery import Celery
from redis.cluster import RedisCluster

from memq.producer.validation import ValidMessage, check_conversation_id, valid_conversation_id, validate_message
from memq.shared import publisher, task_message, tasks
from memq.shared.celery_config import celery_config
from memq.shared.connections import MailboxClient, mailbox_client, redis_url
from memq.shared.errors import BatchError, BatchIncomplete, BatchRejected, StorageFull, UserConflict, ValidationError
from memq.shared.ids import check_tenant, check_user_id
from memq.shared.mailbox.codec import encode_line, to_micros
from memq.shared.mailbox.keys import ConversationKeys, ShardKeys, conversation_keys
from memq.shared.mailbox.quota import asks_lease, enqueue_leased, quota_exceeded
from memq.shared.mailbox.replies import (
    MESSAGE_STATUSES,
    LeaseNeeded,
    OutOfOrder,
    OwnedByOtherUser,
    QuotaRefusal,
    decode_enqueue,
    decode_request_flush,
)
from memq.shared.mailbox.scripts import Scripts, run_queued
from memq.shared.mailbox.status import ConversationStatus, conversation_status
from memq.shared.metrics import count_messages, count_storage_full, metrics
from memq.shared.settings import Settings, get_settings
from memq.shared.storage_full import storage_full_cause, storage_full_text

log = structlog.get_logger("memq.producer")


class AddResult(NamedTuple):
    """What became of one message (immutable; a named tuple: building a frozen dataclass
    per message cost 30 µs of a 1 ms batch of 100)."""

    tenant: str
    conversation_id: str
    message_id: str
    # "accepted"; "clamped" (accepted, timestamp raised to the previous one's); "duplicate"
    # (this id was accepted before); "rejected" (refused, nothing of its conversation's part
    # written); "unknown" (Redis failed: maybe stored; send again with the same id)
    status: str

    @property
    def accepted(self) -> bool:
        return self.status in ("accepted", "clamped")

    @property
    def settled(self) -> bool:
        """Definitely stored once (now or earlier)."""
        return self.status in ("accepted", "clamped", "duplicate")


# AddResult's own __new__ is a Python function; tuple's, a third of the time, makes the same
# tuple (a batch of 100 made 100 of them)
_new_result = tuple.__new__
_status = operator.attrgetter("status")


NO_WORKER = (
    "no worker answered a ping: messages are kept in Redis, but no episode is made (and retrieval "
    "finds nothing new) until a worker runs: start one with `memq worker`"
)


class Producer:
    def __init__(self, settings: Settings | None = None, client: MailboxClient | None = None) -> None:
        self.settings = settings or get_settings()
        self.redis = client if client is not None else mailbox_client(self.settings)
        self.scripts = Scripts.register(self.redis)
        self._celery: Celery | None = None
        # The enqueue script queues a conversation's drain task itself where it can
        # (memq.shared.task_message): the broker is the mailbox's Redis, not a cluster.
        self._script_queues_drains = (
            self.settings.mailbox_redis_url is None
            and not isinstance(self.redis, RedisCluster)
            and not self.settings.task_sent_events
        )
        self._worker_seen: tuple[float, bool] | None = None  # (monotonic time of a yes, True)

    def keys(self, conversation_id: str, tenant: str | None = None) -> ConversationKeys:
        return conversation_keys(self.settings, tenant or self.settings.tenant, conversation_id)

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
        user_id: str | None = None,
    ) -> AddResult:
        raw: dict[str, Any] = {"conversation_id": conversation_id, "role": role, "content": content}
        for name, value in (("timestamp", timestamp), ("message_id", message_id), ("metadata", metadata)):
            if value is not None:
                raw[name] = dict(value) if name == "metadata" and isinstance(value, Mapping) else value
        return self.add_messages([raw], tenant=tenant, user_id=user_id)[0]

    def add_messages(
        self,
        messages: Iterable[Mapping[str, Any]],
        *,
        conversation_id: str | None = None,
        tenant: str | None = None,
        user_id: str | None = None,
    ) -> list[AddResult]:
        """Validate the whole batch first (all or nothing), then queue it in one round trip.

        Each message is a mapping with ``role``, ``content`` and optionally
        ``conversation_id`` (or pass ``conversation_id=`` for all), ``timestamp``,
        ``message_id``, ``metadata``, ``tenant`` (default: ``tenant=`` or
        ``MEMQ_TENANT``) and ``user_id`` (or pass ``user_id=`` for all): the user the
        conversation belongs to, set by the first message naming one; a message naming
        another user is refused (``UserConflict``, nothing of its conversation's part
        written). Results come back in input order. Raises ``ValidationError``
        (nothing written), ``BatchRejected`` (``UserConflict``), ``QuotaExceeded`` (a tenant quota
        refused a conversation's part), ``StorageFull`` (Redis has no room: nothing of the refused
        parts written) or ``BatchIncomplete`` (each with exact per-message ``results``).
        """
        batch = list(messages)
        try:
            batch, users = self._split_users(batch, user_id)
            valid = self._validate(batch, conversation_id, tenant)
            group_users = self._group_users(valid, users)
        except ValidationError:
            metrics().messages.labels(outcome="refused").inc(len(batch))
            raise
        if not valid:
            return []
        try:
            results = self._queue(valid, group_users)
        except (BatchError, StorageFull) as exc:
            count_messages(map(_status, exc.results))
            raise
        count_messages(map(_status, results))
        return results

    def _validate(self, batch: list[Any], conversation_id: str | None, tenant: str | None) -> list[ValidMessage]:
        """Every message checked, or ValidationError naming the first bad one."""
        default_tenant = check_tenant(tenant or self.settings.tenant)
        # A default conversation id that is not valid is refused only for a message using it.
        checked = conversation_id is None or valid_conversation_id(conversation_id, self.settings)
        now = datetime.now(UTC)
        valid: list[ValidMessage] = []
        for index, raw in enumerate(batch):
            if type(raw) is not dict:
                if not isinstance(raw, Mapping):
                    raise ValidationError(
                        f"must be a mapping of message fields, not a {type(raw).__name__}", index=index
                    )
                raw = dict(raw)
            valid.append(
                validate_message(
                    raw,
                    self.settings,
                    now,
                    index=index,
                    tenant=default_tenant,
                    conversation_id=conversation_id,
                    defaults_checked=checked,
                )
            )
        return valid

    def _split_users(self, batch: list[Any], user_id: str | None) -> tuple[list[Any], list[str | None]]:
        """The messages without their ``user_id`` field, and each one's user (checked)."""
        default = None if user_id is None else check_user_id(user_id, self.settings.conversation_id_max_length)
        rest: list[Any] = []
        users: list[str | None] = []
        for index, raw in enumerate(batch):
            user = default
            if (type(raw) is dict or isinstance(raw, Mapping)) and "user_id" in raw:
                raw = dict(raw)
                named = raw.pop("user_id")
                if named is not None:
                    user = check_user_id(named, self.settings.conversation_id_max_length, index)
            rest.append(raw)
            users.append(user)
        return rest, users

    @staticmethod
    def _group_users(valid: list[ValidMessage], users: list[str | None]) -> dict[tuple[str, str], str]:
        """The user each conversation's part names; two users for one conversation are refused."""
        named: dict[tuple[str, str], str] = {}
        for index, (msg, user) in enumerate(zip(valid, users, strict=True)):
            if user is None:
                continue
            key = (msg.tenant, msg.conversation_id)
            if named.setdefault(key, user) != user:
                raise ValidationError(
                    f"names user {user!r} but an earlier message of conversation {msg.conversation_id!r} "
                    f"names {named[key]!r}: a conversation belongs to one user",
                    field="user_id",
                    index=index,
                )
        return named

    def _queue(self, valid: list[ValidMessage], users: Mapping[tuple[str, str], str] | None = None) -> list[AddResult]:
        """The validated batch onto Redis in one round trip, each message's result in order."""
        users = users or {}

        # one pass: each message's id, the conversation it goes to, its line of the script's batch
        ids: list[str] = []
        groups: dict[tuple[str, str], list[int]] = {}
        batches: dict[tuple[str, str], list[str]] = {}
        for index, msg in enumerate(valid):
            message_id = msg.message_id or uuid.uuid4().hex
            ids.append(message_id)
            key = (msg.tenant, msg.conversation_id)
            if (group := groups.get(key)) is None:
                group = groups[key] = []
                batches[key] = []
            group.append(index)
            sent_us = None if msg.timestamp is None else to_micros(msg.timestamp)
            batches[key].append(encode_line(message_id, msg.role, msg.content, sent_us, msg.metadata))

        order = list(groups)
        window_ms = int(self.settings.dedup_ttl_days * 86_400_000)
        calls: list[tuple[list[str], list[Any]]] = []
        owners: list[tuple[str, ShardKeys]] = []  # each call's tenant and shard (its quota lease)
        sender = task_message.origin() if self._script_queues_drains else ""
        for tenant_id, conv in order:
            keys = conversation_keys(self.settings, tenant_id, conv)
            args: list[Any] = [
                self.settings.out_of_order_policy,
                window_ms,
                keys.member,
                "\n".join(batches[(tenant_id, conv)]),
                users.get((tenant_id, conv), ""),
            ]
            script_keys = [
                keys.inbox,
                keys.state,
                keys.ids,
                keys.shard.active,
                keys.shard.drains,
                keys.shard.quota_lease(tenant_id),
            ]
            owners.append((tenant_id, keys.shard))
            if sender:
                script_keys.append(tasks.SEGMENTATION_QUEUE)
                args.append(task_message.drain_message(tenant_id, conv, reply_to=self.celery.thread_oid, sender=sender))
            calls.append((script_keys, args))
        refused: dict[int, QuotaRefusal] = {}  # call -> the quota that refused it
        try:
            replies = run_queued(self.redis, self.scripts.enqueue, calls)  # one round trip
        except redis.RedisError as exc:
            replies = [exc] * len(order)
        else:
            try:  # a call whose shard had no lease of its tenant's quotas wrote nothing: lease, send again
                refused = enqueue_leased(self.redis, self.scripts, self.settings, calls, owners, replies)
            except redis.RedisError as exc:
                replies = [exc if asks_lease(reply) else reply for reply in replies]
        replied = time.monotonic()
        published = True

        # Every message is in exactly one group, and each group's branch below sets the
        # result of each of its messages once.
        results: list[AddResult] = [None] * len(valid)  # type: ignore[list-item]  # all set below
        rejected: tuple[int, str] | None = None
        conflict: tuple[int, str, str, str] | None = None  # (index, conversation, owner, named)
        failures: list[str] = []
        full: str | None = None  # what a server had no room for (StorageFull's cause)
        over: tuple[int, str, QuotaRefusal] | None = None  # (index, conversation, the quota refusing it)
        for call, ((tenant_id, conv), raw_reply) in enumerate(zip(order, replies, strict=True)):
            group = groups[(tenant_id, conv)]
            no_room = storage_full_cause(raw_reply) if isinstance(raw_reply, Exception) else None
            if call in refused or no_room is not None:
                # Nothing of this conversation's part was written (a script refused for want of room
                # refuses at its first write).
                for index in group:
                    results[index] = AddResult(tenant_id, conv, ids[index], "rejected")
                if call in refused:
                    over = over or (group[0], conv, refused[call])
                else:
                    full = full or no_room
                continue
            reply = raw_reply if isinstance(raw_reply, Exception) else decode_enqueue(raw_reply)
            if isinstance(reply, (Exception, LeaseNeeded)):  # (a lease: other producers kept taking it)
                for index in group:
                    results[index] = AddResult(tenant_id, conv, ids[index], "unknown")
                failures.append(f"{tenant_id}/{conv}: {reply}")
                # Maybe stored, with its drain marked queued but never published: publish one
                # now (a spare drain is harmless; if this fails too, the sweeper finds the mark).
                self._publish_drain(tenant_id, conv)
                continue
            if isinstance(reply, OwnedByOtherUser):
                for index in group:
                    results[index] = AddResult(tenant_id, conv, ids[index], "rejected")
                conflict = conflict or (group[0], conv, reply.owner, users[(tenant_id, conv)])
                continue
            if isinstance(reply, OutOfOrder):
                bad = group[reply.index]
                for index in group:
                    results[index] = AddResult(tenant_id, conv, ids[index], "rejected")
                rejected = rejected or (bad, conv)
                continue
            for index, status in zip(group, reply.statuses, strict=True):
                results[index] = _new_result(AddResult, (tenant_id, conv, ids[index], MESSAGE_STATUSES[status]))
            # A fresh id can only be a "duplicate" when the client library re-sent this very
            # call after a timeout: the first send stored it and marked a drain queued whose
            # publication this reply no longer asks for. Publish one (a spare is harmless).
            resent = reply.has_duplicates and any(
                valid[index].message_id is None and results[index].status == "duplicate" for index in group
            )
            if reply.publish_drain or resent:
                published = self._publish_drain(tenant_id, conv) and published

        if not published or time.monotonic() - replied > self.settings.producer_confirm_after_ms / 1000:
            failures += self._confirm(results, groups)
        if failures:
            raise BatchIncomplete(
                f"Redis failed while queueing {len(failures)} of {len(order)} conversation(s) ({failures[0]}); "
                "messages with status 'unknown' may or may not be stored: send them again with the same "
                "message ids (BatchIncomplete.retry_messages) and each is stored exactly once",
                results,
            )
        if full is not None:
            count_storage_full(full)  # the operator's signal, wherever the producer runs
            log.warning("storage_full", cause=full, conversations=len(order))
            raise StorageFull(
                f"{storage_full_text(full)}: nothing of {sum(r.status == 'rejected' for r in results)} message(s) was "
                "queued; send them again (same message ids) once the operator has made room (see docs/operations.md)",
                cause=full,
                results=results,
            )
        if over is not None:
            raise quota_exceeded(over, results)
        if conflict is not None:
            index, conv, owner, named = conflict
            raise UserConflict(
                f"conversation {conv!r} belongs to user {owner!r}, not {named!r}: nothing of that "
                f"conversation's part of the batch was queued; send it with user_id={owner!r} (or without a "
                "user), use another conversation id, or move the conversation first "
                f"(`memq conversations move {conv} --user {named}`; see .results for the others)",
                results,
                index=index,
            )
        if rejected is not None:
            index, conv = rejected
            raise BatchRejected(
                f"message #{index}: timestamp: is older than conversation {conv!r}'s last message and "
                "MEMQ_OUT_OF_ORDER_POLICY=reject (nothing of that conversation's part of the batch was queued; "
                "see .results for the others)",
                results,
                index=index,
            )
        return results

    def flush(self, conversation_id: str, *, tenant: str | None = None, reason: str = "explicit") -> bool:
        """Ask the workers to close the conversation's open event into an episode once
        its inbox is drained. Returns False when there was nothing to flush."""
        tenant = check_tenant(tenant or self.settings.tenant)
        check_conversation_id(conversation_id, self.settings)
        keys = conversation_keys(self.settings, tenant, conversation_id)
        try:
            reply = self.scripts.request_flush(
                keys=[keys.state, keys.shard.drains, keys.inbox, keys.buffer, keys.shard.active],
                args=[keys.member, reason, ""],
            )
        except redis.ResponseError as exc:
            if (cause := storage_full_cause(exc)) is None:
                raise
            raise StorageFull(
                f"{storage_full_text(cause)}: the flush was not recorded; ask again once the operator has made room",
                cause=cause,
            ) from exc
        requested = decode_request_flush(reply)
        if requested.publish_drain:
            self._publish_drain(tenant, conversation_id)
        return requested.has_work

    def status(self, conversation_id: str, *, tenant: str | None = None) -> ConversationStatus:
        tenant = check_tenant(tenant or self.settings.tenant)
        check_conversation_id(conversation_id, self.settings)
        return conversation_status(self.redis, conversation_keys(self.settings, tenant, conversation_id))

    def wait_idle(
        self,
        conversation_id: str,
        *,
        tenant: str | None = None,
        timeout: float = 300.0,
        on_progress: Callable[[ConversationStatus], object] | None = None,
    ) -> ConversationStatus:
        """Block until every accepted message of the conversation is in an episode (or
        in the quarantine)."""
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

    def worker_answers(self, *, timeout: float = 0.5, cache_seconds: float = 10.0) -> bool:
        """Whether a worker answers a ping (Celery's broadcast; the first reply suffices).
        Accepting and flushing messages does not need a worker, but nothing becomes an
        episode until one runs: callers warn with ``NO_WORKER``. A yes is kept for
        ``cache_seconds`` so that asking on every flush stays cheap; a no is asked again (a
        worker may have started since)."""
        now = time.monotonic()
        if self._worker_seen is not None and now - self._worker_seen[0] < cache_seconds:
            return True
        try:
            answered = bool(self.celery.control.ping(timeout=timeout, limit=1))
        except Exception as exc:  # a broker that does not answer: no worker can be reached either
            log.warning("worker_ping_failed", error=type(exc).__name__)
            answered = False
        self._worker_seen = (now, answered) if answered else None
        return answered

    # -- internals ----------------------------------------------------------------
    def _publish_drain(self, tenant: str, conversation_id: str) -> bool:
        try:
            publisher.drain(self.celery, tenant, conversation_id)
            return True
        except Exception as exc:  # the message is stored; the sweeper re-publishes
            log.warning(
                "drain_publish_failed",
                conversation_id=conversation_id,
                error=str(exc),
                hint="message is queued; the sweep after the workers reconnect (or the stalled-work sweeper) "
                "publishes the task",
            )
            return False

    def _confirm(self, results: list[AddResult], groups: dict[tuple[str, str], list[int]]) -> list[str]:
        """Check that the messages Redis accepted (or knew) are still remembered by id. Called
        when something went wrong after Redis replied (a drain could not be published, or
        publishing stalled): a Redis that crashed and came back in between can have lost
        its last second of writes, and "accepted" must not be said of what it lost. The
        script writes a message's id and its inbox entry together, and a Redis restored
        from its AOF holds a prefix of what it executed, so the id being there means the
        message is. What is gone, or cannot be checked, becomes "unknown" (send it again
        with the same id). Returns the failures to report."""
        failures: list[str] = []
        for (tenant_id, conv), group in groups.items():
            settled = [i for i in group if results[i].settled]
            if not settled:
                continue
            try:
                scores = self.redis.zmscore(self.keys(conv, tenant_id).ids, [results[i].message_id for i in settled])
            except redis.RedisError as exc:
                gone, failure = settled, f"{tenant_id}/{conv}: could not confirm what Redis accepted: {exc}"
            else:
                gone = [i for i, score in zip(settled, scores) if score is None]
                failure = f"{tenant_id}/{conv}: {len(gone)} accepted message(s) were lost by a Redis restart"
                if gone:
                    log.warning(
                        "accepted_messages_lost_by_redis", tenant=tenant_id, conversation_id=conv, lost=len(gone)
                    )
            if gone:
                failures.append(failure)
                for i in gone:
                    results[i] = results[i]._replace(status="unknown")
        return failures

    @property
    def celery(self) -> Celery:
        if self._celery is None:
            app = Celery("memq-producer", set_as_current=False)
            app.conf.update(celery_config(self.settings, redis_url(self.settings)))
            self._celery = app
        return self._celery


_default: Producer | None = None


def default_producer() -> Producer:
    global _default
    if _default is None:
        _default = Producer()
    return _default
