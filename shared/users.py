"""User scope: a conversation may belong to a user (``conversation.user_id``, migration 0012).

Where the owner is known:

* Redis: the producer's enqueue script keeps the user of the first message naming one in
  the conversation's state hash (``user_id``) and refuses a batch naming another
  (``UserConflict``), atomically;
* PostgreSQL: the workers copy it to the ``conversation`` row (``record_owner``) when they
  sync the conversation and when they store an episode; PostgreSQL's owner wins when the
  two disagree (a Redis state that expired and was started again by another user's
  message), and is written back to Redis at the next sync;
* an explicit move (``move_conversation``) writes PostgreSQL, then Redis, and one audit
  row in ``conversation_user_change`` (ids only).

Reading scoped to a user (retrieval, recent memory, facts, the manifest and the session
context) turns the user into the list of the user's conversations (``user_conversations``)
and filters by it like an explicit list of conversations.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import psycopg
import structlog

from memq.shared import activity
from memq.shared.connections import MailboxClient
from memq.shared.db.activity import forget_user_id, record
from memq.shared.errors import NotFound
from memq.shared.ids import check_conversation_id, check_tenant, check_user_id
from memq.shared.mailbox.keys import all_shards, conversation_keys, split_member
from memq.shared.settings import Settings
from memq.shared.webhooks import events as webhook_events

log = structlog.get_logger("memq.users")

# Set the state's user only where the state exists (a missing state is started by the next
# message, which names its user, or synced from PostgreSQL by the next drain).
_SET_STATE_USER = """
if redis.call('EXISTS', KEYS[1]) == 1 then
  if ARGV[1] == '' then
    redis.call('HDEL', KEYS[1], 'user_id')
  else
    redis.call('HSET', KEYS[1], 'user_id', ARGV[1])
  end
  return 1
end
return 0
"""


def owner(conn: psycopg.Connection, tenant: str, conversation_id: str) -> str | None:
    """The conversation's user in PostgreSQL (None: none, or no row yet)."""
    row = conn.execute(
        "SELECT user_id FROM conversation WHERE tenant_id = %s AND conversation_id = %s", (tenant, conversation_id)
    ).fetchone()
    return row[0] if row else None


def state_owner(client: MailboxClient, settings: Settings, tenant: str, conversation_id: str) -> str | None:
    """The conversation's user in its Redis state (None: none, or no state)."""
    raw = client.hget(conversation_keys(settings, tenant, conversation_id).state, "user_id")
    return None if raw is None else _text(raw)


def user_conversations(conn: psycopg.Connection, tenant: str, user_id: str) -> list[str]:
    """The user's conversations that PostgreSQL knows, in id order."""
    return [
        r[0]
        for r in conn.execute(
            "SELECT conversation_id FROM conversation WHERE tenant_id = %s AND user_id = %s ORDER BY conversation_id",
            (tenant, user_id),
        )
    ]


def active_conversation_pages(client: MailboxClient, settings: Settings, tenant: str) -> Iterator[list[str]]:
    """The tenant's conversations in each shard's index of conversations with recent
    messages, a page at a time (what the mailbox holds state for)."""
    for shard in all_shards(settings.key_prefix, settings.redis_shards):
        cursor: int | str = 0
        while True:
            cursor, page = client.zscan(shard.active, cursor=int(cursor), count=500)
            ours = [c for t, c in (split_member(_text(m)) for m, _ in page) if t == tenant]  # type: ignore[arg-type]
            if ours:
                yield ours
            if int(cursor) == 0:
                break


def mailbox_user_conversations(client: MailboxClient, settings: Settings, tenant: str, user_id: str) -> list[str]:
    """The user's conversations the mailbox holds state for, in id order: each shard's
    index of conversations with recent messages, read a page at a time, and the user in
    each state of the tenant (one pipelined HGET per page)."""
    found: set[str] = set()
    for ours in active_conversation_pages(client, settings, tenant):
        pipe = client.pipeline(transaction=False)
        for conversation_id in ours:
            pipe.hget(conversation_keys(settings, tenant, conversation_id).state, "user_id")
        for conversation_id, raw in zip(ours, pipe.execute(), strict=True):
            if raw is not None and _text(raw) == user_id:
                found.add(conversation_id)
    return sorted(found)


