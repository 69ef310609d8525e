"""The quarantine: messages and segments whose processing failed repeatedly with the
same non-transient error, set aside (``record_failure.lua``) so the rest of their
conversation carries on. Listed per shard index; put back with ``retry``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from memq.shared.mailbox.keys import ConversationKeys, all_shards, conversation_keys, split_member
from memq.shared.mailbox.replies import Retried, decode_quarantine_retry
from memq.shared.mailbox.scripts import Scripts
from memq.shared.mailbox.status import QuarantineEntry, parse_quarantine

if TYPE_CHECKING:
    from celery import Celery

    from memq.shared.connections import MailboxClient
    from memq.shared.settings import Settings

__all__ = ["Quarantined", "Retried", "list_quarantined", "retry", "retry_and_publish"]


@dataclass(frozen=True)
class Quarantined:
    tenant: str
    conversation_id: str
    entry: QuarantineEntry


def list_quarantined(
    client: MailboxClient, settings: Settings, tenant: str | None = None, conversation_id: str | None = None
) -> list[Quarantined]:
    if conversation_id is not None:
        members = [f"{tenant or settings.tenant}/{conversation_id}"]
    else:
        members = []
        for shard in all_shards(settings.key_prefix, settings.redis_shards):
            members += cast(list[str], client.zrange(shard.quarantined, 0, -1))
    out: list[Quarantined] = []
    for member in sorted(members):
        t, c = split_member(member)
        if tenant is not None and t != tenant:
            continue
        keys = conversation_keys(settings, t, c)
        out += [Quarantined(t, c, e) for e in parse_quarantine(cast(dict[str, str], client.hgetall(keys.quarantine)))]
    return out


def retry(client: MailboxClient, scripts: Scripts, keys: ConversationKeys, field: str) -> Retried | None:
    """Put one quarantined item back to work; None when there is no such item."""
    reply = scripts.quarantine_retry(
        keys=[
            keys.quarantine,
            keys.shard.quarantined,
            keys.inbox,
            keys.segments,
            keys.shard.pending,
            keys.state,
            keys.shard.drains,
            keys.shard.active,
        ],
        args=[field, keys.member],
    )
    return decode_quarantine_retry(reply)


def retry_and_publish(
    client: MailboxClient,
    scripts: Scripts,
    settings: Settings,
    app: Celery,
    tenant: str,
    conversation_id: str,
    field: str,
) -> Retried | None:
    """``retry``, then the task that puts the item to work (a drain for a message, an
    episode creation for a segment) when the script says one must be published."""
    from memq.shared import publisher

    done = retry(client, scripts, conversation_keys(settings, tenant, conversation_id), field)
    if done is not None and done.publish:
        if done.kind == "message":
            publisher.drain(app, tenant, conversation_id)
        else:
            publisher.episode(app, tenant, conversation_id, done.id)
    return done
