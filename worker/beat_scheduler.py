"""The beat's scheduler: RedBeat, riding out a Redis that has no room.

RedBeat keeps the schedule and the beat's lock in Redis and writes both at every tick.
Redis refuses those writes while it is full (``OOM`` at its maxmemory, ``MISCONF`` when it
cannot write its append-only file), and the refusal ended the beat process: no sweep of
stalled work until something restarted it, which on Kubernetes backs off for minutes while
each new beat meets the same refusal. Here a tick that meets one is counted and logged as
``storage_full`` and tried again a few seconds later. The lock lasts ``redbeat_lock_timeout``
(150 s) without a renewal; a Redis full for longer than that still ends the beat (its lock
is lost), as any Redis outage that long does.
"""

from __future__ import annotations

from typing import Any

import redis
from redbeat import RedBeatScheduler

from memq.shared.storage_alarm import report_storage_full

RETRY_SECONDS = 5.0


class Scheduler(RedBeatScheduler):
    def tick(self, *args: Any, **kwargs: Any) -> float:
        try:
            interval: float = super().tick(*args, **kwargs)
        except redis.ResponseError as exc:
            waits = f"the schedule waits, the beat tries again every {RETRY_SECONDS:.0f} s"
            if not report_storage_full(exc, stage="beat", then=waits):
                raise
            return RETRY_SECONDS
        return interval