def _text(raw: bytes | str) -> str:
    return raw.decode() if isinstance(raw, bytes) else str(raw)


def within_user(
    conn: psycopg.Connection, tenant: str, user_id: str, conversation_ids: Iterable[str] | None
) -> tuple[str, ...]:
    """The conversations a scope of ``user_id`` (and, when given, of ``conversation_ids``)
    covers: the user's, narrowed to the ones asked for. Empty when none: nothing matches."""
    owned = user_conversations(conn, tenant, user_id)
    if conversation_ids is None:
        return tuple(owned)
    mine = set(owned)
    return tuple(c for c in conversation_ids if c in mine)


def record_owner(conn: psycopg.Connection, tenant: str, conversation_id: str, user_id: str | None) -> str | None:
    """Copy the user Redis holds to the conversation's row when the row has none; return
    the row's user afterwards (PostgreSQL's wins when both have one). The row must exist."""
    if user_id is not None:
        conn.execute(
            "UPDATE conversation SET user_id = %s, updated_at = now() "
            "WHERE tenant_id = %s AND conversation_id = %s AND user_id IS NULL",
            (user_id, tenant, conversation_id),
        )
    stored = owner(conn, tenant, conversation_id)
    if user_id is not None and stored is not None and stored != user_id:
        log.warning("conversation_user_differs", conversation_id=conversation_id, kept="postgresql")
    return stored


def set_state_owner(
    client: MailboxClient, settings: Settings, tenant: str, conversation_id: str, user_id: str | None
) -> bool:
    """Write the user into the conversation's Redis state, if there is one."""
    keys = conversation_keys(settings, tenant, conversation_id)
    return bool(client.eval(_SET_STATE_USER, 1, keys.state, user_id or ""))


@dataclass(frozen=True)
class Moved:
    tenant: str
    conversation_id: str
    from_user_id: str | None
    to_user_id: str | None

    @property
    def changed(self) -> bool:
        return self.from_user_id != self.to_user_id

    def to_json(self) -> dict[str, Any]:
        return {
            "conversation_id": self.conversation_id,
            "from_user_id": self.from_user_id,
            "user_id": self.to_user_id,
            "changed": self.changed,
        }


def move_conversation(
    client: MailboxClient,
    conn: psycopg.Connection,
    settings: Settings,
    *,
    tenant: str | None,
    conversation_id: str,
    user_id: str | None,
    actor: str | None = None,
) -> Moved:
    """Give the conversation to ``user_id`` (None: to no user), audited. PostgreSQL first,
    then Redis: a worker syncing in between copies PostgreSQL's owner to Redis anyway.
    Raises NotFound when neither PostgreSQL nor Redis knows the conversation."""
    tenant = check_tenant(tenant or settings.tenant)
    conversation_id = check_conversation_id(conversation_id, settings.conversation_id_max_length)
    if user_id is not None:
        user_id = check_user_id(user_id, settings.conversation_id_max_length)
    keys = conversation_keys(settings, tenant, conversation_id)
    in_redis = bool(client.exists(keys.state))
    with conn.transaction():
        row = conn.execute(
            "SELECT user_id FROM conversation WHERE tenant_id = %s AND conversation_id = %s FOR UPDATE",
            (tenant, conversation_id),
        ).fetchone()
        if row is None and not in_redis:
            raise NotFound(f"no conversation {conversation_id!r}")
        before = row[0] if row is not None else state_owner(client, settings, tenant, conversation_id)
        if row is None:  # known to Redis only: its row is made now (as a worker's sync would)
            conn.execute(
                "INSERT INTO conversation (tenant_id, conversation_id) VALUES (%s, %s) ON CONFLICT DO NOTHING",
                (tenant, conversation_id),
            )
        if before != user_id or row is None:
            conn.execute(
                "UPDATE conversation SET user_id = %s, updated_at = now() "
                "WHERE tenant_id = %s AND conversation_id = %s",
                (user_id, tenant, conversation_id),
            )
        if before != user_id:
            conn.execute(
                "INSERT INTO conversation_user_change (tenant_id, conversation_id, from_user_id, to_user_id, actor) "
                "VALUES (%s, %s, %s, %s, %s)",
                (tenant, conversation_id, before, user_id, actor),
            )
    set_state_owner(client, settings, tenant, conversation_id, user_id)
    moved = Moved(tenant, conversation_id, before, user_id)
    if moved.changed:
        log.info("conversation_moved", tenant=tenant, conversation_id=conversation_id)
    return moved


