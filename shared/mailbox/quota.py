"""Per-tenant quotas: messages per day and stored messages, enforced by ``enqueue.lua``.

Every writer passes the enqueue script, so that is where a quota holds: the script takes
the messages a batch accepts from its shard's *lease* of the tenant's quotas and writes
nothing when the lease cannot cover them. A lease lives in the conversation's own hash
slot (every key of one conversation in one slot, Redis Cluster included); the tenant's
totals live in its own slot (``keys.quota_key``). Getting a lease is three steps, each a
script on one slot (``lua/quota_take.lua``, ``quota_grant.lua``, ``quota_put.lua``): take
back what the shard's old lease still holds, return it to the tenant's totals and grant a
new one (the batch's need plus ``MEMQ_QUOTA_LEASE_MESSAGES``, never more than is left),
put it on the shard. A tenant whose totals cannot cover a batch first takes back every
shard's unused lease, so the limit is exact; if that is still not enough the batch is
refused (``QuotaExceeded``). A crash between the steps can only strand part of a lease
(counted as used until the day turns, or until `memq quota recount`): never more than the
limit is accepted.

Limits: a tenant's own (``memq quota set``, kept in its quota hash) or the settings'
defaults (``MEMQ_QUOTA_MESSAGES_PER_DAY``, ``MEMQ_QUOTA_STORED_MESSAGES``; 0: no limit).
The day is UTC by Redis' clock. Forgetting a conversation gives its messages back to the
stored quota.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from memq.shared.errors import QuotaExceeded
from memq.shared.mailbox.keys import ShardKeys, all_shards, quota_key
from memq.shared.mailbox.replies import EnqueueCode, Lease, QuotaRefusal, _text, decode_quota_grant, decode_quota_take

if TYPE_CHECKING:
    from memq.shared.connections import MailboxClient
    from memq.shared.mailbox.scripts import Scripts
    from memq.shared.settings import Settings

NO_LIMIT = -1
LIMITS = {"messages_per_day": "limit_day", "stored_messages": "limit_stored"}
SETTINGS = {"messages_per_day": "MEMQ_QUOTA_MESSAGES_PER_DAY", "stored_messages": "MEMQ_QUOTA_STORED_MESSAGES"}


def default_limits(settings: Settings) -> tuple[int, int]:
    """The settings' limits as the scripts read them (-1: none)."""
    return (settings.quota_messages_per_day or NO_LIMIT, settings.quota_stored_messages or NO_LIMIT)


def _grant(
    scripts: Scripts,
    settings: Settings,
    tenant: str,
    need: int,
    extra: int,
    returned: Lease | None,
) -> Lease | QuotaRefusal:
    day_limit, stored_limit = default_limits(settings)
    back = ["", "0", "0"] if returned is None else [returned.day, returned.day_left, returned.stored_left]
    reply = scripts.quota_grant(
        keys=[quota_key(settings.key_prefix, tenant)], args=[day_limit, stored_limit, need, extra, *back]
    )
    return decode_quota_grant(cast(list[Any], reply))


def _take(scripts: Scripts, tenant: str, shard: ShardKeys) -> Lease | None:
    return decode_quota_take(cast(list[Any], scripts.quota_take(keys=[shard.quota_lease(tenant)])))


def lease(scripts: Scripts, settings: Settings, tenant: str, shard: ShardKeys, need: int) -> QuotaRefusal | None:
    """Give ``shard`` a lease of ``tenant``'s quotas that covers ``need`` messages, or say
    which limit refuses them (after every other shard's unused lease was taken back)."""
    granted = _grant(scripts, settings, tenant, need, settings.quota_lease_messages, _take(scripts, tenant, shard))
    if isinstance(granted, QuotaRefusal):
        reclaim(scripts, settings, tenant)
        granted = _grant(scripts, settings, tenant, need, 0, None)
        if isinstance(granted, QuotaRefusal):
            return granted
    scripts.quota_put(keys=[shard.quota_lease(tenant)], args=[granted.day, granted.day_left, granted.stored_left])
    return None


LEASE_ATTEMPTS = 5  # another producer can use up a fresh lease before the batch is sent again


def enqueue_leased(
    client: MailboxClient,
    scripts: Scripts,
    settings: Settings,
    calls: list[tuple[list[str], list[Any]]],
    owners: list[tuple[str, ShardKeys]],
    replies: list[Any],
) -> dict[int, QuotaRefusal]:
    """Send again, after getting leases, the enqueue ``calls`` whose ``replies`` asked for
    one (``owners``: each call's tenant and shard); the replies are replaced in place.
    Returns the calls refused by a quota (their replies stay the request for a lease:
    nothing of them was written)."""
    from memq.shared.mailbox.scripts import run_queued

    refused: dict[int, QuotaRefusal] = {}
    for _ in range(LEASE_ATTEMPTS):
        needs: dict[tuple[str, ShardKeys], int] = {}
        waiting = [i for i, r in enumerate(replies) if i not in refused and asks_lease(r)]
        if not waiting:
            break
        for i in waiting:
            needs[owners[i]] = needs.get(owners[i], 0) + int(replies[i][1])
        refusals = {owner: lease(scripts, settings, owner[0], owner[1], need) for owner, need in needs.items()}
        again = []
        for i in waiting:
            if (refusal := refusals[owners[i]]) is not None:
                refused[i] = refusal
            else:
                again.append(i)
        for i, reply in zip(again, run_queued(client, scripts.enqueue, [calls[i] for i in again]), strict=True):
            replies[i] = reply
    return refused


