"""``Connections.spare`` (memq.memory): the second connection retrieval shares its legs with beyond
one conversation (``legs.Spare``), taken from the API's pool only when one is free at once."""

from __future__ import annotations

import psycopg
import pytest

pytestmark = pytest.mark.integration


def test_a_spare_is_scoped_to_the_tenant_and_comes_back_unscoped(api_services, tenant):
    with api_services.connections.spare(tenant) as conn:
        assert conn is not None
        scoped = conn.execute("SELECT current_setting('memq.tenant', true), row_security_active('episode_message')")
        assert scoped.fetchone() == (tenant, True)
    with api_services.owner_conn() as again:  # the pool's reset undid the scope
        assert again.execute("SELECT current_setting('memq.tenant', true)").fetchone()[0] in ("", None)


def test_with_every_connection_taken_there_is_no_spare_and_nothing_waits(api_services, tenant):
    pool = api_services.connections.pool
    taken: list[psycopg.Connection] = []
    try:
        while len(taken) < pool.max_size:
            taken.append(pool.getconn(timeout=30))
        with api_services.connections.spare(tenant) as conn:
            assert conn is None
    finally:
        for conn in taken:
            pool.putconn(conn)
    # a connection comes back once a pool worker has reset it: wait for one (the pool's
    # event), not for a time
    assert pool.min_size >= 1
    pool.wait(timeout=30)
    with api_services.connections.spare(tenant) as conn:
        assert conn is not None
