"""Worker and Celery settings (a group of ``Settings``; variables ``MEMQ_*``)."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, Field


class WorkerSettings(BaseModel):
    """Worker and Celery."""

    drain_max_messages: int = Field(default=200, ge=1, description="Messages per drain task before re-queue.")
    drain_max_seconds: float = Field(
        default=60.0, gt=0, description="Seconds a drain task runs before re-queueing itself."
    )
    embed_prefetch: int = Field(default=32, ge=1, description="Inbox messages embedded per batch.")
    embed_across_conversations: int = Field(
        default=64,
        ge=0,
        description="Texts of other conversations' inbox fronts (conversations waiting for a drain that no worker "
        "holds) a drain embeds in the same model call as its own messages, writing their vectors for their own "
        "drains: bigger, better-filled model batches under live traffic and backlogs alike. Needs "
        "MEMQ_CARRY_VECTORS; 0: each drain embeds its own messages only.",
    )
    carry_vectors: bool = Field(
        default=True,
        description="Keep each message's embedding from segmentation in Redis (about 2 kB per message of an open "
        "event or waiting segment, deleted when its episode is stored) so episode creation does not embed it "
        "again; false: every message is embedded twice and Redis holds no vectors.",
    )
    lock_lease_seconds: float = Field(
        default=60.0, gt=0, description="Conversation lock lease, renewed at every committed step."
    )
    release_retry_seconds: float = Field(
        default=30.0,
        ge=0,
        description="How long a drain that cannot reach Redis when it ends keeps trying to hand its "
        "conversation on (at most until its soft time limit), so a Redis restart does not leave the "
        "conversation to the stalled-work sweeper.",
    )
    recovery_sweep_window_seconds: float = Field(
        default=10.0,
        ge=0,
        description="After a worker reconnects to the broker, one sweep re-publishes everything marked "
        "queued; the sweeps of other workers reconnecting within this window are skipped. 0 = off.",
    )
    worker_heartbeat_dir: Path | None = Field(
        default=None,
        description="Where each worker refreshes <node>.alive while its event loop turns (`memq worker-alive` "
        "reads it). Unset: <data_dir>/heartbeats.",
    )
    worker_heartbeat_seconds: float = Field(
        default=2.0, ge=0, description="How often the worker's event loop ticks its watchdog. 0 = no watchdog."
    )
    worker_stall_seconds: float = Field(
        default=30.0,
        gt=0,
        description="An event loop that has not ticked for this long (and is not reconnecting to the broker) "
        "is stalled: logged as worker_stalled, heartbeat file no longer refreshed.",
    )
    worker_stall_exit_seconds: float = Field(
        default=300.0,
        ge=0,
        description="A worker process stalled this long exits (code 70) for its supervisor to replace it. 0 = never.",
    )
    task_events: bool = Field(
        default=True,
        description="Workers send task events (received, started, succeeded or failed), which Flower and `celery "
        "events` show. Off, a worker sends them only once something asks for them: a running Flower does every 5 s "
        "(unless started with --enable_events=false), so they cost only while something watches, and Flower misses "
        "the tasks of those first seconds. Off saved ~1.6 ms of the worker's CPU (its main process) and ~0.26 ms of "
        "Redis' per message under live traffic (docs/benchmarks.md). Worker heartbeats go either way.",
    )
    task_sent_events: bool = Field(
        default=False,
        description="Publish a task-sent event with every task published (producer, API, workers), so Flower "
        "lists a task from when it is queued; it costs each publication a second Redis round trip, and the producer "
        "then publishes its drain tasks through Celery (a batch that starts a drain: about twice the producer's "
        "time) instead of its enqueue script queuing them. Off: Flower lists a task from when a worker receives it "
        "(with MEMQ_TASK_EVENTS).",
    )
    task_time_limit_seconds: int = Field(
        default=300,
        ge=5,
        description="Hard limit of a task (the soft limit comes a little earlier); a warm shutdown lasts at most this.",
    )
    visibility_timeout_seconds: int = Field(
        default=900,
        ge=10,
        description="An unacknowledged task is redelivered after this (at least twice the task limit).",
    )
    worker_concurrency: int = Field(default=2, ge=1, description="Pool processes per worker (each loads the model).")
    worker_metrics_port: int = Field(
        default=0,
        ge=0,
        le=65535,
        description="Port on which a worker's main process serves Prometheus metrics (GET /metrics) for all of "
        "its pool processes (prometheus-client's multiprocess mode). 0 = not served; the deployment files "
        "set 9808.",
    )
    worker_metrics_address: str = Field(
        default="0.0.0.0",
        description="Address the worker's metrics server listens on.",
    )
    quarantine_after_failures: int = Field(
        default=3,
        ge=1,
        description="A message or segment whose processing fails this many times in a row with the same "
        "non-transient error is moved to the quarantine (`memq quarantine list`).",
    )
    retry_backoff_seconds: float = Field(default=2.0, gt=0, description="First delay before a failed task runs again.")
    retry_backoff_max_seconds: float = Field(default=60.0, gt=0, description="Longest delay between retries.")
    memory_retry_limit: int = Field(
        default=20,
        ge=0,
        description="Transient failures in a row after which a review or consolidation task gives up (logged as "
        "failed; consolidation is taken up again by the conversation's next one or `memq consolidate`). Drains and "
        "episode creation retry transient failures for as long as they last.",
    )
