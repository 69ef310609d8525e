"""Every Redis and PostgreSQL client memq opens takes its timeouts from settings: the
keyword arguments, and the Celery broker's and the beat's options built from them."""

from __future__ import annotations

from memq.shared.celery_config import celery_config
from memq.shared.client_timeouts import postgres_options, redis_options
from memq.shared.settings import Settings


def _settings() -> Settings:
    return Settings(
        redis_socket_timeout_seconds=3.5,
        redis_connect_timeout_seconds=1.5,
        redis_health_check_seconds=7,
        database_connect_timeout_seconds=4,
        database_keepalive_seconds=12,
    )


def test_redis_clients_wait_for_a_reply_and_a_connection_as_long_as_the_settings_say():
    assert redis_options(_settings()) == {
        "socket_timeout": 3.5,
        "socket_connect_timeout": 1.5,
        "socket_keepalive": True,
        "health_check_interval": 7,
    }


def test_the_broker_and_the_beat_get_the_same_redis_timeouts():
    config = celery_config(_settings(), "redis://127.0.0.1:1/0")
    for options in (config["broker_transport_options"], config["redbeat_redis_options"]):
        assert options["socket_timeout"] == 3.5 and options["socket_connect_timeout"] == 1.5
        assert options["health_check_interval"] == 7 and options["socket_keepalive"] is True
    assert (
        config["broker_transport_options"]["retry_on_timeout"] is False
    )  # broker_transport.py: never retried inside redis-py


def test_postgres_connections_time_out_connecting_and_on_a_dead_path():
    options = postgres_options(_settings())
    assert options["connect_timeout"] == 4
    assert (options["keepalives"], options["keepalives_idle"], options["keepalives_interval"]) == (1, 12, 4)
    assert options["keepalives_count"] == 3
    assert options["tcp_user_timeout"] == 24_000  # milliseconds: twice the keepalive period
