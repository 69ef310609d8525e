"""Alembic environment: plain SQL migrations (no ORM models), online mode only."""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine, pool

from memq.shared.db.migrate import sqlalchemy_url
from memq.shared.settings import get_settings

config = context.config
url = config.get_main_option("sqlalchemy.url") or sqlalchemy_url(get_settings())
config.attributes.setdefault("embedding_dim", get_settings().embedding_dim)
config.attributes.setdefault("app_role", get_settings().database_app_role)

engine = create_engine(url, poolclass=pool.NullPool)
with engine.connect() as connection:
    context.configure(connection=connection, version_table="memq_alembic_version", transaction_per_migration=True)
    with context.begin_transaction():
        context.run_migrations()
engine.dispose()
