"""PostgreSQL: schema migrations (Alembic, files in ``migrations/``) and repositories."""
