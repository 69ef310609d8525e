"""The levers of the soak's resource faults (``faults_resources``) on its own servers, and
what those faults read back.

- **Redis' memory.** ``maxmemory`` lowered below what Redis uses, then restored, as an
  operator would; under ``noeviction`` Redis refuses every write that could grow it.
- **A full disk, without root.** A file-size limit (``RLIMIT_FSIZE``) on a running server's
  processes: a write past it fails (``EFBIG``, or a short write Redis reports as ``ENOSPC``)
  as it does on a full disk, and lifting it is making room. The soak's Redis ignores
  ``SIGXFSZ`` (``EmbeddedRedis.ignore_file_size_signal``), PostgreSQL ignores it by itself,
  so neither dies of it. Limits are changed with ``prlimit`` as the user the process runs as
  (the embedded PostgreSQL runs as ``pgserver`` when we are root, and changing another user's
  limits needs ``CAP_SYS_RESOURCE``, which a container may withhold from root); only the soft
  limit moves, so it can always be raised back to the hard one.
- **A table larger than the limit.** PostgreSQL's limit cannot be lower than a WAL segment
  (16 MB by default): every backend writes WAL into those files, and a WAL write that fails
  stops the server. So the table the workers extend, ``episode_message``, is first made larger
  than one, with ballast rows of a tenant of their own (no vector, nothing the soak's checks
  read), removed after the fault.
- **The fleet's backlog** (``memq_backlog``'s inbox part) and Redis' bytes per waiting message,
  for the overload.
"""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from memq.shared.mailbox.backlog import measure_backlog
from memq.shared.mailbox.keys import conversation_keys

if TYPE_CHECKING:
    import psycopg
    import redis

    from memq.shared.settings import Settings
    from memq_lab.soak.workers import Process, WorkerPool

SIGXFSZ_BIT = 1 << (25 - 1)  # SIGXFSZ (25 on Linux) in /proc/<pid>/status' signal masks
BALLAST_TENANT = "soak-ballast"
BALLAST_PAD = 1800  # bytes of metadata a ballast row carries: four rows to an 8 kB page, none TOASTed


# -- Redis' memory -----------------------------------------------------------------
def lower_maxmemory(client: redis.Redis) -> tuple[str, int]:
    """Set Redis' ``maxmemory`` below anything it could use (1 byte: 0 would mean no limit),
    so that it stays full for as long as the fault lasts, however much the workers free
    meanwhile (they finish episodes and delete what those held). Returns (the setting
    before, the bytes Redis used)."""
    before = str(client.config_get("maxmemory")["maxmemory"])
    used = int(client.info("memory")["used_memory"])
    client.config_set("maxmemory", 1)
    return before, used


def restore_maxmemory(client: redis.Redis, before: str) -> None:
    client.config_set("maxmemory", before)


# -- a full disk: RLIMIT_FSIZE ------------------------------------------------------
def _status_field(pid: int, name: str) -> list[str]:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{name}:"):
            return line.split()[1:]
    raise RuntimeError(f"/proc/{pid}/status has no {name}")


def ignores_file_size_signal(pid: int) -> bool:
    return bool(int(_status_field(pid, "SigIgn")[0], 16) & SIGXFSZ_BIT)


def limit_file_size(pid: int, limit: int | None) -> bool:
    """Set process ``pid``'s soft file-size limit to ``limit`` bytes, or (None) back up to
    its hard limit. False when the process is gone."""
    try:
        uid, gid = int(_status_field(pid, "Uid")[0]), int(_status_field(pid, "Gid")[0])
    except (FileNotFoundError, ProcessLookupError):
        return False
    other = uid != os.geteuid()  # then prlimit runs as the process' user: it may change its own limits
    value = "unlimited" if limit is None else str(limit)
    if limit is None:  # the hard limit is the ceiling: "unlimited" or a number of bytes
        hard = next(line for line in Path(f"/proc/{pid}/limits").read_text().splitlines() if "Max file size" in line)
        value = hard.split()[4]
    done = subprocess.run(
        ["prlimit", f"--pid={pid}", f"--fsize={value}:"],
        capture_output=True,
        text=True,
        timeout=10,
        user=uid if other else None,
        group=gid if other else None,
        extra_groups=[] if other else None,
    )
    if done.returncode != 0:
        if not Path(f"/proc/{pid}").exists():
            return False
        raise RuntimeError(f"prlimit on pid {pid} failed: {done.stderr.strip()}")
    return True


@dataclass
class FileSizeLimit:
    """A soft file-size limit of ``limit`` bytes on processes, and its lifting."""

    limit: int
    pids: set[int] = field(default_factory=set)

    def apply(self, pids: Iterable[int]) -> None:
        for pid in pids:
            if limit_file_size(pid, self.limit):
                self.pids.add(pid)

    def lift(self, also: Iterable[int] = ()) -> None:
        """Back to the hard limit: every process limited here, and ``also`` (processes that
        inherited the limit meanwhile)."""
        for pid in sorted(self.pids | set(also)):
            limit_file_size(pid, None)
        self.pids.clear()


def postmaster_pid(folder: Path) -> int:
    return int((folder / "postmaster.pid").read_text().splitlines()[0])


def children(pid: int) -> list[int]:
    """The processes ``pid`` forked (the kernel's list: a child appears at once)."""
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except FileNotFoundError:
        return []


def writing_backends(conn: psycopg.Connection) -> list[int]:
    """PostgreSQL's processes that extend tables: sessions and autovacuum workers (not the
    checkpointer or the background writer, which write blocks that exist, as they can on a
    full disk)."""
    rows = conn.execute(
        "SELECT pid FROM pg_stat_activity WHERE backend_type IN ('client backend', 'autovacuum worker')"
    ).fetchall()
    return [int(pid) for (pid,) in rows]


