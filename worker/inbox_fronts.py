"""Redis adapter for *other* conversations' inbox fronts, as a drain that embeds them along
with its own messages sees them (``memq.worker.segmentation.co_embedding``): which
conversations wait for a drain (the shards' drains indexes), the first items of their
inboxes and how far another drain already embedded them, and writing the vectors
(``remember_front.lua``: only while the exact items are still at the inbox front).

Reads are hints: a conversation whose drain starts meanwhile may embed its front itself
(work done twice, nothing wrong), and a vector written for an item already taken is
refused by the script.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from memq.shared.mailbox.keys import ConversationKeys, ShardKeys, conversation_keys, split_member
from memq.shared.mailbox.replies import decode_count, decode_items
from memq.shared.mailbox.scripts import Scripts, run_queued
from memq.shared.settings import Settings
from memq.shared.vector_codec import encode_vector


@dataclass(frozen=True)
class Front:
    """Inbox items of a conversation that no drain has embedded yet, in order."""

    keys: ConversationKeys
    raws: list[str]


def waiting(
    client: Any,
    scripts: Scripts,
    settings: Settings,
    exclude: str,
    *,
    shards: int,
    conversations: int,
    window: int,
    budget: int,
    ttl_ms: int,
) -> list[Front]:
    """Up to ``budget`` inbox items of up to ``conversations`` conversations other than
    ``exclude`` (a member) that have a drain queued, found in ``shards`` shards from a random
    one on (the longest waiting of each first), that no worker holds now: from the first
    ``window`` of each inbox, those after the items another drain took or embedded, each
    claimed as it is read (``front.lua``; ``ttl_ms``: the vectors hash's, where the claim
    is kept). Each conversation is asked for an equal share (the shares add up to the
    budget), and those that had all of theirs for what is left (two more rounds at most):
    two round trips when fronts are short, up to four."""
    total = settings.redis_shards
    start = random.randrange(total)
    indexes = [ShardKeys(settings.key_prefix, (start + i) % total) for i in range(min(shards, total))]
    pipe = client.pipeline(transaction=False)
    for shard in indexes:
        pipe.zrange(shard.drains, 0, conversations - 1)
    members: list[str] = []
    for found in pipe.execute():
        members += [m for m in found if m != exclude and m not in members]
    keys = [conversation_keys(settings, *split_member(m)) for m in members[:conversations]]
    taken: dict[ConversationKeys, list[str]] = {k: [] for k in keys}
    asking, left = keys, budget
    for _ in range(3):
        if not asking or left <= 0:
            break
        # what a script returns is claimed: never more than the budget left is asked for
        shares = [left // len(asking) + (i < left % len(asking)) for i in range(len(asking))]
        asked = [(k, share) for k, share in zip(asking, shares) if share > 0]
        calls: list[tuple[list[str], list[Any]]] = [
            ([k.lock, k.inbox, k.vectors], [window, share, ttl_ms]) for k, share in asked
        ]
        replies = run_queued(client, scripts.front, calls)
        full = []
        for (k, share), reply in zip(asked, replies, strict=True):
            if isinstance(reply, Exception) or not reply:
                continue
            raws = decode_items(reply)
            taken[k] += raws
            left -= len(raws)
            if len(raws) == share:
                full.append(k)  # it may hold more
        asking = full
    return [Front(k, raws) for k, raws in taken.items() if raws]


def remember(
    client: Any,
    scripts: Scripts,
    ttl_ms: int,
    window: int,
    vectors: Sequence[tuple[ConversationKeys, Sequence[tuple[str, str, np.ndarray]]]],
) -> int:
    """Write (inbox item, message id, vector) triples for each conversation, one script
    call per conversation in one round trip; a vector whose item is no longer among the
    first ``window`` of its inbox is not written. Returns how many were."""
    calls: list[tuple[list[str], list[Any]]] = []
    for keys, triples in vectors:
        args: list[Any] = [ttl_ms, window]
        for raw, message_id, vector in triples:
            args += [raw, message_id, encode_vector(vector)]
        calls.append(([keys.inbox, keys.vectors], args))
    replies = run_queued(client, scripts.remember_front, calls) if calls else []
    return sum(decode_count(r) for r in replies if not isinstance(r, Exception))