def asks_lease(reply: Any) -> bool:
    return not isinstance(reply, Exception) and int(reply[0]) == EnqueueCode.LEASE_NEEDED


def quota_exceeded(over: tuple[int, str, QuotaRefusal], results: list[Any]) -> QuotaExceeded:
    """The error for a batch a quota refused: ``over`` is (the first refused message's
    index, its conversation, the refusal)."""
    index, conversation, refusal = over
    setting = SETTINGS[refusal.limit]
    what = "messages a day" if refusal.limit == "messages_per_day" else "stored messages"
    until = (
        "the day turns (UTC)"
        if refusal.limit == "messages_per_day"
        else "the tenant forgets conversations (DELETE /v1/conversations/{id}, `memq forget`)"
    )
    return QuotaExceeded(
        f"message #{index}: the tenant's quota of {refusal.allowed} {what} is used ({refusal.used}): nothing of "
        f"conversation {conversation!r}'s part of the batch was queued (see .results for the others); sending again "
        f"will not help until {until}, or the operator raises the limit (`memq quota set`, default {setting})",
        results,
        limit=refusal.limit,
        setting=setting,
    )


def reclaim(scripts: Scripts, settings: Settings, tenant: str) -> None:
    """Take every shard's lease of ``tenant`` back into its totals (before a refusal, and
    when its limits change, so that no shard goes on with a lease of the old ones)."""
    for shard in all_shards(settings.key_prefix, settings.redis_shards):
        held = _take(scripts, tenant, shard)
        if held is not None:
            _grant(scripts, settings, tenant, 0, 0, held)


def give_back_stored(scripts: Scripts, prefix: str, tenant: str, messages: int) -> None:
    """``messages`` of ``tenant`` are gone (forgotten): they no longer count as stored."""
    if messages > 0:
        scripts.quota_grant(keys=[quota_key(prefix, tenant)], args=[NO_LIMIT, NO_LIMIT, 0, 0, -1, 0, messages])


@dataclass(frozen=True)
class QuotaUsage:
    """A tenant's limits (None: no limit; ``own``: set for it, not the defaults) and what it
    has used: today's messages and stored ones, each counting what shards hold leased and
    have not used yet (at most ``MEMQ_QUOTA_LEASE_MESSAGES`` a shard)."""

    tenant: str
    messages_per_day: int | None
    stored_messages: int | None
    own: tuple[str, ...]
    used_today: int
    stored: int
    leased_today: int
    leased_stored: int
    day: int


def usage(client: MailboxClient, settings: Settings, tenant: str) -> QuotaUsage:
    """What ``tenant`` may add and has added (reads only)."""
    raw = cast(dict[Any, Any], client.hgetall(quota_key(settings.key_prefix, tenant)))
    fields = {_text(k): int(_text(v)) for k, v in raw.items()}
    today = _redis_day(client)
    day_limit, stored_limit = default_limits(settings)
    limits = {
        name: fields.get(field, default) for (name, field), default in zip(LIMITS.items(), (day_limit, stored_limit))
    }
    leased_day = leased_stored = 0
    pipe = client.pipeline(transaction=False)
    for shard in all_shards(settings.key_prefix, settings.redis_shards):
        pipe.hmget(shard.quota_lease(tenant), "day", "day_left", "stored_left")
    for day, day_left, stored_left in pipe.execute():
        if day is not None:
            leased_day += max(0, int(day_left)) if int(day) == today else 0
            leased_stored += max(0, int(stored_left))
    used_day = fields.get("day_used", 0) if fields.get("day") == today else 0
    return QuotaUsage(
        tenant=tenant,
        messages_per_day=None if limits["messages_per_day"] < 0 else limits["messages_per_day"],
        stored_messages=None if limits["stored_messages"] < 0 else limits["stored_messages"],
        own=tuple(name for name, field in LIMITS.items() if field in fields),
        used_today=max(0, used_day - leased_day),
        stored=max(0, fields.get("stored", 0) - leased_stored),
        leased_today=leased_day,
        leased_stored=leased_stored,
        day=today,
    )


def _redis_day(client: MailboxClient) -> int:
    seconds, _ = client.time()
    return int(seconds) // 86400


def set_limits(
    client: MailboxClient, scripts: Scripts, settings: Settings, tenant: str, limits: dict[str, int | None]
) -> None:
    """Set ``tenant``'s own limits (a name to a count, 0 for none, or None to go back to the
    default), then take the shards' leases back so the new limits hold from the next batch."""
    key = quota_key(settings.key_prefix, tenant)
    for name, value in limits.items():
        field = LIMITS[name]
        if value is None:
            client.hdel(key, field)
        else:
            client.hset(key, field, str(value or NO_LIMIT))
    reclaim(scripts, settings, tenant)


def recount_stored(client: MailboxClient, scripts: Scripts, settings: Settings, tenant: str, stored: int) -> None:
    """Set ``tenant``'s stored count to ``stored`` (what PostgreSQL holds and Redis still
    queues, counted by the caller), after taking the shards' leases back."""
    reclaim(scripts, settings, tenant)
    client.hset(quota_key(settings.key_prefix, tenant), "stored", str(max(0, stored)))
