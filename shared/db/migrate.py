"""Run the Alembic migrations in ``migrations/`` against the configured database."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from shared.connections import service_urls
from shared.settings import Settings

if TYPE_CHECKING:
    from alembic.config import Config

MIGRATIONS = Path(__file__).resolve().parents[2] / "migrations"


def sqlalchemy_url(settings: Settings) -> str:
    url = service_urls(settings).database_url
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url


def alembic_config(settings: Settings) -> Config:
    from alembic.config import Config

    cfg = Config(str(MIGRATIONS / "alembic.ini"))
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.set_main_option("sqlalchemy.url", sqlalchemy_url(settings).replace("%", "%%"))
    cfg.attributes["embedding_dim"] = settings.embedding_dim
    return cfg


def upgrade(settings: Settings, revision: str = "head") -> None:
    from alembic import command

    command.upgrade(alembic_config(settings), revision)


def current(settings: Settings) -> str | None:
    from alembic.runtime.migration import MigrationContext
    from sqlalchemy import create_engine, pool

    engine = create_engine(sqlalchemy_url(settings), poolclass=pool.NullPool)
    with engine.connect() as conn:
        rev = MigrationContext.configure(conn, opts={"version_table": "memq_alembic_version"}).get_current_revision()
    engine.dispose()
    return rev
