"""The beat's scheduler: RedBeat, riding out a Redis that has no room.

RedBeat keeps the schedule and the beat's lock in Redis and writes both at every tick.
Redis refuses those writes while it is full (``OOM`` at its maxmemory, ``MISCONF`` when it
cannot write its append-only file), and the refusal ended the beat process: no sweep of
stalled work until something restarted it, which on Kubernetes backs off for minutes while
each new beat meets the same refusal. Here a tick that meets one is counted and logged as
``storage_full`` and tried again a few seconds later.

The beat's lock lasts ``redbeat_lock_timeout`` (150 s) without a renewal, and a full Redis
refuses renewals too: past that, or when Redis lost the key (a restart without its last
writes), the lock is gone, and RedBeat's next renewal ended the process. Here the beat
takes the lock again as it does at start: at once if it is free, else it waits as a standby
behind the beat that took it meanwhile, so two beats never send the schedule together.
"""

from __future__ import annotations

from typing import Any

import redis
import structlog
from redbeat import RedBeatScheduler
from redis.exceptions import LockNotOwnedError

from memq.shared.storage_alarm import report_storage_full

RETRY_SECONDS = 5.0

log = structlog.get_logger("memq.beat")


class Scheduler(RedBeatScheduler):
    def tick(self, *args: Any, **kwargs: Any) -> float:
        try:
            interval: float = super().tick(*args, **kwargs)
        except redis.ResponseError as exc:
            return _waiting(exc)
        except LockNotOwnedError:
            log.warning("beat_lock_lost", hint="taking it again; a beat that took it meanwhile goes on alone")
            try:
                self.lock.acquire()  # blocks while another beat holds it, as at start
            except redis.ResponseError as exc:  # still full: the next tick's renewal fails the same way
                return _waiting(exc)
            log.info("beat_lock_taken")
            return 0.0
        return interval


def _waiting(exc: redis.ResponseError) -> float:
    """How long the beat waits after Redis refused a write for want of room (any other
    refusal is raised)."""
    if not report_storage_full(
        exc, stage="beat", then=f"the schedule waits, the beat tries again every {RETRY_SECONDS:.0f} s"
    ):
        raise exc
    return RETRY_SECONDS
