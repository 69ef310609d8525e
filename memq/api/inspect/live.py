"""What the inspector reads from Redis and the workers, the way ``memq status`` and ``memq
quarantine`` do: a conversation's messages not yet in an episode, the tenant's conversations
with an open event, the backlog, the
tenant's quarantine (and putting an item of it back to work), the workers that answer a
ping."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

import structlog

from memq.api.services import Services
from memq.shared.mailbox.backlog import Backlog, measure_backlog
from memq.shared.mailbox.keys import all_shards, member, split_member
from memq.shared.mailbox.open_segment import UnstoredRead, read_unstored
from memq.shared.mailbox.quarantine import Quarantined, Retried, list_quarantined, retry_and_publish
from memq.shared.mailbox.status import ConversationStatus, conversation_status

log = structlog.get_logger("memq.api.inspect")
UNSTORED_SHOWN = 200  # messages of the open event listed (the newest)
PING_SECONDS = 1.0


@dataclass(frozen=True)
class OpenEvent:
    status: ConversationStatus
    unstored: UnstoredRead


def open_event(svc: Services, tenant: str, conversation_id: str) -> OpenEvent:
    keys = svc.producer.keys(conversation_id, tenant)
    return OpenEvent(conversation_status(svc.redis, keys), read_unstored(svc.redis, keys, UNSTORED_SHOWN))


def open_conversations(svc: Services, tenant: str) -> dict[str, datetime]:
    """The tenant's conversations with an open event or unread messages (the shards' active
    indexes), each with the arrival time of its newest message."""
    found: dict[str, datetime] = {}
    prefix = member(tenant, "")
    for shard in all_shards(svc.settings.key_prefix, svc.settings.redis_shards):
        for name, score in svc.redis.zscan_iter(shard.active, match=f"{prefix}*", count=1000):
            text = name.decode() if isinstance(name, bytes) else str(name)
            found[split_member(text)[1]] = datetime.fromtimestamp(float(score), UTC)
    return found


@dataclass(frozen=True)
class Status:
    backlog: Backlog | None
    quarantined: list[Quarantined]
    workers: list[str] | None  # None: the broker could not be asked
    problems: list[str]


def status(svc: Services, tenant: str) -> Status:
    problems: list[str] = []
    backlog = None
    try:
        backlog = measure_backlog(svc.redis, svc.broker, svc.settings)
    except Exception as exc:  # shown on the page rather than failing it
        problems.append(f"backlog: {type(exc).__name__}: {exc}")
    quarantined = list_quarantined(svc.redis, svc.settings, tenant)
    workers: list[str] | None = None
    try:
        replies = svc.producer.celery.control.ping(timeout=PING_SECONDS)
        workers = sorted(name for reply in replies or [] for name in reply)
    except Exception as exc:  # a broker that does not answer: no worker can be reached either
        log.warning("inspect_worker_ping_failed", error=type(exc).__name__)
        problems.append(f"workers: the broker did not answer ({type(exc).__name__})")
    return Status(backlog, quarantined, workers, problems)


def retry(svc: Services, tenant: str, conversation_id: str, item: str) -> Retried | None:
    """Put one of the tenant's quarantined items back to work (``memq quarantine retry``)."""
    return retry_and_publish(
        svc.redis, svc.producer.scripts, svc.settings, svc.producer.celery, tenant, conversation_id, item
    )
