"""memq.integrations against a live API (as tests/integration/client/conftest.py): the app
served by uvicorn on a loopback port, on the suite's real Redis and PostgreSQL
(tests/integration/conftest.py), a key of each test's own tenant, and a real worker
(the ``worker`` fixture) where episodes are needed."""

from __future__ import annotations

import socket
import threading

import pytest
from waiting import wait_until


@pytest.fixture(scope="session")
def integrations_api_services(service_env, settings):
    from memq.api.services import Services

    svc = Services.start(settings)
    yield svc
    svc.close()


@pytest.fixture(scope="session")
def memq_url(integrations_api_services, settings):
    """The base URL of an app served by uvicorn on a free loopback port."""
    import uvicorn

    from memq.api.app import create_app

    app = create_app(settings, services=integrations_api_services)
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


@pytest.fixture
def memq_key(settings, tenant) -> str:
    """A new API key of the test's own tenant (made on a connection of that tenant: row-level security)."""
    from memq.shared.connections import pg_connect
    from memq.shared.db.api_keys import create_key

    with pg_connect(settings, tenant=tenant, autocommit=True) as conn:
        new, _ = create_key(conn, tenant, "integrations-test")
    return str(new.key)


@pytest.fixture
def memq(memq_url, memq_key):
    from memq.client import Client, Retries

    with Client(memq_url, memq_key, retries=Retries(attempts=3, backoff=0.05)) as c:
        yield c
