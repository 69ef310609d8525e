"""memq.integrations against the live API the clients' tests use too (``api_url``,
tests/integration/live_api.py), a key of each test's own tenant, and a real worker (the
``worker`` fixture) where episodes are needed."""

from __future__ import annotations

import pytest
from live_api import key_of


@pytest.fixture
def memq_url(api_url) -> str:
    return str(api_url)


@pytest.fixture
def memq_key(settings, tenant) -> str:
    """A new API key of the test's own tenant."""
    return key_of(settings, tenant, "integrations-test")


@pytest.fixture
def memq(memq_url, memq_key):
    from memq.client import Client, Retries

    with Client(memq_url, memq_key, retries=Retries(attempts=3, backoff=0.05)) as c:
        yield c
