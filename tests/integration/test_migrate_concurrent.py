"""Replicas starting together migrate once: ``memq migrate`` takes a PostgreSQL advisory
lock, so of several processes one migrates and the others wait for it, then find the schema
current (before the lock, two of them racing to create the same tables failed)."""

from __future__ import annotations

import os
import subprocess
import sys

import psycopg
import pytest
from waiting import wait_until

from memq.shared.db.migrate import MIGRATION_LOCK

pytestmark = pytest.mark.integration

PROCESSES = 3


def _waiting_for_the_lock(conn: psycopg.Connection) -> int:
    row = conn.execute(
        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = %s AND NOT granted",
        (MIGRATION_LOCK,),
    ).fetchone()
    assert row is not None
    return int(row[0])


def test_processes_started_together_migrate_once(service_env, empty_database):
    env = {**os.environ, **service_env, "DATABASE_URL": empty_database}
    with psycopg.connect(empty_database, autocommit=True) as holder:
        # Hold the lock ourselves until every process is queued behind it: their starts
        # overlap by construction, not by luck of scheduling.
        holder.execute("SELECT pg_advisory_lock(%s)", (MIGRATION_LOCK,))
        procs = [
            subprocess.Popen(
                [sys.executable, "-m", "memq", "migrate"],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(PROCESSES)
        ]

        def all_queued() -> bool:
            if _waiting_for_the_lock(holder) >= PROCESSES:
                return True
            assert all(p.poll() is None for p in procs), [p.communicate() for p in procs if p.poll() is not None]
            return False

        # polling pg_locks for the event "all queued", not a timing margin
        wait_until(all_queued, 120, interval=0.05, message="the processes never queued for the migration lock")
        holder.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK,))
    outputs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0] * PROCESSES, outputs
    lines = sorted(out.strip().splitlines()[-1] for out, _ in outputs)
    migrated = [line for line in lines if line.startswith("database schema migrated from empty to revision")]
    waited = [line for line in lines if "already at revision" in line and "after waiting" in line]
    assert len(migrated) == 1, lines
    assert len(waited) == PROCESSES - 1, lines
    with psycopg.connect(empty_database) as conn:
        versions = conn.execute("SELECT version_num FROM memq_alembic_version").fetchall()
    assert len(versions) == 1 and migrated[0].endswith(versions[0][0])
