"""No Redis or PostgreSQL call of memq waits forever on a half-open connection.

A path that drops packets (a partition, a failover that moved an address) sends no reset:
the connection stays open and a call on it waits for a reply that never comes, unless the
client gives up by itself. Each test puts memq's own clients behind a real blackholing
proxy (``TcpProxy.blackhole``: connections kept open, nothing forwarded, new ones accepted
and never connected) and waits for the call to end, at most its configured timeout and a
second for the thread to wake: the wait is on an event, the bound is the setting.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

import psycopg
import pytest
import redis
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from memq.shared.connections import forget_urls, mailbox_client, pg_owner_connect, redis_client
from memq.shared.settings import Settings
from memq_lab.testing.tcp_proxy import TcpProxy

pytestmark = pytest.mark.integration

WAKE = 1.0  # seconds for the calling thread to notice its own timeout and end


def _ends_within(call: Callable[[], object], seconds: float) -> BaseException | None:
    """Run ``call`` in a thread and wait until it ends, at most ``seconds``; return what it raised."""
    done = threading.Event()
    raised: list[BaseException | None] = [None]

    def run() -> None:
        try:
            call()
        except BaseException as exc:  # handed to the test
            raised[0] = exc
        finally:
            done.set()

    threading.Thread(target=run, daemon=True, name="blackholed-call").start()
    assert done.wait(seconds), f"the call through the blackhole was still blocked after {seconds:.1f} s"
    return raised[0]


@pytest.fixture
def redis_proxy(own_redis) -> Iterator[TcpProxy]:
    proxy = TcpProxy(own_redis.port).start()
    yield proxy
    proxy.stop()


@pytest.fixture
def postgres_proxy(service_env) -> Iterator[tuple[TcpProxy, str]]:
    """A proxy in front of the test PostgreSQL (its Unix socket or loopback port), and a URL through it."""
    url = service_env["DATABASE_URL"]
    params = conninfo_to_dict(url)
    host, port = str(params.get("host") or "127.0.0.1"), str(params.get("port") or 5432)
    proxy = TcpProxy(f"{host}/.s.PGSQL.{port}" if host.startswith("/") else int(port)).start()
    yield proxy, make_conninfo(url, host="127.0.0.1", port=str(proxy.listen_port))
    proxy.stop()


def _redis_settings(proxy: TcpProxy) -> Settings:
    return Settings(
        redis_url=proxy.url,
        mailbox_redis_url=None,  # the mailbox through the proxy too, in the cluster pass as well
        mailbox_redis_cluster=False,
        redis_socket_timeout_seconds=1,
        redis_connect_timeout_seconds=1,
    )


@pytest.mark.parametrize("client", [mailbox_client, redis_client], ids=["mailbox", "broker"])
def test_a_redis_command_on_a_half_open_connection_times_out(redis_proxy, client):
    settings = _redis_settings(redis_proxy)
    connected = client(settings)
    assert connected.ping()  # the connection is open before the path breaks
    redis_proxy.blackhole()
    raised = _ends_within(lambda: connected.get("anything"), settings.redis_socket_timeout_seconds + WAKE)
    assert isinstance(raised, redis.TimeoutError)
    fresh = client(settings)  # a new connection: accepted by the path, never answered
    limit = settings.redis_connect_timeout_seconds + settings.redis_socket_timeout_seconds + WAKE
    assert isinstance(_ends_within(fresh.ping, limit), redis.TimeoutError)
    redis_proxy.heal()
    assert client(settings).ping()  # and the path works again once it heals


def test_the_celery_broker_connection_times_out_on_a_half_open_path(redis_proxy):
    from celery import Celery

    from memq.shared.celery_config import celery_config

    settings = _redis_settings(redis_proxy)
    app = Celery("blackhole-test")
    app.conf.update(celery_config(settings, redis_proxy.url))
    with app.connection_for_write() as conn:
        client = conn.default_channel.client  # the broker transport's own Redis client
        assert client.ping()
        redis_proxy.blackhole()
        raised = _ends_within(client.ping, settings.redis_socket_timeout_seconds + WAKE)
    assert isinstance(raised, redis.TimeoutError)


def test_a_postgres_connection_through_a_dead_path_times_out(postgres_proxy):
    proxy, url = postgres_proxy
    forget_urls()
    settings = Settings(database_url=url, database_connect_timeout_seconds=2)
    with pg_owner_connect(settings, autocommit=True) as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)
    proxy.blackhole()

    def connect() -> None:
        pg_owner_connect(settings, autocommit=True).close()

    raised = _ends_within(connect, settings.database_connect_timeout_seconds + WAKE)
    assert isinstance(raised, psycopg.OperationalError) and "timeout" in str(raised)


def test_the_read_sides_pool_connects_with_the_configured_timeouts(postgres_proxy):
    from memq.memory.connections import Connections

    _, url = postgres_proxy
    forget_urls()
    settings = Settings(database_url=url, database_connect_timeout_seconds=2, redis_url="redis://127.0.0.1:1/0")
    conns = Connections.open(settings, max_size=2)
    try:
        with conns.owner() as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
            assert conn.info.get_parameters().get("connect_timeout") == "2"
            assert conn.info.get_parameters().get("keepalives_idle") == str(settings.database_keepalive_seconds)
    finally:
        conns.close()
