"""memq.client against a live API: the app served by uvicorn on a loopback port, on the
suite's real Redis and PostgreSQL (tests/integration/conftest.py), with a key of each test's
own tenant."""

from __future__ import annotations

import socket
import threading
import uuid

import pytest
from waiting import wait_until


@pytest.fixture(scope="session")
def client_api_services(service_env, settings):
    from memq.api.services import Services

    svc = Services.start(settings)
    yield svc
    svc.close()


@pytest.fixture(scope="session")
def api_url(client_api_services, settings):
    """The base URL of an app served by uvicorn on a free loopback port."""
    import uvicorn

    from memq.api.app import create_app

    app = create_app(settings, services=client_api_services)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_config=None, lifespan="on", access_log=False)
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    wait_until(lambda: server.started, 30, interval=0.05, message="uvicorn did not start")
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(10)


def key_of(settings, tenant: str) -> str:
    """A new API key of ``tenant`` (made on a connection of that tenant: row-level security)."""
    from memq.shared.connections import pg_connect
    from memq.shared.db.api_keys import create_key

    with pg_connect(settings, tenant=tenant, autocommit=True) as conn:
        new, _ = create_key(conn, tenant, "client-test")
    return str(new.key)


@pytest.fixture
def api_key(settings, tenant) -> str:
    return key_of(settings, tenant)


@pytest.fixture
def other_tenant(settings) -> tuple[str, str]:
    """Another tenant and a key of it."""
    other = f"t{uuid.uuid4().hex[:12]}"
    return other, key_of(settings, other)


@pytest.fixture
def memq(api_url, api_key):
    from memq.client import Client, Retries

    with Client(api_url, api_key, retries=Retries(attempts=3, backoff=0.05)) as c:
        yield c