def user_changes(
    conn: psycopg.Connection, tenant: str, *, user_id: str | None = None, conversation_id: str | None = None
) -> list[dict[str, Any]]:
    """The audit rows of moves, oldest first, for a user (from or to) and/or a conversation."""
    where, args = ["tenant_id = %s"], [tenant]
    if user_id is not None:
        where.append("(from_user_id = %s OR to_user_id = %s)")
        args += [user_id, user_id]
    if conversation_id is not None:
        where.append("conversation_id = %s")
        args.append(conversation_id)
    rows = conn.execute(
        "SELECT conversation_id, from_user_id, to_user_id, at, actor FROM conversation_user_change "
        f"WHERE {' AND '.join(where)} ORDER BY at, id",
        args,
    ).fetchall()
    return [
        {"conversation_id": c, "from_user_id": f, "user_id": t, "at": at.isoformat(), "actor": actor}
        for c, f, t, at, actor in rows
    ]


@dataclass
class UserForgotten:
    user_id: str
    conversations: list[str] = field(default_factory=list)
    episodes: int = 0
    messages: int = 0
    audit_rows: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "user_id": self.user_id,
            "conversations": self.conversations,
            "episodes": self.episodes,
            "messages": self.messages,
            "audit_rows": self.audit_rows,
        }


def forget_user(
    client: MailboxClient,
    conn: psycopg.Connection,
    settings: Settings,
    *,
    tenant: str | None,
    user_id: str,
    wait_seconds: float | None = None,
    actor: activity.Actor | None = None,
) -> UserForgotten:
    """Forget every conversation of the user (``forget_conversation`` each) and the
    user's audit rows. The conversations are those PostgreSQL knows as the user's and
    those only Redis knows yet (their messages not drained by a worker: the producer
    wrote the user into their state, ``mailbox_user_conversations``). In the activity
    log, the user's id gives way to its salted hash in every entry naming it (as each
    conversation's does), and with ``actor`` each conversation's ``conversation.forget``
    entry and then one ``user.forget`` entry name the hashes (so that the conversations,
    too, are known as forgotten: ``shared/db/activity.py``)."""
    from memq.shared.forget import forget_conversation

    tenant = check_tenant(tenant or settings.tenant)
    user_id = check_user_id(user_id, settings.conversation_id_max_length)
    done = UserForgotten(user_id)
    known = set(user_conversations(conn, tenant, user_id))
    for conversation_id in sorted(known | set(mailbox_user_conversations(client, settings, tenant, user_id))):
        keys = conversation_keys(settings, tenant, conversation_id)
        kwargs: dict[str, Any] = {"actor": actor}
        if wait_seconds is not None:
            kwargs["wait_seconds"] = wait_seconds
        forgotten = forget_conversation(client, conn, keys, **kwargs)
        done.conversations.append(conversation_id)
        done.episodes += forgotten.episodes
        done.messages += forgotten.messages
    with conn.transaction():
        done.audit_rows = conn.execute(
            "DELETE FROM conversation_user_change WHERE tenant_id = %s AND (from_user_id = %s OR to_user_id = %s)",
            (tenant, user_id, user_id),
        ).rowcount
        webhook_events.user_forgotten(
            conn, tenant, user_id, conversations=len(done.conversations), episodes=done.episodes
        )
        hashed = forget_user_id(conn, tenant, user_id)
        if actor is not None:
            entry = activity.user_forgotten(
                actor,
                hashed,
                conversations=len(done.conversations),
                episodes=done.episodes,
                messages=done.messages,
                audit_rows=done.audit_rows,
            )
            record(conn, tenant, entry)
    log.info("user_forgotten", tenant=tenant, conversations=len(done.conversations))
    return done
