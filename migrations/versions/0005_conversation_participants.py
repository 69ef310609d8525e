"""Who speaks in each conversation, so retrieval can tell a participant named in a query.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-23

One row per (conversation, speaker name), written with the episode that first holds a
message by that speaker (``shared/db/episodes.py``). Retrieval reads the names in scope
before it embeds the query (``memq/memory/retrieval/participants.py``); a table of names
keeps that one small indexed read, however many messages a tenant holds.
"""

from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        CREATE TABLE conversation_participant (
            tenant_id        text NOT NULL,
            conversation_id  text NOT NULL,
            name             text NOT NULL,
            first_seen_at    timestamptz NOT NULL,
            PRIMARY KEY (tenant_id, conversation_id, name)
        )
        """
    )
    op.execute(
        "INSERT INTO conversation_participant (tenant_id, conversation_id, name, first_seen_at) "
        "SELECT tenant_id, conversation_id, speaker, min(ts) FROM episode_message WHERE speaker IS NOT NULL "
        "GROUP BY tenant_id, conversation_id, speaker ON CONFLICT DO NOTHING"
    )


def downgrade() -> None:
    op.execute("DROP TABLE IF EXISTS conversation_participant")
