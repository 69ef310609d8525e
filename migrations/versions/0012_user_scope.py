"""User scope: a conversation may belong to a user; moves between users are audited.

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-24

``conversation.user_id`` (nullable: a conversation without a user stays tenant-wide) is
copied from the conversation's Redis state by the workers (the producer's enqueue script
records the user of the first message naming one and refuses another). Retrieval scoped
to a user reads the user's conversations through ``conversation_user`` and filters by
``conversation_id = ANY(...)`` as for an explicit list of conversations.

``conversation_user_change`` records every explicit move of a conversation to another
user (ids only): what ``memq conversations move`` and ``POST
/v1/conversations/{id}/user`` did, queryable by user and by conversation. Forgetting a
user deletes its rows; forgetting a conversation deletes the conversation's.
"""

from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE conversation ADD COLUMN IF NOT EXISTS user_id text")
    op.execute(
        "CREATE INDEX IF NOT EXISTS conversation_user ON conversation (tenant_id, user_id) WHERE user_id IS NOT NULL"
    )
    op.execute(
        """
        CREATE TABLE IF NOT EXISTS conversation_user_change (
            id bigserial PRIMARY KEY,
            tenant_id text NOT NULL,
            conversation_id text NOT NULL,
            from_user_id text,
            to_user_id text,
            at timestamptz NOT NULL DEFAULT now(),
            actor text
        )
        """
    )
    op.execute(
        "CREATE INDEX IF NOT EXISTS conversation_user_change_conversation "
        "ON conversation_user_change (tenant_id, conversation_id, at)"
    )
    op.execute(
        "CREATE INDEX IF NOT EXISTS conversation_user_change_from ON conversation_user_change (tenant_id, from_user_id)"
    )
    op.execute(
        "CREATE INDEX IF NOT EXISTS conversation_user_change_to ON conversation_user_change (tenant_id, to_user_id)"
    )


def downgrade() -> None:
    op.execute("DROP TABLE IF EXISTS conversation_user_change")
    op.execute("DROP INDEX IF EXISTS conversation_user")
    op.execute("ALTER TABLE conversation DROP COLUMN IF EXISTS user_id")
