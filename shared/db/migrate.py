"""Run the Alembic migrations (``migrations/`` at the top of the source tree, installed as
``memq/migrations`` beside ``memq/shared``) against the configured database."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import structlog

from memq.shared.client_timeouts import postgres_options
from memq.shared.connections import database_url
from memq.shared.errors import ServiceError
from memq.shared.settings import Settings

if TYPE_CHECKING:
    from alembic.config import Config

# memq/shared/db/migrate.py -> memq/migrations; in a checkout, shared/db/migrate.py -> migrations/
MIGRATIONS = Path(__file__).resolve().parents[2] / "migrations"
# pg_advisory_lock key of memq's migrations (any constant; "memq" in ASCII, for pg_locks readers)
MIGRATION_LOCK = 0x6D656D71

log = structlog.get_logger("memq.migrate")


def sqlalchemy_url(settings: Settings) -> str:
    """DATABASE_URL (a libpq URL or key=value string) as a URL of SQLAlchemy's psycopg
    dialect, with memq's connection timeouts. SQLAlchemy cannot parse libpq's multi-host
    form (``postgresql://u@h1:5432,h2:5432/db?target_session_attrs=read-write``), so the
    hosts, one or several, go into its ``host=h:port`` query parameters."""
    from psycopg.conninfo import conninfo_to_dict
    from sqlalchemy.engine import URL

    params = {k: str(v) for k, v in conninfo_to_dict(database_url(settings)).items()}
    params.update({k: str(v) for k, v in postgres_options(settings).items()})
    user, password, dbname = params.pop("user", None), params.pop("password", None), params.pop("dbname", None)
    hosts, ports = params.pop("host", "").split(","), params.pop("port", "").split(",")
    ports = ports if len(ports) == len(hosts) else ports[:1] * len(hosts)  # one port for every host
    query: dict[str, str | list[str]] = dict(params)
    if hosts != [""]:
        query["host"] = [f"{h}:{p}" if p else h for h, p in zip(hosts, ports)]
    url = URL.create("postgresql+psycopg", username=user, password=password, database=dbname, query=query)
    return url.render_as_string(hide_password=False)


def alembic_config(settings: Settings) -> Config:
    from alembic.config import Config

    cfg = Config(str(MIGRATIONS / "alembic.ini"))
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.set_main_option("sqlalchemy.url", sqlalchemy_url(settings).replace("%", "%%"))
    cfg.attributes["embedding_dim"] = settings.embedding_dim
    cfg.attributes["app_role"] = settings.database_app_role
    return cfg


@dataclass(frozen=True)
class Upgrade:
    before: str | None  # the revision found, after any other process's migration finished
    after: str | None
    waited: bool  # another process held the migration lock first

    @property
    def migrated(self) -> bool:
        return self.before != self.after


def upgrade(settings: Settings, revision: str = "head") -> Upgrade:
    """Migrate under a PostgreSQL advisory lock: of several processes starting together (API
    replicas, workers, a migration job), one migrates, the others wait for it and then find
    the schema current. The lock belongs to a session of its own and ends with it, so a
    migrator that dies releases it."""
    import psycopg
    from alembic import command

    with psycopg.connect(database_url(settings), autocommit=True, **postgres_options(settings)) as lock:
        lock.execute(f"SET lock_timeout = '{int(settings.migration_lock_timeout_seconds * 1000)}ms'")
        waited = not lock.execute("SELECT pg_try_advisory_lock(%s)", (MIGRATION_LOCK,)).fetchone()[0]  # type: ignore[index]
        if waited:
            log.info("migration_waiting", reason="another process is migrating the database")
            try:
                lock.execute("SELECT pg_advisory_lock(%s)", (MIGRATION_LOCK,))
            except psycopg.errors.LockNotAvailable as exc:
                raise ServiceError(
                    f"another process has held the migration lock for more than "
                    f"{settings.migration_lock_timeout_seconds:g} s; look for a stuck `memq migrate` "
                    f"(pg_locks, locktype 'advisory', objid {MIGRATION_LOCK}) or raise "
                    f"MEMQ_MIGRATION_LOCK_TIMEOUT_SECONDS"
                ) from exc
        try:
            before = current(settings)
            command.upgrade(alembic_config(settings), revision)
            after = current(settings)
        finally:
            lock.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK,))
    if before != after:
        log.info("migrated", before=before, after=after)
    return Upgrade(before, after, waited)


def current(settings: Settings) -> str | None:
    from alembic.runtime.migration import MigrationContext
    from sqlalchemy import create_engine, pool

    engine = create_engine(sqlalchemy_url(settings), poolclass=pool.NullPool)
    with engine.connect() as conn:
        rev = MigrationContext.configure(conn, opts={"version_table": "memq_alembic_version"}).get_current_revision()
    engine.dispose()
    return rev
