"""Row-level security (migration 0014, ``shared/db/tenant_scope.py``): two tenants planted
through the real code paths (the producer and the in-process worker for conversations,
messages, participants and episodes; retrieval and the review stage for pending and applied
reviews; facts with their history; a key and its activity log entry; a webhook endpoint
and a delivery; a user change; a sequence gap), then, on every table of the schema with a ``tenant_id`` column, found in
the catalog (a table added later is covered without touching this test): a connection of
tenant A reads no row of B even with no tenant filter, a connection with no tenant reads
nothing, and writing a row of B from A is refused."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import psycopg
import pytest
from test_user_scope import _add_fact
from waiting import wait_until

pytestmark = pytest.mark.integration

TALK = [
    ("user", "We should plan the hiking trip to the Dolomites for the second week of July."),
    ("assistant", "Good idea: the huts open in late June, so July works for the Alta Via 1."),
    ("user", "Book the Rifugio Lagazuoi for two nights and check the cable car times."),
    ("assistant", "Done: two nights at Lagazuoi, the cable car runs every twenty minutes."),
]
LATER = [
    ("user", "Did we book the Lagazuoi hut for the Dolomites trip already?"),
    ("assistant", "Yes, the hut is booked for two nights in July."),
]


@dataclass(frozen=True)
class Tenant:
    name: str
    conversation: str
    user: str


def tenant_tables(conn: psycopg.Connection) -> list[str]:
    """Every table of the schema holding tenant data: those with a tenant_id column."""
    rows = conn.execute(
        "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'tenant_id' AND NOT a.attisdropped "
        "WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') ORDER BY 1"
    ).fetchall()
    return [r[0] for r in rows]


def _messages(talk, start: datetime, user: str) -> list[dict]:
    return [
        {
            "role": role,
            "content": text,
            "timestamp": (start + timedelta(minutes=i)).isoformat(),
            "user_id": user,
            **({"metadata": {"name": "Ana"}} if role == "user" else {}),
        }
        for i, (role, text) in enumerate(talk)
    ]


def _plant(settings, name: str) -> Tenant:
    """One tenant's rows in every table, each through the code that writes it in production."""
    from memq.memory.retrieval.service import retrieve_memory
    from memq.producer.client import Producer
    from memq.shared.activity import cli_actor
    from memq.shared.connections import pg_connect
    from memq.shared.db.api_keys import create_key
    from memq.shared.review_notes import flush_review_notes
    from memq.shared.users import move_conversation
    from memq.shared.webhooks import events
    from memq.shared.webhooks.destinations import Allowance, Destinations
    from memq.shared.webhooks.endpoints import add_endpoint

    run = uuid.uuid4().hex[:8]
    conv, chat, user = f"trip-{run}", f"chat-{run}", f"ana-{run}"
    producer = Producer(settings)
    producer.settings = settings.model_copy(update={"tenant": name})
    start = datetime.now(UTC) - timedelta(hours=6)
    with pg_connect(settings, tenant=name, autocommit=True) as conn:
        # nothing listens there: the delivery stays pending or failed, a row either way
        opened = Destinations(Allowance.parse("127.0.0.1"))
        add_endpoint(conn, name, "http://127.0.0.1:9/hook", opened, ["episode.created", "fact.created"])
        producer.add_messages(_messages(TALK, start, user), conversation_id=conv)
        producer.flush(conv)
        producer.wait_idle(conv, timeout=240)
        asked = start + timedelta(hours=2)  # before chat's segment, which then reviews it
        retrieve_memory("the hut in the Dolomites", tenant=name, asked_in=chat, settings=settings, conn=conn, now=asked)
        assert flush_review_notes()
        producer.add_messages(_messages(LATER, start + timedelta(hours=3), user), conversation_id=chat)
        producer.flush(chat)
        producer.wait_idle(chat, timeout=240)
        # the review stage rates what was retrieved once chat's episode is written (a task of its own)
        wait_until(lambda: conn.execute("SELECT count(*) FROM memory_review").fetchone()[0], 120)  # type: ignore[index]
        fact = _add_fact(conn, settings, name, conv, "Ana plans a hiking trip to the Dolomites.")
        with conn.transaction():
            events.emit(conn, "fact.created", name, {"fact_id": fact}, conversation_id=conv)
        create_key(conn, name, "rls test", actor=cli_actor("rls-test"))  # and its activity log entry
        move_conversation(producer.redis, conn, settings, tenant=name, conversation_id=chat, user_id=f"bo-{run}")
        # a gap is recorded when Redis lost numbers; written here as the sync writes it
        conn.execute(
            "INSERT INTO seq_gap (tenant_id, conversation_id, first_seq, last_seq, reason) "
            "VALUES (%s, %s, 1000, 1001, 'rewind')",
            (name, conv),
        )
    return Tenant(name, conv, user)


@pytest.fixture(scope="module")
def tenants(settings, worker) -> tuple[Tenant, Tenant]:
    a, b = (_plant(settings, f"rls{side}{uuid.uuid4().hex[:10]}") for side in "ab")
    return a, b


@pytest.fixture(scope="module")
def tables(settings, tenants) -> list[str]:
    from memq.shared.connections import pg_owner_connect

    with pg_owner_connect(settings, autocommit=True) as owner:
        found = tenant_tables(owner)
        # each table holds rows of both tenants, or the checks below would prove nothing for it
        empty = [
            (t, tenant.name)
            for t in found
            for tenant in tenants
            if not owner.execute(f"SELECT count(*) FROM {t} WHERE tenant_id = %s", (tenant.name,)).fetchone()[0]  # type: ignore[index]
        ]
    assert not empty, f"no rows planted in {empty}"
    return found


