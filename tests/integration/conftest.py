"""Real services for integration tests: Redis, PostgreSQL with pgvector (embedded unless
REDIS_URL / DATABASE_URL are set) and a real Celery worker running in this process
(``celery.contrib.testing.worker.start_worker``, solo pool) against the real broker.

Isolation: tests use Redis database 15 (flushed at session start, so the demo's data in
database 0 is untouched) and a fresh tenant per test, so PostgreSQL rows never collide.
"""

from __future__ import annotations

import os
import sys
import uuid
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

ROOT = Path(__file__).resolve().parents[2]
TEST_REDIS_DB = 15
sys.path.insert(0, str(ROOT / "tests" / "integration"))  # for invariants and conftest helpers

import cluster_mode  # noqa: E402 - found through the sys.path entry just above
from live_api import api_url, live_api_services  # noqa: E402, F401 - fixtures: one live API for the clients and integrations


def _with_db(url: str, db: int) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, f"/{db}", parts.query, parts.fragment))


def _prepare_environment() -> dict[str, str]:
    from memq.shared.embedded import services
    from memq.shared.settings import Settings, reset_settings

    base = Settings()
    urls = services.up(base)
    env = {
        "REDIS_URL": _with_db(urls.redis_url, TEST_REDIS_DB),
        "DATABASE_URL": urls.database_url,
        "MEMQ_DATA_DIR": str(base.data_path),
        "MEMQ_LOG_LEVEL": "WARNING",
        # Short timings so inactivity collapse and the stalled-work sweep are testable.
        "MEMQ_SEGMENT_TIMEOUT_MINUTES": "0.05",
        "MEMQ_COLLAPSE_CHECK_SECONDS": "1",
        "MEMQ_STALLED_AFTER_SECONDS": "30",
        "MEMQ_LLM_TIMEOUT_SECONDS": "2",
        "MEMQ_LLM_MAX_RETRIES": "1",
        # The suite's webhook receivers listen on this machine: opened here, closed by default.
        "MEMQ_WEBHOOK_ALLOW_DESTINATIONS": "127.0.0.1",
    }
    if cluster_mode.enabled():  # MEMQ_TEST_REDIS_CLUSTER=1: the mailbox on a 3-node Redis Cluster
        env.update(cluster_mode.prepare(base))
    os.environ.update(env)
    reset_settings()
    return env


@pytest.fixture(scope="session")
def service_env() -> dict[str, str]:
    env = _prepare_environment()
    import redis

    redis.Redis.from_url(env["REDIS_URL"]).flushdb()
    from memq.shared.db.migrate import upgrade
    from memq.shared.settings import get_settings

    upgrade(get_settings())
    return env


@pytest.fixture(scope="session")
def settings(service_env):
    from memq.shared.settings import get_settings

    return get_settings()


@pytest.fixture(scope="session")
def celery_app(service_env):
    from memq.worker.app import app

    # memq.worker.app reads the settings when first imported: a test module that imports it
    # (or memq.worker.tasks.*) at collection time would bind the app to the wrong broker.
    assert app.conf.broker_url == service_env["REDIS_URL"], (
        "memq.worker.app was imported before the test services were configured; import memq.worker.tasks.* "
        "inside fixtures or tests, not at module level"
    )
    return app


@pytest.fixture(scope="session")
def worker(celery_app, settings):
    """A real Celery worker consuming memq's queues in a thread of this process."""
    from celery.contrib.testing.worker import start_worker

    from memq.shared import tasks
    from memq.shared.embeddings import get_embedder

    get_embedder(settings)  # load the model before tasks arrive (first load takes seconds)
    with start_worker(
        celery_app,
        pool="solo",
        concurrency=1,
        perform_ping_check=False,
        loglevel="WARNING",
        queues=list(tasks.ALL_QUEUES),
        shutdown_timeout=30,
    ) as w:
        yield w


@pytest.fixture
def tenant() -> str:
    return f"t{uuid.uuid4().hex[:12]}"


@pytest.fixture
def producer(settings, tenant):
    from memq.producer.client import Producer

    p = Producer(settings)
    p.settings = settings.model_copy(update={"tenant": tenant})
    return p


@pytest.fixture
def db(settings):
    """A connection as the schema's owner, which row-level security does not restrict: the
    tests' own planting and checks, across tenants. The code under test scopes its own
    connections (workers, API, CLI); tests/integration/db/test_row_level_security.py checks
    the policies themselves."""
    from memq.shared.connections import pg_owner_connect

    with pg_owner_connect(settings, autocommit=True) as conn:
        yield conn


@pytest.fixture
def tenant_db(settings, tenant):
    """A connection scoped to the test's tenant, as the application's."""
    from memq.shared.connections import pg_connect

    with pg_connect(settings, tenant=tenant, autocommit=True) as conn:
        yield conn


@pytest.fixture
def scripted_llm(settings):
    """Point the in-process worker's LLM at a scripted OpenAI-compatible server on
    127.0.0.1 for one test; litellm's real request path is used."""
    from memq.shared.settings import get_settings
    from memq_lab.testing.scripted_llm import ScriptedLLM

    assert settings is get_settings(), (
        "a test replaced the process settings; the in-process worker would not see changes"
    )
    saved = (settings.llm_model, settings.llm_api_base, settings.llm_api_key)
    with ScriptedLLM() as llm:
        settings.llm_model = "openai/scripted"
        settings.llm_api_base = llm.base_url
        settings.llm_api_key = "test-key"
        try:
            yield llm
        finally:
            settings.llm_model, settings.llm_api_base, settings.llm_api_key = saved


@pytest.fixture
def own_redis(tmp_path):
    """A Redis server of the test's own (loopback, free port, AOF in tmp_path), for tests
    that restart, kill or move it; shut down at the end if it still runs."""
    import redis

    from memq.shared.embedded.redis_server import EmbeddedRedis
    from memq_lab.testing.tcp_proxy import free_port

    server = EmbeddedRedis(tmp_path, free_port())
    server.start()
    yield server
    if server.pid() is not None:
        redis.Redis.from_url(server.url).shutdown(nosave=True)


@pytest.fixture
def empty_database(service_env):
    """A database of its own on the test server, with pgvector and nothing else."""
    admin = service_env["DATABASE_URL"]
    name = f"memq_migrate_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    parts = urlsplit(admin)
    url = urlunsplit((parts.scheme, parts.netloc, f"/{name}", parts.query, parts.fragment))
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    yield url
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


@pytest.fixture
def resolver(monkeypatch) -> dict[str, list[str]]:
    """Webhook name resolution as the test says: ``destinations.system_resolver`` replaced
    by this table (host -> addresses; a name not in it does not resolve). ``example.com``
    is a public address, so registering it works offline; a delivery to any address but
    loopback is refused before it connects (the suite reaches nothing outside)."""
    import socket

    from memq.shared.webhooks import destinations, sending

    connect = sending._connect

    def loopback_only(addresses, port, timeout):
        if not all(a.is_loopback for a in addresses):
            raise ConnectionRefusedError("the test suite connects to no address outside this machine")
        return connect(addresses, port, timeout)

    monkeypatch.setattr(sending, "_connect", loopback_only)

    table = {"example.com": ["93.184.215.14"]}

    def resolve(host: str, port: int) -> list[str]:
        if host not in table:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return table[host]

    monkeypatch.setattr(destinations, "system_resolver", resolve)
    return table
