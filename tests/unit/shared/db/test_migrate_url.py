"""The migrations reach PostgreSQL through SQLAlchemy, whose URL parser does not know
libpq's multi-host form: DATABASE_URL naming a primary and its standby
(``target_session_attrs=read-write``, what a failover needs) must still migrate."""

from __future__ import annotations

import pytest
from sqlalchemy import create_engine
from sqlalchemy.engine import make_url

from memq.shared.connections import forget_urls
from memq.shared.db.migrate import sqlalchemy_url
from memq.shared.settings import Settings


def _connect_args(database_url: str) -> dict:
    """What SQLAlchemy's psycopg dialect passes to psycopg.connect for memq's URL."""
    forget_urls()
    url = make_url(sqlalchemy_url(Settings(database_url=database_url, database_connect_timeout_seconds=7)))
    args = create_engine(url).dialect.create_connect_args(url)[1]
    args.pop("context", None)
    return dict(args)


def test_a_url_naming_two_hosts_reaches_both_in_order_and_only_the_writable_one():
    args = _connect_args(
        "postgresql://memq:s%40cret@db-a.internal:5433,db-b.internal:5434/memq?target_session_attrs=read-write"
    )
    assert (args["host"], args["port"]) == ("db-a.internal,db-b.internal", "5433,5434")
    assert args["target_session_attrs"] == "read-write"
    assert (args["user"], args["password"], args["dbname"]) == ("memq", "s@cret", "memq")


@pytest.mark.parametrize(
    ("database_url", "host", "port"),
    [
        ("postgresql://memq:pw@db.internal:5432/memq", "db.internal", "5432"),
        ("postgres://memq@db.internal/memq?sslmode=require", "db.internal", None),
        ("postgresql://postgres:@/memq?host=/run/pg", "/run/pg", None),  # the embedded server's socket
        ("host=a,b port=1 dbname=memq user=memq", "a,b", "1,1"),  # one port for every host
    ],
)
def test_single_hosts_sockets_and_key_value_strings_keep_their_meaning(database_url, host, port):
    args = _connect_args(database_url)
    assert args["host"] == host and args.get("port") == port and args["dbname"] == "memq"


def test_the_migrations_connection_has_the_configured_timeouts():
    args = _connect_args("postgresql://memq@db.internal:5432/memq?sslmode=require")
    assert args["connect_timeout"] == "7" and args["keepalives"] == "1" and args["sslmode"] == "require"
