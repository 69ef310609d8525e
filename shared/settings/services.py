"""Services settings (a group of ``Settings``; variables ``MEMQ_*``)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, BaseModel, Field, field_validator

from memq.shared.errors import ValidationError
from memq.shared.ids import check_tenant


class ServiceSettings(BaseModel):
    """Services: Redis, PostgreSQL, the embedded servers, the tenant and key prefix."""

    env: Literal["development", "production"] = Field(
        default="development",
        description="'development' may start the embedded redis-server and PostgreSQL (from the "
        "memq[embedded] extra) when REDIS_URL / DATABASE_URL are unset; 'production' never does: "
        "a process that needs an unset URL stops with an error saying which to set.",
    )
    redis_url: str | None = Field(
        default=None,
        validation_alias=AliasChoices("REDIS_URL", "MEMQ_REDIS_URL"),
        description="Redis for the mailbox, conversation state and Celery broker. "
        "Unset: the embedded redis-server under data_dir.",
    )
    database_url: str | None = Field(
        default=None,
        validation_alias=AliasChoices("DATABASE_URL", "MEMQ_DATABASE_URL"),
        description="PostgreSQL (>= 15, pgvector >= 0.7), a libpq URL or key=value string. A primary and its "
        "standbys: name them all, with target_session_attrs=read-write "
        "(postgresql://memq@db-a:5432,db-b:5432/memq?target_session_attrs=read-write), and every process "
        "connects to the one that accepts writes, after a failover too. Unset: the embedded server under data_dir.",
    )
    mailbox_redis_url: str | None = Field(
        default=None,
        description="Redis for the mailbox (conversation queues and state) when it is not REDIS_URL, "
        "e.g. a Redis Cluster; the Celery broker stays on REDIS_URL.",
    )
    mailbox_redis_cluster: bool = Field(default=False, description="MEMQ_MAILBOX_REDIS_URL is a Redis Cluster.")
    redis_socket_timeout_seconds: float = Field(
        default=10.0,
        gt=0,
        description="Longest wait for any Redis reply, on every connection memq opens (mailbox, broker, beat, API, "
        "CLI): a connection whose path stopped answering without a reset (a half-open connection) fails with a "
        "timeout after this, and the work is retried, instead of waiting forever. Also the longest a broker call "
        "may hold a worker's event loop: keep it below MEMQ_WORKER_STALL_SECONDS.",
    )
    redis_connect_timeout_seconds: float = Field(
        default=5.0, gt=0, description="Longest wait for a new Redis connection to be established."
    )
    redis_health_check_seconds: float = Field(
        default=25.0,
        ge=0,
        description="A Redis connection idle for this long is checked with a PING before its next command, so "
        "that one left half-open is replaced instead of failing that command (not on a Redis Cluster's nodes: "
        "redis-py does not check those). 0 = never checked.",
    )
    database_connect_timeout_seconds: int = Field(
        default=10,
        ge=2,
        description="Longest wait for a new PostgreSQL connection (libpq's connect_timeout, whole seconds, at "
        "least 2), per host of a multi-host DATABASE_URL.",
    )
    database_keepalive_seconds: int = Field(
        default=30,
        ge=1,
        description="TCP keepalives on every PostgreSQL connection: probed after this long idle, every third of "
        "it after that, and given up after three unanswered probes; data sent and not acknowledged for twice "
        "this long drops the connection too (tcp_user_timeout). A connection whose path went dead without a reset "
        "(a failover that moved the address, a dropped route) fails within about twice this instead of the "
        "kernel's hours. A query waiting on a silent server is ended by a task's time limit (workers).",
    )
    redis_shards: int = Field(
        default=64,
        ge=1,
        le=16384,
        description="Hash-slot shards of the mailbox: each conversation and its shard's indexes share one "
        "slot. Fixed for the lifetime of the data.",
    )
    data_dir: Path = Field(default=Path(".memq"), description="Embedded services' data folder.")
    embedded_redis_port: int = Field(
        default=6399,
        ge=1024,
        le=65535,
        description="Loopback port of the embedded redis-server (development). Its data folder is "
        "<data dir>/redis on the default port, <data dir>/redis-<port> on another.",
    )
    embedded_database_name: str = Field(default="memq", description="Database created in the embedded PostgreSQL.")
    embedded_postgres_shared_buffers_mb: int | None = Field(
        default=None,
        ge=16,
        description="shared_buffers of the embedded PostgreSQL, in MiB. Unset: a quarter of the machine's memory, "
        "between 128 and 4,096 (PostgreSQL's own default, 128, holds no vector index of a real corpus: each "
        "search then copies its graph's pages in from the OS cache; `memq bench --scale large`, docs/benchmarks.md). "
        "Applied when the server starts; a running one keeps its value until `memq services down` and `up`.",
    )
    tenant: str = Field(default="default", description="Tenant scope used when a caller names none.")
    key_prefix: str = Field(default="memq", description="Prefix of every Redis key memq writes.")
    database_app_role: str = Field(
        default="memq_app",
        description="PostgreSQL role the application's tenant-scoped work runs as (SET ROLE from the "
        "DATABASE_URL user, which owns the schema and runs migrations and maintenance). Created by the "
        "migrations NOLOGIN and NOBYPASSRLS; row-level security limits it to the tenant set on the "
        "connection (docs/isolation.md). Fixed at migration time: changing it needs `memq migrate` "
        "of a fresh database or renaming the role.",
    )
    migration_lock_timeout_seconds: float = Field(
        default=600.0,
        gt=0,
        description="How long a process starting together with others waits for their migration "
        "(one migrates under a PostgreSQL advisory lock, the others wait) before giving up with an error.",
    )

    @field_validator("tenant", "key_prefix", "database_app_role")
    @classmethod
    def _simple_name(cls, v: str) -> str:
        try:
            return check_tenant(v)
        except ValidationError:
            raise ValueError("must be 1-64 characters of letters, digits, '_' or '-'") from None
