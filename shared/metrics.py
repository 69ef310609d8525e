"""memq's Prometheus metrics: one definition of each, used by every process that does the
work it counts (the producer in the caller's process, the API, the workers).

Names follow Prometheus' conventions (``memq_`` prefix, ``_total`` on counters, base units:
seconds, messages, tokens); labels take values from small fixed sets (a stage, a reason, a
route template), never a tenant or conversation id. docs/observability.md says what each
means and what to do when it moves.

The metrics are made on first use (``metrics()``), not at import, so that a worker can switch
prometheus-client to its multiprocess mode before any value exists
(``memq.worker.metrics_export``): a prefork worker's pool processes then write their values to
files that the worker's main process serves. The backlog gauges are not here: they are read
from Redis and PostgreSQL at each scrape (``memq.api.routes.metrics``).
"""

from __future__ import annotations

import collections
import functools
from collections.abc import Iterable
from dataclasses import dataclass

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Histogram

from memq.shared.storage_full import POSTGRES_DISK_FULL, REDIS_CANNOT_PERSIST, REDIS_OUT_OF_MEMORY

# Latency buckets (seconds): a retrieval or a request of milliseconds up to an LLM call of a minute.
FAST_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
SLOW_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
TOKEN_BUCKETS = (0, 50, 100, 250, 500, 1000, 2000, 4000, 8000, 16000)

# What the producer says of each message (AddResult.status), as the outcome label.
MESSAGE_OUTCOMES = ("accepted", "clamped", "duplicate", "rejected", "refused", "unknown")


@dataclass(frozen=True)
class Metrics:
    messages: Counter
    boundaries: Counter
    episodes: Counter
    embedding_batches: Counter
    embedding_texts: Counter
    embedding_seconds: Histogram
    co_embedded: Counter
    llm_calls: Counter
    llm_seconds: Histogram
    task_seconds: Histogram
    http_seconds: Histogram
    retrieval_seconds: Histogram
    retrieval_tokens: Histogram
    storage_full: Counter


CO_EMBEDDED_OUTCOMES = ("embedded", "kept", "used")
# What had no room to write (memq.shared.storage_full), as the cause label.
STORAGE_FULL_CAUSES = (REDIS_OUT_OF_MEMORY, REDIS_CANNOT_PERSIST, POSTGRES_DISK_FULL)


def build(registry: CollectorRegistry) -> Metrics:
    """Every metric, registered on ``registry``."""
    built = Metrics(
        messages=Counter(
            "memq_messages",
            "Messages offered to the producer (library, HTTP or CLI), by outcome: accepted, clamped "
            "(accepted, timestamp raised), duplicate (already stored), rejected (out of order under the "
            "reject policy), refused (invalid: nothing of the batch queued), unknown (Redis failed mid-batch).",
            ["outcome"],
            registry=registry,
        ),
        boundaries=Counter(
            "memq_boundaries",
            "Event boundaries found by segmentation, by reason (time_gap, token_budget, surprise, "
            "topic_shift, flush, idle, ...).",
            ["reason"],
            registry=registry,
        ),
        episodes=Counter(
            "memq_episodes_created",
            "Episodes written to PostgreSQL, by what wrote the title and summary (llm or extractive).",
            ["summary_source"],
            registry=registry,
        ),
        embedding_batches=Counter(
            "memq_embedding_batches", "Calls to the embedding model (one batch of texts each).", registry=registry
        ),
        embedding_texts=Counter("memq_embedding_texts", "Texts embedded.", registry=registry),
        embedding_seconds=Histogram(
            "memq_embedding_seconds", "Time to embed one batch.", buckets=FAST_BUCKETS, registry=registry
        ),
        co_embedded=Counter(
            "memq_co_embedded",
            "Texts of other conversations' inbox fronts a drain embedded in its own model call "
            "(worker/segmentation/co_embedding.py), by outcome: embedded, kept (still at their inbox front, "
            "written for their drain), used (a drain took a message's vector from Redis instead of the model: "
            "another conversation's drain, or an earlier drain of its own for a look-ahead message, embedded it).",
            ["outcome"],
            registry=registry,
        ),
        llm_calls=Counter(
            "memq_llm_calls",
            "LLM requests through litellm, by stage (topic_shift, episode_summary, memory_review, semantic_"
            "consolidation) and outcome (ok; repaired: read after fixing a fence, prose around the JSON or an "
            "enum's case; failed: after its retries, the stage falls back to its rules).",
            ["stage", "outcome"],
            registry=registry,
        ),
        llm_seconds=Histogram(
            "memq_llm_call_seconds",
            "Time of one LLM request, retries included, by stage.",
            ["stage"],
            buckets=SLOW_BUCKETS,
            registry=registry,
        ),
        task_seconds=Histogram(
            "memq_task_seconds",
            "Runtime of a worker task, by task name and final state (SUCCESS, RETRY, FAILURE).",
            ["task", "state"],
            buckets=SLOW_BUCKETS,
            registry=registry,
        ),
        http_seconds=Histogram(
            "memq_http_request_seconds",
            "API request latency, by method, route template and status code.",
            ["method", "route", "status"],
            buckets=FAST_BUCKETS,
            registry=registry,
        ),
        retrieval_seconds=Histogram(
            "memq_retrieval_seconds",
            "Time of one retrieval (the search legs, fusion, FSRS re-ranking and the answer), "
            "embedding of the query included.",
            buckets=FAST_BUCKETS,
            registry=registry,
        ),
        retrieval_tokens=Histogram(
            "memq_retrieval_returned_tokens",
            "Tokens of memory one retrieval returned to its caller.",
            buckets=TOKEN_BUCKETS,
            registry=registry,
        ),
        storage_full=Counter(
            "memq_storage_full",
            "Writes a server refused for want of room, by cause: redis_out_of_memory (Redis at its maxmemory "
            "under noeviction), redis_cannot_persist (Redis cannot write its append-only file: MISCONF), "
            "postgres_disk_full (PostgreSQL cannot extend a file). Counted where the refusal is met "
            "(memq.shared.storage_alarm).",
            ["cause"],
            registry=registry,
        ),
    )
    # exported from the start at 0, so that rate() and the dashboard have a series before the
    # first co-embedding (most fleets with one busy conversation never co-embed)
    for outcome in CO_EMBEDDED_OUTCOMES:
        built.co_embedded.labels(outcome=outcome)
    for cause in STORAGE_FULL_CAUSES:  # at 0 from the start too: an alert on increase() needs the series
        built.storage_full.labels(cause=cause)
    return built


@functools.cache
def metrics() -> Metrics:
    """This process' metrics, on the default registry (made on first use)."""
    return build(REGISTRY)


def count_messages(statuses: Iterable[str]) -> None:
    """One increment per message, by what the producer said of it (``AddResult.status``)."""
    for outcome, n in collections.Counter(statuses).items():
        metrics().messages.labels(outcome=outcome).inc(n)


def count_storage_full(cause: str) -> None:
    """One refusal for want of room (``memq.shared.storage_full``'s cause)."""
    metrics().storage_full.labels(cause=cause).inc()
