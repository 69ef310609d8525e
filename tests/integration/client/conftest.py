"""memq.client against a live API (``api_url``, tests/integration/live_api.py), with a key
of each test's own tenant."""

from __future__ import annotations

import uuid

import pytest
from live_api import key_of


@pytest.fixture
def api_key(settings, tenant) -> str:
    return key_of(settings, tenant, "client-test")


@pytest.fixture
def other_tenant(settings) -> tuple[str, str]:
    """Another tenant and a key of it."""
    other = f"t{uuid.uuid4().hex[:12]}"
    return other, key_of(settings, other, "client-test")


@pytest.fixture
def memq(api_url, api_key):
    from memq.client import Client, Retries

    with Client(api_url, api_key, retries=Retries(attempts=3, backoff=0.05)) as c:
        yield c
