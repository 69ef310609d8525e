"""The activity log: who did what in a tenant (keys, forget, export and import, webhooks).

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-08

``activity`` holds one row per action: when, what (a dotted name, ``key.create``), who
(``actor``: an API key's id, or ``cli`` with the OS user in ``actor_detail``) and the ids it
named (a conversation, a user, a key, a webhook) with counts; never content, a key or a
webhook's URL. It is a tenant table under the same row-level security as every other
(migration 0014's policy, for every role).

``activity_salt`` is the deployment's secret salt (one row, 32 random bytes made here):
forgetting a conversation or a user replaces its id in every entry naming it by
HMAC-SHA256(salt, id) (``shared/activity.py``), which matches the id when it is known and
does not give it back. The application role may read it (a tenant's forget computes the
hash) and not change it. See docs/isolation.md.
"""

import secrets

import sqlalchemy as sa
from alembic import context, op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None

# migration 0014's policy, word for word
POLICY = "tenant_id = NULLIF(current_setting('memq.tenant', true), '')"


def _role() -> str:
    from memq.shared.db.tenant_scope import quoted_app_role

    return quoted_app_role(context.config.attributes.get("app_role"))


def upgrade() -> None:
    op.execute(
        """
        CREATE TABLE activity (
            id              bigserial PRIMARY KEY,
            tenant_id       text NOT NULL,
            at              timestamptz NOT NULL DEFAULT now(),
            action          text NOT NULL,
            actor           text NOT NULL,
            actor_detail    text,
            conversation_id text,
            user_id         text,
            key_id          text,
            webhook_id      text,
            counts          jsonb NOT NULL DEFAULT '{}'::jsonb
        )
        """
    )
    op.execute("CREATE INDEX activity_tenant ON activity (tenant_id, id)")
    op.execute("CREATE INDEX activity_conversation ON activity (tenant_id, conversation_id)")
    op.execute("CREATE INDEX activity_user ON activity (tenant_id, user_id)")
    role = _role()
    op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON activity TO {role}")  # as 0014's default privileges do
    op.execute("ALTER TABLE activity ENABLE ROW LEVEL SECURITY")
    op.execute(f"CREATE POLICY tenant_isolation ON activity USING ({POLICY}) WITH CHECK ({POLICY})")

    op.execute("CREATE TABLE activity_salt (one boolean PRIMARY KEY DEFAULT true CHECK (one), salt bytea NOT NULL)")
    op.get_bind().execute(sa.text("INSERT INTO activity_salt (salt) VALUES (:salt)"), {"salt": secrets.token_bytes(32)})
    op.execute(f"REVOKE ALL ON activity_salt FROM {role}")  # read only: the default privileges granted more
    op.execute(f"GRANT SELECT ON activity_salt TO {role}")


def downgrade() -> None:
    op.execute("DROP TABLE IF EXISTS activity_salt")
    op.execute("DROP TABLE IF EXISTS activity")