def test_every_table_with_tenant_data_has_row_level_security_and_a_policy(settings):
    from memq.shared.connections import pg_owner_connect

    with pg_owner_connect(settings, autocommit=True) as owner:
        found = tenant_tables(owner)
        assert len(found) >= 13
        rows = owner.execute(
            "SELECT c.relname, c.relrowsecurity, "
            "(SELECT count(*) FROM pg_policy p WHERE p.polrelid = c.oid AND p.polqual IS NOT NULL "
            "AND pg_get_expr(p.polqual, p.polrelid) LIKE '%%memq.tenant%%' "
            "AND pg_get_expr(p.polwithcheck, p.polrelid) LIKE '%%memq.tenant%%') "
            "FROM pg_class c WHERE c.oid = ANY(%s::regclass[])",
            (found,),
        ).fetchall()
        role = owner.execute(
            "SELECT rolsuper, rolbypassrls, rolcanlogin FROM pg_roles WHERE rolname = %s",
            (settings.database_app_role,),
        ).fetchone()
    assert {r[0] for r in rows} == set(found)
    assert [r[0] for r in rows if not r[1]] == [], "tables without row-level security"
    assert [r[0] for r in rows if not r[2]] == [], "tables without a policy on memq.tenant"
    assert role == (False, False, False), "the application role must not bypass row-level security"


def test_a_tenant_sees_only_its_own_rows_with_no_filter(settings, tenants, tables):
    from memq.shared.connections import pg_connect

    for me in tenants:
        with pg_connect(settings, tenant=me.name, autocommit=True) as conn:
            assert conn.execute("SELECT current_user").fetchone() == (settings.database_app_role,)
            for table in tables:
                seen = {r[0] for r in conn.execute(f"SELECT tenant_id FROM {table}")}  # no filter on purpose
                assert seen == {me.name}, (table, seen)


def test_a_connection_with_no_tenant_reads_nothing(settings, tenants, tables):
    from memq.shared.connections import pg_connect

    with pg_connect(settings, tenant=None, autocommit=True) as conn:
        counts = {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in tables}  # type: ignore[index]
    assert counts == dict.fromkeys(tables, 0)


def test_a_tenant_cannot_write_rows_of_another(settings, tenants, tables):
    """An insert naming B (a copy of one of A's rows) and an update moving A's rows to B are
    refused; an update or delete aimed at B's rows touches none."""
    from memq.shared.connections import pg_connect, pg_owner_connect

    a, b = tenants
    with pg_connect(settings, tenant=a.name, autocommit=True) as conn:
        for table in tables:
            columns = [
                r[0]
                for r in conn.execute(
                    "SELECT attname FROM pg_attribute WHERE attrelid = %s::regclass AND attnum > 0 "
                    "AND NOT attisdropped AND attgenerated = '' ORDER BY attnum",
                    (table,),
                )
            ]
            values = ", ".join("%s::text" if c == "tenant_id" else c for c in columns)
            copy = f"INSERT INTO {table} ({', '.join(columns)}) SELECT {values} FROM {table} LIMIT 1"
            with pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"), conn.transaction():
                conn.execute(copy, (b.name,))
            with pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"), conn.transaction():
                conn.execute(f"UPDATE {table} SET tenant_id = %s", (b.name,))
            aimed = conn.execute(f"UPDATE {table} SET tenant_id = tenant_id WHERE tenant_id = %s", (b.name,))
            assert aimed.rowcount == 0
            assert conn.execute(f"DELETE FROM {table} WHERE tenant_id = %s", (b.name,)).rowcount == 0
    with pg_owner_connect(settings, autocommit=True) as owner:
        for table in tables:
            kept = owner.execute(f"SELECT count(*) FROM {table} WHERE tenant_id = %s", (b.name,)).fetchone()
            assert kept is not None and kept[0] > 0, table


def test_the_tenant_of_a_transaction_ends_with_it(settings, tenants):
    """A connection serving several tenants in turn (the review notes writer) sets each for
    one transaction only."""
    from memq.shared.connections import pg_connect
    from memq.shared.db.tenant_scope import tenant_transaction

    a, b = tenants
    with pg_connect(settings, tenant=None, autocommit=True) as conn:
        for me in (a, b):
            with tenant_transaction(conn, me.name):
                seen = {r[0] for r in conn.execute("SELECT DISTINCT tenant_id FROM episodic_memory")}
            assert seen == {me.name}
            assert conn.execute("SELECT count(*) FROM episodic_memory").fetchone() == (0,)


def test_unscoping_a_connection_leaves_no_tenant_behind(settings, tenants):
    """What the API's pool does to a request's connection when it is returned (its reset)."""
    from memq.shared.connections import pg_owner_connect
    from memq.shared.db.tenant_scope import scope, unscope

    a, _ = tenants
    with pg_owner_connect(settings, autocommit=True) as conn:
        owner = conn.execute("SELECT current_user").fetchone()
        scope(conn, settings.database_app_role, a.name)
        assert conn.execute("SELECT current_user").fetchone() == (settings.database_app_role,)
        unscope(conn)
        assert conn.execute("SELECT current_user, current_setting('memq.tenant', true)").fetchone() == (*owner, "")  # type: ignore[misc]
