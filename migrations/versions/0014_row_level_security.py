"""Row-level security: every table holding tenant data shows a connection only the rows of
the tenant it has set.

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-24

The application role (``MEMQ_DATABASE_APP_ROLE``, default ``memq_app``; NOLOGIN,
NOBYPASSRLS) gets the data privileges on the tables and sequences, now and for tables the
migrating user creates later (default privileges), and the migrating user (the schema's
owner, DATABASE_URL's user) is made a member so it can ``SET ROLE`` to it. Each table
with tenant data gets row-level security and one policy, for every role: a row is seen,
inserted, updated or deleted only when its ``tenant_id`` is the setting ``memq.tenant``
(NULL or '' when none is set: nothing then). Every such table carries ``tenant_id`` itself
(children of episodes and facts included), so no policy looks through a parent.

Not FORCE: the owner is not restricted, which is what migrations and the work across
tenants (audit, metrics, sweeps, key lookups, forget --compact) run as; see
docs/isolation.md. The role is cluster-wide: it is created when missing and left behind
by the downgrade (another database of the cluster may use it).
"""

from alembic import context, op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

# Every table with tenant data as of this revision (a later table with tenant_id gets its
# policy in its own migration; tests/integration/db/test_row_level_security.py checks
# the catalog for any that has none).
TENANT_TABLES = (
    "api_key",
    "conversation",
    "conversation_participant",
    "conversation_user_change",
    "episode_message",
    "episodic_memory",
    "memory_review",
    "pending_review",
    "semantic_fact",
    "semantic_fact_history",
    "seq_gap",
    "webhook_delivery",
    "webhook_endpoint",
)

# NULLIF: a setting reset to '' (a pooled connection back in the pool) matches no row either
POLICY = "tenant_id = NULLIF(current_setting('memq.tenant', true), '')"


def _role() -> str:
    from memq.shared.db.tenant_scope import quoted_app_role

    return quoted_app_role(context.config.attributes.get("app_role"))


def upgrade() -> None:
    role = _role()
    literal = "'" + role[1:-1].replace("'", "''") + "'"
    op.execute(
        f"""
        DO $$
        BEGIN
            IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = {literal}) THEN
                CREATE ROLE {role} NOLOGIN NOBYPASSRLS;
            END IF;
        END
        $$
        """
    )
    op.execute(f"GRANT {role} TO CURRENT_USER")
    op.execute(f"GRANT USAGE ON SCHEMA public TO {role}")
    tables = ", ".join(TENANT_TABLES)
    op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON {tables} TO {role}")
    op.execute(f"GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA public TO {role}")
    op.execute(f"ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO {role}")
    op.execute(f"ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT USAGE, SELECT, UPDATE ON SEQUENCES TO {role}")
    for table in TENANT_TABLES:
        op.execute(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY")
        op.execute(f"CREATE POLICY tenant_isolation ON {table} USING ({POLICY}) WITH CHECK ({POLICY})")


def downgrade() -> None:
    role = _role()
    for table in TENANT_TABLES:
        op.execute(f"DROP POLICY IF EXISTS tenant_isolation ON {table}")
        op.execute(f"ALTER TABLE {table} DISABLE ROW LEVEL SECURITY")
    op.execute(f"ALTER DEFAULT PRIVILEGES IN SCHEMA public REVOKE ALL ON SEQUENCES FROM {role}")
    op.execute(f"ALTER DEFAULT PRIVILEGES IN SCHEMA public REVOKE ALL ON TABLES FROM {role}")
    op.execute(f"REVOKE ALL ON ALL SEQUENCES IN SCHEMA public FROM {role}")
    op.execute(f"REVOKE ALL ON ALL TABLES IN SCHEMA public FROM {role}")
    op.execute(f"REVOKE ALL ON SCHEMA public FROM {role}")
