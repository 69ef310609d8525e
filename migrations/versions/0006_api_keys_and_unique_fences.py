"""API keys of the HTTP service, and fences that are never handed out twice.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-23

- ``api_key``: bearer keys, one tenant each, several per tenant (rotation). Only a
  SHA-256 of the key is kept (the key is 256 random bits, so a fast hash is the right
  one); revoked keys stay, marked, so the list shows what existed.
- ``conversation_fence``: every fence a re-sync raises comes from this one sequence, so
  a conversation that is forgotten and then started again under the same id can never
  be given a fence that work started before the forget still carries: such work (an
  episode creation in flight) is refused instead of writing the forgotten messages back.
"""

from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        CREATE TABLE api_key (
            id          text PRIMARY KEY,
            tenant_id   text NOT NULL,
            name        text NOT NULL DEFAULT '',
            key_hash    bytea NOT NULL UNIQUE,
            created_at  timestamptz NOT NULL DEFAULT now(),
            revoked_at  timestamptz
        )
        """
    )
    op.execute("CREATE INDEX api_key_tenant ON api_key (tenant_id)")
    op.execute("CREATE SEQUENCE conversation_fence AS integer")
    op.execute("SELECT setval('conversation_fence', greatest((SELECT max(fence) FROM conversation), 0) + 1, false)")


def downgrade() -> None:
    op.execute("DROP SEQUENCE IF EXISTS conversation_fence")
    op.execute("DROP TABLE IF EXISTS api_key")
