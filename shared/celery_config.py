"""Celery configuration derived from settings, shared by the worker app and the
producer's publish-only app so both agree on broker, routes and transport options.

Why the values are what they are (Celery 5.7 on Redis):

- Redis has no real acks: kombu hands any unacknowledged message older than the
  visibility timeout to another worker, so with late acks a task running longer than it
  would run again, in parallel, and countdowns or retry delays longer than it would loop.
  The visibility timeout (the broker's transport options) is therefore kept well above
  the task time limit and every countdown.
- Late acks and reject-on-worker-lost make a killed worker's task run again elsewhere
  (every task is idempotent); a prefetch of one keeps a worker from holding tasks it has
  not started.
"""

from __future__ import annotations

from typing import Any

from redis.backoff import ExponentialBackoff
from redis.retry import Retry

from memq.shared import tasks
from memq.shared.broker_transport import TRANSPORT_PATH
from memq.shared.client_timeouts import redis_options
from memq.shared.settings import Settings

# RedBeat, riding out a Redis that has no room (memq/worker/beat_scheduler.py; a beat only).
BEAT_SCHEDULER = "memq.worker.beat_scheduler:Scheduler"


def celery_config(settings: Settings, broker_url: str) -> dict[str, Any]:
    transport = {
        "visibility_timeout": settings.visibility_timeout_seconds,
        # socket_timeout: the longest any broker call may hold the worker's event loop
        # (memq.shared.broker_transport), and what ends one on a half-open connection.
        **redis_options(settings),
        "retry_on_timeout": False,
    }
    return {
        "broker_url": broker_url,
        "broker_transport": TRANSPORT_PATH,
        "broker_transport_options": transport,
        "broker_connection_retry_on_startup": True,
        # A broker command Redis refuses (full: OOM at its maxmemory, MISCONF when it cannot
        # write its append-only file, which refuses even PING) makes the consumer reconnect,
        # as a lost connection does, instead of stopping the worker: it takes tasks again
        # once Redis has room (docs/operations.md, storage full).
        "broker_channel_error_retry": True,
        "result_backend": None,
        "task_ignore_result": True,
        "task_serializer": "json",
        "accept_content": ["json"],
        "task_routes": tasks.ROUTES,
        "task_default_queue": tasks.SEGMENTATION_QUEUE,
        "task_acks_late": True,
        "task_reject_on_worker_lost": True,
        "task_acks_on_failure_or_timeout": True,
        "task_time_limit": settings.task_time_limit_seconds,
        # The soft limit leaves a task time to end cleanly before the hard one kills it.
        "task_soft_time_limit": soft_time_limit(settings),
        "worker_prefetch_multiplier": 1,
        # A new pool process loads the embedding model and litellm before taking tasks
        # (memq.worker.app._warm_up): give it time, or Celery kills and re-forks it forever.
        "worker_proc_alive_timeout": 180,
        "worker_concurrency": settings.worker_concurrency,
        "worker_hijack_root_logger": False,
        # A task in flight when the broker connection drops runs on: memq's tasks are
        # idempotent and fenced, a drain hands its conversation on as soon as Redis is back
        # (memq.worker.tasks.segmentation.release), and cancelling would kill the pool process
        # (which then reloads the embedding model) for nothing. Its unacknowledged message
        # may come back after the visibility timeout, a harmless duplicate.
        "worker_cancel_long_running_tasks_on_connection_loss": False,
        "worker_send_task_events": settings.task_events,
        "task_send_sent_event": settings.task_sent_events,
        "timezone": "UTC",
        "enable_utc": True,
        "beat_scheduler": BEAT_SCHEDULER,
        "redbeat_redis_url": broker_url,
        # The beat is no event loop: every Redis call it makes, the renewal of its lock
        # included (RedBeat's own retry_period does not cover that one), waits out a
        # restarting Redis (connection errors and LOADING) for about 35 s, well within its
        # 150 s lock, instead of crashing the beat.
        "redbeat_redis_options": {
            **redis_options(settings),
            "retry": Retry(ExponentialBackoff(cap=2.0, base=0.25), 20),
        },
        "redbeat_key_prefix": f"{settings.key_prefix}:redbeat",
        "beat_max_loop_interval": 30,
        "redbeat_lock_timeout": 150,
    }


def soft_time_limit(settings: Settings) -> int:
    """Celery's soft time limit of a task: the hard one less a fifth (2 to 10 s), time for
    the task to end cleanly before it is killed."""
    return settings.task_time_limit_seconds - max(2, min(10, settings.task_time_limit_seconds // 5))
