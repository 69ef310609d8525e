"""Tenant scope of a PostgreSQL connection: the one place that puts a connection under
row-level security (migration 0014, docs/isolation.md).

Every table holding tenant data has a policy that lets a row through only when its
``tenant_id`` equals the setting ``memq.tenant``, for the application role
(``MEMQ_DATABASE_APP_ROLE``, NOBYPASSRLS). A scoped connection has ``SET ROLE`` to that
role, and the tenant set either

* for the session (:func:`scope`): a connection dedicated to one tenant for its whole
  life (a worker task's, a CLI command's, one API request's pooled connection, which
  :func:`unscope` resets when it goes back to the pool), or
* for one transaction (:func:`tenant_transaction`, ``set_config(..., true)``, i.e.
  ``SET LOCAL``): a long-lived connection serving several tenants in turn (the review
  notes writer).

A scoped connection with no tenant set reads and writes nothing: the setting is then NULL
or '' and no row's ``tenant_id`` equals it. Work across tenants (migrations, audit,
metrics, sweeps, key lookups before the tenant is known) runs on an owner connection
(``memq.shared.connections.pg_owner_connect``), which bypasses the policies as the
tables' owner.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from memq.shared.ids import check_tenant

if TYPE_CHECKING:
    import psycopg

# The setting the policies read (current_setting('memq.tenant', true)).
TENANT_SETTING = "memq.tenant"


def quoted_app_role(configured: object = None) -> str:
    """The application role as a quoted SQL identifier, for migrations: ``configured`` (the
    ``app_role`` attribute a caller of the migrations set) or ``MEMQ_DATABASE_APP_ROLE``."""
    role = configured
    if role is None:
        from memq.shared.settings import get_settings

        role = get_settings().database_app_role
    return '"' + str(role).replace('"', '""') + '"'


def scope(conn: psycopg.Connection, role: str, tenant: str | None) -> psycopg.Connection:
    """Put the connection under the application role with ``tenant`` set for the session
    (None: no tenant, so nothing is visible until :func:`tenant_transaction`). Committed
    at once on a connection that is not autocommit: a session setting made in a
    transaction that is rolled back is undone with it."""
    # set_config('role', ...) is SET ROLE (same membership check), here in the same round trip
    conn.execute(
        "SELECT set_config('role', %s, false), set_config(%s, %s, false)",
        (role, TENANT_SETTING, check_tenant(tenant) if tenant else ""),
    )
    if not conn.autocommit:
        conn.commit()
    return conn


def unscope(conn: psycopg.Connection) -> None:
    """Back to the connecting (owner) role with no tenant set: for a pooled connection
    returned to the pool."""
    conn.execute("SELECT set_config('role', 'none', false), set_config(%s, '', false)", (TENANT_SETTING,))


@contextmanager
def tenant_transaction(conn: psycopg.Connection, tenant: str) -> Iterator[psycopg.Connection]:
    """A transaction with ``tenant`` set for it alone (``SET LOCAL``), on a scoped
    connection (a connection of several tenants in turn)."""
    with conn.transaction():
        conn.execute("SELECT set_config(%s, %s, true)", (TENANT_SETTING, check_tenant(tenant)))
        yield conn
