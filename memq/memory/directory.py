"""What a tenant's memory knows of: its conversations and users. A conversation is known
once a message was accepted for it (its state in Redis) or stored (its row in
PostgreSQL), until it is forgotten; a user once a conversation is theirs. Another tenant's
is unknown here, the same as one that never existed, so nothing is revealed."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

import psycopg

from memq.shared.errors import NotFound
from memq.shared.mailbox.keys import conversation_keys
from memq.shared.paging import cut
from memq.shared.settings import Settings
from memq.shared.users import active_conversation_pages, mailbox_user_conversations, user_conversations

if TYPE_CHECKING:
    from memq.shared.connections import MailboxClient


@dataclass(frozen=True)
class ConversationInfo:
    conversation_id: str
    user_id: str | None
    messages: int  # stored in episodes
    episodes: int
    last_message_at: datetime | None
    stored: bool  # False: accepted, not yet in an episode

    def to_json(self) -> dict[str, Any]:
        return {
            **self.__dict__,
            "last_message_at": None if self.last_message_at is None else self.last_message_at.isoformat(),
        }


def conversation_known(
    conn: psycopg.Connection, client: MailboxClient, settings: Settings, tenant: str, conversation_id: str
) -> bool:
    if client.exists(conversation_keys(settings, tenant, conversation_id).state):
        return True
    row = conn.execute(
        "SELECT 1 FROM conversation WHERE tenant_id = %s AND conversation_id = %s", (tenant, conversation_id)
    ).fetchone()
    return row is not None


def user_known(conn: psycopg.Connection, client: MailboxClient, settings: Settings, tenant: str, user_id: str) -> bool:
    return bool(
        user_conversations(conn, tenant, user_id) or mailbox_user_conversations(client, settings, tenant, user_id)
    )


def unknown_conversation(conversation_id: str) -> NotFound:
    return NotFound(
        f"conversation {conversation_id!r} is not known in this tenant: no message was ever accepted for it, or "
        "it was forgotten. Check the id (and the API key's tenant), or add its messages first "
        "(POST /v1/conversations/{id}/messages)",
        field="conversation_id",
    )


def unknown_user(user_id: str) -> NotFound:
    return NotFound(
        f"user {user_id!r} is not known in this tenant: no conversation belongs to them. Check the id, or add "
        "messages with this user_id first",
        field="user_id",
    )


def conversation_page(
    conn: psycopg.Connection, client: MailboxClient, settings: Settings, tenant: str, after: str, limit: int
) -> tuple[list[ConversationInfo], str | None]:
    """The tenant's conversations in id order after ``after``, at most ``limit``, and the
    cursor of the next page (None: this was the last)."""
    rows = conn.execute(
        "SELECT conversation_id, user_id, message_count, episode_count, last_message_at FROM conversation "
        "WHERE tenant_id = %s AND conversation_id > %s ORDER BY conversation_id LIMIT %s",
        (tenant, after, limit + 1),
    ).fetchall()
    stored = {r[0]: ConversationInfo(r[0], r[1], r[2], r[3], r[4], True) for r in rows}
    active = {c for page in active_conversation_pages(client, settings, tenant) for c in page if c > after}
    pending = [c for c in sorted(active) if c not in stored]
    if pending:
        pipe = client.pipeline(transaction=False)
        for c in pending:
            pipe.hget(conversation_keys(settings, tenant, c).state, "user_id")
        owners = pipe.execute()
        for c, raw in zip(pending, owners, strict=True):
            user = None if raw is None else (raw.decode() if isinstance(raw, bytes) else raw)
            stored.setdefault(c, ConversationInfo(c, user, 0, 0, None, False))
    return cut([stored[c] for c in sorted(stored)], limit, lambda c: c.conversation_id)
