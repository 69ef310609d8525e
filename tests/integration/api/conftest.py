"""The HTTP service on real Redis and PostgreSQL (and, where a test asks for it, a real
worker): the app in-process through Starlette's TestClient, or served by uvicorn on a
loopback port for clients that speak HTTP themselves (the MCP SDK)."""

from __future__ import annotations

import uuid

import pytest


@pytest.fixture(scope="session")
def api_services(service_env, settings):
    from memq.api.services import Services

    svc = Services.start(settings)
    yield svc
    svc.close()


@pytest.fixture(scope="session")
def app(api_services, settings):
    from memq.api.app import create_app

    return create_app(settings, services=api_services)


@pytest.fixture(scope="session")
def client(app):
    from fastapi.testclient import TestClient

    with TestClient(app, base_url="http://127.0.0.1") as c:
        yield c


def new_key(settings, tenant: str) -> dict[str, str]:
    """A key of ``tenant``, made on a connection of that tenant (row-level security)."""
    from memq.shared.connections import pg_connect
    from memq.shared.db.api_keys import create_key

    with pg_connect(settings, tenant=tenant, autocommit=True) as conn:
        new, _ = create_key(conn, tenant, "test")
    return {"Authorization": f"Bearer {new.key}"}


@pytest.fixture
def auth(settings, tenant) -> dict[str, str]:
    """Headers with a key of this test's tenant."""
    return new_key(settings, tenant)


@pytest.fixture
def stranger(settings) -> tuple[str, dict[str, str]]:
    """Another tenant and a key of it."""
    other = f"t{uuid.uuid4().hex[:12]}"
    return other, new_key(settings, other)


@pytest.fixture(scope="session")
def served(api_services, settings):
    """An app served by uvicorn on a free loopback port (its own instance: an MCP session
    manager runs once per app): its base URL."""
    from live_api import served as serve

    from memq.api.app import create_app

    with serve(create_app(settings, services=api_services)) as url:
        yield url
