"""Errors memq raises on purpose. Each message says what to do about it."""

from typing import Any


class MemqError(Exception):
    """Base class of memq's own errors."""


class ConfigError(MemqError):
    """Settings are missing or inconsistent."""


class ServiceError(MemqError):
    """Redis or PostgreSQL cannot be reached or started."""


class ValidationError(MemqError, ValueError):
    """Input refused at the edge; nothing was written."""

    def __init__(self, message: str, *, field: str | None = None, index: int | None = None):
        where = ""
        if index is not None:
            where += f"message #{index}: "
        if field:
            where += f"{field}: "
        super().__init__(where + message)
        self.field = field
        self.index = index


class BatchError(MemqError):
    """Part of a batch was not accepted. ``results`` has one entry per input message, in
    order, with an exact status; ``unknown`` ones may or may not have been stored, and
    are safe to send again with the same ``message_id`` (a repeat is a duplicate)."""

    def __init__(self, message: str, results: list[Any]) -> None:
        super().__init__(message)
        self.results = results

    def retry_messages(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The input messages not definitely accepted, each with the message id it was
        sent under, ready to be sent again."""
        return [
            {**m, "message_id": r.message_id, "tenant": r.tenant, "conversation_id": r.conversation_id}
            for m, r in zip(messages, self.results)
            if r.status in ("unknown", "failed")
        ]


class BatchRejected(BatchError, ValidationError):
    """A conversation's part of the batch was refused (MEMQ_OUT_OF_ORDER_POLICY=reject);
    other conversations' parts may have been accepted (see ``results``)."""

    def __init__(self, message: str, results: list[Any], *, index: int | None = None) -> None:
        BatchError.__init__(self, message, results)
        self.field = "timestamp"
        self.index = index


class UserConflict(BatchRejected):
    """A conversation's part of the batch named a user other than the one that owns the
    conversation: nothing of that part was written (HTTP 409)."""

    def __init__(self, message: str, results: list[Any], *, index: int | None = None) -> None:
        super().__init__(message, results, index=index)
        self.field = "user_id"


class BatchIncomplete(BatchError, ServiceError):
    """Redis failed during the batch: some conversations' parts may have been stored."""


class QuotaExceeded(BatchError):
    """A tenant quota (``limit``: "messages_per_day" or "stored_messages", set by ``setting``
    or by `memq quota set`) refused a conversation's part of the batch: nothing of that part
    was written; other conversations' parts may have been (see ``results``). Sending again
    does not help until the day turns (UTC), messages are forgotten or the limit is raised."""

    def __init__(self, message: str, results: list[Any], *, limit: str, setting: str) -> None:
        super().__init__(message, results)
        self.limit = limit
        self.setting = setting


class StorageFull(ServiceError):
    """A server refuses writes for want of room: Redis at its maxmemory under noeviction
    (``cause`` "redis_out_of_memory"), Redis unable to write its AOF or snapshot
    ("redis_cannot_persist"), PostgreSQL unable to extend a file ("postgres_disk_full").
    Nothing of the refused write was stored; send it again once room is made. ``results``:
    a batch's per-message results, when it was one."""

    def __init__(self, message: str, *, cause: str, results: list[Any] | None = None) -> None:
        super().__init__(message)
        self.cause = cause
        self.results = results or []


class NotFound(MemqError):
    """No such thing in the caller's tenant (another tenant's is reported the same way).
    ``field``: the argument that named it."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class Busy(MemqError):
    """The resource is held by other work right now; the same request later will succeed."""
