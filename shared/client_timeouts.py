"""The timeouts every Redis and PostgreSQL client memq opens is given, from settings: so
that no call waits forever on a connection whose path died without a reset (a half-open
connection: a failover that moved an address, a dropped route, a partitioned network).

Pure: the keyword arguments for redis-py (and kombu's Redis transport, RedBeat) and for
psycopg / libpq; ``shared/connections.py``, ``shared/celery_config.py`` and the API's pool
pass them on.
"""

from __future__ import annotations

from typing import Any

from memq.shared.settings import Settings


def redis_options(settings: Settings) -> dict[str, Any]:
    """redis-py connection keywords: reply and connect timeouts, TCP keepalives, and a PING
    before a command on a connection idle past the health-check interval."""
    return {
        "socket_timeout": settings.redis_socket_timeout_seconds,
        "socket_connect_timeout": settings.redis_connect_timeout_seconds,
        "socket_keepalive": True,
        "health_check_interval": settings.redis_health_check_seconds,
    }


def postgres_options(settings: Settings) -> dict[str, Any]:
    """libpq connection parameters (they override the same ones in DATABASE_URL): connect
    timeout per host, TCP keepalives, and a limit on data left unacknowledged. libpq ignores
    the TCP ones on a Unix socket."""
    keepalive = settings.database_keepalive_seconds
    return {
        "connect_timeout": settings.database_connect_timeout_seconds,
        "keepalives": 1,
        "keepalives_idle": keepalive,
        "keepalives_interval": max(1, keepalive // 3),
        "keepalives_count": 3,
        "tcp_user_timeout": keepalive * 2 * 1000,  # milliseconds
    }
