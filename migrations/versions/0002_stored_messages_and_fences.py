"""What PostgreSQL holds, exactly: one row per stored message, one per conversation.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22

- ``episode_message``: every message stored in an episode, keyed by its sequence
  number and unique by message id within its conversation. Written in the episode's
  transaction, so PostgreSQL can always tell which messages it holds: a message can
  never be stored twice, and a sequence number reused for another message (after a
  Redis that lost its last second) is refused instead of silently dropped.
- ``conversation``: the per-conversation fence and high-water mark. Workers raise the
  fence whenever they re-sync a conversation's Redis state (after a Redis restart);
  an episode insert carrying an older fence (work started before the restart) is
  refused, so nothing cut from a state that no longer exists is written.
- ``seq_gap``: sequence numbers that will never hold a message, and why ("rewind":
  numbered in a Redis state that was lost, their messages renumbered; "duplicate": a
  second acceptance of a message id PostgreSQL already held). With these, every
  number up to a conversation's counter is accounted for (``memq audit``).
"""

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        CREATE TABLE conversation (
            tenant_id        text NOT NULL,
            conversation_id  text NOT NULL,
            fence            integer NOT NULL DEFAULT 0,
            last_seq         bigint NOT NULL DEFAULT 0,
            last_message_at  timestamptz,
            message_count    bigint NOT NULL DEFAULT 0,
            episode_count    integer NOT NULL DEFAULT 0,
            synced_at        timestamptz,
            created_at       timestamptz NOT NULL DEFAULT now(),
            updated_at       timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (tenant_id, conversation_id)
        )
        """
    )
    op.execute(
        """
        CREATE TABLE episode_message (
            tenant_id        text NOT NULL,
            conversation_id  text NOT NULL,
            seq              bigint NOT NULL CHECK (seq > 0),
            message_id       text NOT NULL,
            episode_id       uuid NOT NULL REFERENCES episodic_memory (id) ON DELETE CASCADE,
            role             text NOT NULL,
            content          text NOT NULL,
            ts               timestamptz NOT NULL,
            sent_at          timestamptz,
            metadata         jsonb,
            PRIMARY KEY (tenant_id, conversation_id, seq),
            UNIQUE (tenant_id, conversation_id, message_id)
        )
        """
    )
    op.execute("CREATE INDEX episode_message_episode ON episode_message (episode_id)")
    op.execute(
        """
        CREATE TABLE seq_gap (
            tenant_id        text NOT NULL,
            conversation_id  text NOT NULL,
            first_seq        bigint NOT NULL,
            last_seq         bigint NOT NULL,
            reason           text NOT NULL CHECK (reason IN ('rewind', 'duplicate')),
            message_id       text,
            recorded_at      timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (tenant_id, conversation_id, first_seq),
            CHECK (last_seq >= first_seq)
        )
        """
    )
    # Episodes written before this revision: their messages and conversations.
    op.execute(
        """
        INSERT INTO episode_message (tenant_id, conversation_id, seq, message_id, episode_id, role, content, ts,
                                     sent_at, metadata)
        SELECT e.tenant_id, e.conversation_id, (m->>'seq')::bigint, m->>'id', e.id, m->>'role', m->>'content',
               (m->>'timestamp')::timestamptz, (m->>'sent_at')::timestamptz, m->'metadata'
        FROM episodic_memory e, jsonb_array_elements(e.messages) AS m
        ON CONFLICT DO NOTHING
        """
    )
    op.execute(
        """
        INSERT INTO conversation (tenant_id, conversation_id, last_seq, last_message_at, message_count, episode_count)
        SELECT tenant_id, conversation_id, max(last_seq), max(end_at), sum(message_count), count(*)
        FROM episodic_memory GROUP BY tenant_id, conversation_id
        """
    )


def downgrade() -> None:
    op.execute("DROP TABLE IF EXISTS seq_gap")
    op.execute("DROP TABLE IF EXISTS episode_message")
    op.execute("DROP TABLE IF EXISTS conversation")
