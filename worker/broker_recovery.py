"""Pick up at once what a broker outage left behind.

When Redis goes away, work in flight can lose its next step: a drain whose release could
not reach Redis, a producer whose publish failed while Redis was loading its data, a
task terminated with its connection. Each of them leaves its conversation marked "drain
queued" (or its segment pending), which the stalled-work sweeper would re-publish only
after ``MEMQ_STALLED_AFTER_SECONDS``. Celery restarts a worker's consumer steps after
every reconnection, so this consumer step asks, on every start but the first, for one
sweep of everything marked (age 0). The sweep itself makes sure that only the first of
the reconnecting workers' requests does the work (``once_per_seconds``); duplicates of a
drain or an episode creation are harmless anyway.
"""

from __future__ import annotations

from typing import Any

import structlog
from celery import bootsteps

from memq.shared import publisher
from memq.shared.settings import get_settings
from memq.worker.failures import describe

log = structlog.get_logger("memq.recovery")


class SweepAfterReconnect(bootsteps.StartStopStep):
    requires = ("celery.worker.consumer.tasks:Tasks",)

    def __init__(self, c: Any, **kwargs: Any) -> None:
        self.starts = 0

    def start(self, c: Any) -> None:
        self.starts += 1
        settings = get_settings()
        if self.starts == 1 or settings.recovery_sweep_window_seconds <= 0:
            return
        try:
            publisher.sweep(c.app, age=0.0, once_per_seconds=settings.recovery_sweep_window_seconds)
            log.warning(
                "recovery_sweep_requested",
                reconnects=self.starts - 1,
                hint="re-publishing work marked queued before the broker outage",
            )
        except Exception as exc:  # the broker went away again: the next reconnect asks again
            log.warning("recovery_sweep_not_requested", error=describe(exc))