def wal_segment_bytes(conn: psycopg.Connection) -> int:
    row = conn.execute("SELECT pg_size_bytes(current_setting('wal_segment_size'))").fetchone()
    assert row is not None
    return int(row[0])


def table_bytes(conn: psycopg.Connection, table: str = "episode_message") -> int:
    row = conn.execute("SELECT pg_relation_size(%s::regclass)", (table,)).fetchone()
    assert row is not None
    return int(row[0])


def grow_messages_table(conn: psycopg.Connection, at_least: int, dim: int) -> int:
    """Ballast rows (tenant ``BALLAST_TENANT``, one episode of its own, no vectors) until the
    ``episode_message`` table's file holds ``at_least`` bytes. Returns the rows added."""
    from memq.shared.db.episodes import EpisodeRow, insert_episode

    added = 0
    while (missing := at_least - table_bytes(conn)) > 0:
        episode = conn.execute(
            "SELECT episode_id FROM episode_message WHERE tenant_id = %s LIMIT 1", (BALLAST_TENANT,)
        ).fetchone()
        if episode is None:
            now = datetime.now(UTC)
            row = EpisodeRow(
                id=str(uuid.uuid4()),
                tenant_id=BALLAST_TENANT,
                conversation_id="ballast",
                messages=[{"seq": 1, "id": "ballast-0", "role": "user", "content": "ballast"}],
                first_seq=1,
                last_seq=1,
                title="ballast",
                summary="ballast rows that fill the table",
                embedding=np.full(dim, 1 / np.sqrt(dim), dtype=np.float32),
                stability=1.0,
                difficulty=5.0,
                fsrs_card={},
                surprise=0.0,
                boundary_reason="flush",
                boundary_source="rule",
                detector="none",
                summary_source="extractive",
                summary_model=None,
                summary_error=None,
                embedding_model="none",
                start_at=now,
                end_at=now,
            )
            insert_episode(conn, row)
            episode = (row.id,)
        rows = missing // (8192 // 4) + 4
        conn.execute(
            "INSERT INTO episode_message (tenant_id, conversation_id, seq, message_id, episode_id, role, content, "
            "ts, metadata) "
            "SELECT %(tenant)s, 'ballast', base + n, 'ballast-' || (base + n), %(episode)s, 'user', 'ballast', now(), "
            "jsonb_build_object('pad', repeat('x', %(pad)s)) "
            "FROM generate_series(1, %(rows)s) AS n, "
            "(SELECT coalesce(max(seq), 0) AS base FROM episode_message WHERE tenant_id = %(tenant)s) AS b",
            {"tenant": BALLAST_TENANT, "episode": episode[0], "pad": BALLAST_PAD, "rows": rows},
        )
        added += rows
    return added


def remove_ballast(conn: psycopg.Connection) -> None:
    conn.execute("DELETE FROM episode_message WHERE tenant_id = %s", (BALLAST_TENANT,))
    conn.execute("DELETE FROM episodic_memory WHERE tenant_id = %s", (BALLAST_TENANT,))


# -- what the fleet logged -----------------------------------------------------------
def _processes(pool: WorkerPool) -> list[Process]:
    return [*pool.workers, *([pool.beat] if pool.beat is not None else [])]


def log_offsets(pool: WorkerPool) -> dict[str, int]:
    """Where each worker's and the beat's log ends now: what they log from here is read by
    ``logged``."""
    return {p.name: p.log.stat().st_size if p.log.exists() else 0 for p in _processes(pool)}


def logged(pool: WorkerPool, since: dict[str, int], event: str, key: str) -> Counter[str]:
    """The JSON log lines ``event`` the workers and the beat wrote since ``since``, counted by
    their ``key``."""
    counts: Counter[str] = Counter()
    for p in _processes(pool):
        if not p.log.exists():
            continue
        with open(p.log, "rb") as fh:
            fh.seek(since.get(p.name, 0))
            for raw in fh:
                if f'"{event}"'.encode() not in raw:
                    continue
                try:
                    line = json.loads(raw)
                except ValueError:
                    continue
                if line.get("event") == event:
                    counts[str(line.get(key))] += 1
    return counts


# -- the overload: backlog and Redis bytes per waiting message -------------------------
def inbox_backlog(client: redis.Redis, settings: Settings) -> int:
    """Messages in the inboxes of conversations waiting for a drain: ``memq_backlog``'s part
    that grows with ingest (the rest are queued tasks)."""
    return measure_backlog(client, client, settings).inbox_messages


def bytes_per_waiting_message(client: redis.Redis, settings: Settings, tenant: str, conversations: list[str]) -> float:
    """What Redis holds per message waiting in an inbox: its inbox item, and its entry in the
    dedup window (``MEMORY USAGE ... SAMPLES 0``: every element counted)."""
    inbox_bytes = inbox_items = ids_bytes = ids_items = 0
    for conv in conversations:
        keys = conversation_keys(settings, tenant, conv)
        pipe = client.pipeline(transaction=False)
        pipe.memory_usage(keys.inbox, samples=0)
        pipe.llen(keys.inbox)
        pipe.memory_usage(keys.ids, samples=0)
        pipe.zcard(keys.ids)
        a, b, c, d = pipe.execute()
        inbox_bytes, inbox_items = inbox_bytes + int(a or 0), inbox_items + int(b)
        ids_bytes, ids_items = ids_bytes + int(c or 0), ids_items + int(d)
    if not inbox_items:
        return 0.0
    return inbox_bytes / inbox_items + (ids_bytes / ids_items if ids_items else 0.0)
