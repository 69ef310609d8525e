"""The activity log's entries (pure): who did what in a tenant. Storage is
``shared/db/activity.py`` (migration 0019); docs/isolation.md describes the log.

An entry is an action (a dotted name, ``ACTIONS``), its actor and the ids it named, with
counts: never message content, a key or a webhook's URL. The actor is an API key's id for
a caller of the API (``api`` when the API runs without keys, ``MEMQ_API_AUTH=false``), or
``cli`` with the OS user as ``detail`` for a command.

A forgotten conversation's or user's id does not stay in the log: every entry naming it
keeps ``hashed_id(salt, id)`` instead, HMAC-SHA256 with the deployment's secret salt. Who
knows the id (and may read the salt: the deployment) finds its entries by the hash; the
hash does not give the id back. A hashed id starts with ``HASH_PREFIX``, whose ``/`` no
conversation or user id has, so the two are never mistaken for each other."""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from memq.shared.errors import ValidationError

KEY_CREATE = "key.create"
KEY_REVOKE = "key.revoke"
CONVERSATION_FORGET = "conversation.forget"
USER_FORGET = "user.forget"
EXPORT = "export"
IMPORT = "import"
WEBHOOK_CREATE = "webhook.create"
WEBHOOK_DELETE = "webhook.delete"
ACTIONS = (
    KEY_CREATE,
    KEY_REVOKE,
    CONVERSATION_FORGET,
    USER_FORGET,
    EXPORT,
    IMPORT,
    WEBHOOK_CREATE,
    WEBHOOK_DELETE,
)

CLI = "cli"  # a command of the CLI; its detail is the OS user
API = "api"  # a caller of the API without a key (MEMQ_API_AUTH=false)
HASH_PREFIX = "hmac-sha256/"
_HASHED = re.compile(re.escape(HASH_PREFIX) + "[0-9a-f]{64}")
_CURSOR = re.compile(r"[1-9][0-9]{0,18}")


@dataclass(frozen=True)
class Actor:
    name: str  # an API key's id, CLI or API
    detail: str | None = None  # the OS user of a CLI command


def cli_actor(os_user: str) -> Actor:
    return Actor(CLI, os_user)


def api_actor(key_id: str | None) -> Actor:
    """The caller of the API: its key's id, or API when it needs no key."""
    return Actor(key_id) if key_id else Actor(API)


@dataclass(frozen=True)
class Entry:
    action: str
    actor: Actor
    conversation_id: str | None = None
    user_id: str | None = None
    key_id: str | None = None
    webhook_id: str | None = None
    counts: Mapping[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.action not in ACTIONS:
            raise ValueError(f"{self.action!r} is no activity action; one of {', '.join(ACTIONS)}")
        bad = {k: v for k, v in self.counts.items() if isinstance(v, bool) or not isinstance(v, int) or v < 0}
        if bad:
            raise ValueError(f"counts are whole numbers from 0: {bad}")


@dataclass(frozen=True)
class Recorded:
    """An entry as the log holds it."""

    id: int
    at: datetime
    entry: Entry

    def to_json(self) -> dict[str, Any]:
        e = self.entry
        return {
            "id": str(self.id),
            "at": self.at.isoformat(),
            "action": e.action,
            "actor": e.actor.name,
            "actor_detail": e.actor.detail,
            "conversation_id": e.conversation_id,
            "user_id": e.user_id,
            "key_id": e.key_id,
            "webhook_id": e.webhook_id,
            "counts": dict(e.counts),
        }


# --- the entries of each action ----------------------------------------------------------------


def key_created(actor: Actor, key_id: str) -> Entry:
    return Entry(KEY_CREATE, actor, key_id=key_id)


def key_revoked(actor: Actor, key_id: str) -> Entry:
    return Entry(KEY_REVOKE, actor, key_id=key_id)


def webhook_created(actor: Actor, webhook_id: str) -> Entry:
    return Entry(WEBHOOK_CREATE, actor, webhook_id=webhook_id)


def webhook_deleted(actor: Actor, webhook_id: str) -> Entry:
    return Entry(WEBHOOK_DELETE, actor, webhook_id=webhook_id)


def conversation_forgotten(actor: Actor, hashed_conversation: str, *, episodes: int, messages: int) -> Entry:
    """The forget's own entry names the conversation by its hash alone."""
    _check_hashed(hashed_conversation)
    return Entry(
        CONVERSATION_FORGET,
        actor,
        conversation_id=hashed_conversation,
        counts={"episodes": episodes, "messages": messages},
    )


def user_forgotten(
    actor: Actor, hashed_user: str, *, conversations: int, episodes: int, messages: int, audit_rows: int
) -> Entry:
    _check_hashed(hashed_user)
    return Entry(
        USER_FORGET,
        actor,
        user_id=hashed_user,
        counts={"conversations": conversations, "episodes": episodes, "messages": messages, "audit_rows": audit_rows},
    )


def exported(actor: Actor, *, conversation_id: str | None, user_id: str | None, lines: int) -> Entry:
    return Entry(EXPORT, actor, conversation_id=conversation_id, user_id=user_id, counts={"lines": lines})


def imported(
    actor: Actor, *, lines: int, inserted: Mapping[str, int], skipped: int, stopped_at_line: int | None
) -> Entry:
    """An import, complete or stopped at a broken record (what came before it was written:
    ``stopped_at_line`` says where it stopped)."""
    counts = {"lines": lines, **{k: v for k, v in inserted.items() if v}, "skipped": skipped}
    if stopped_at_line is not None:
        counts["stopped_at_line"] = stopped_at_line
    return Entry(IMPORT, actor, counts=counts)


# --- forgotten ids -----------------------------------------------------------------------------


def hashed_id(salt: bytes, value: str) -> str:
    """What the log keeps of a forgotten id: HMAC-SHA256 of it under the deployment's salt."""
    if not salt:
        raise ValueError("the activity log's salt is empty: run `memq migrate` (migration 0019 makes it)")
    return HASH_PREFIX + hmac.new(salt, value.encode("utf-8"), hashlib.sha256).hexdigest()


def is_hashed(value: str | None) -> bool:
    return value is not None and _HASHED.fullmatch(value) is not None


def _check_hashed(value: str) -> None:
    if not is_hashed(value):
        raise ValueError("a forget's entry names what it forgot by its hash (hashed_id), never in clear")


# --- reading the log -----------------------------------------------------------------------------


def check_action(value: str | None) -> str | None:
    if value is not None and value not in ACTIONS:
        raise ValidationError(f"{value[:80]!r} is no action; filter by one of {', '.join(ACTIONS)}", field="action")
    return value


def check_since(value: datetime | None) -> datetime | None:
    if value is not None and value.utcoffset() is None:
        raise ValidationError("give a time with its offset or Z (2026-03-02T09:15:00Z)", field="since")
    return value


def check_cursor(value: str | None) -> int | None:
    """The page cursor (``next`` of the previous page) as the id it stands for."""
    if not value:
        return None
    if not _CURSOR.fullmatch(value):
        raise ValidationError("is not a cursor of this list: pass `next` of the previous page", field="after")
    return int(value)
