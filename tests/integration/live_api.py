"""A live API for the clients and the integrations (its fixtures imported by
tests/integration/conftest.py, so one server serves both folders): the app served by
uvicorn on a loopback port, on the suite's real Redis and PostgreSQL, and API keys of a
tenant."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator

import pytest
from waiting import wait_until


@pytest.fixture(scope="session")
def live_api_services(service_env, settings):
    from memq.api.services import Services

    svc = Services.start(settings)
    yield svc
    svc.close()


@contextlib.contextmanager
def served(app) -> Iterator[str]:
    """``app`` served by uvicorn on a free loopback port, in a thread: its base URL."""
    import uvicorn

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


@pytest.fixture(scope="session")
def api_url(live_api_services, settings):
    """The base URL of an app served by uvicorn on a free loopback port."""
    from memq.api.app import create_app

    with served(create_app(settings, services=live_api_services)) as url:
        yield url


def key_of(settings, tenant: str, name: str = "live-api-test") -> str:
    """A new API key of ``tenant`` (made on a connection of that tenant: row-level security)."""
    from memq.shared.connections import pg_connect
    from memq.shared.db.api_keys import create_key

    with pg_connect(settings, tenant=tenant, autocommit=True) as conn:
        new, _ = create_key(conn, tenant, name)
    return str(new.key)
