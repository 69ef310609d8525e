"""Searchable messages and pending reviews (the read side, Plast Mem).

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22

An episode is long (up to 50 messages / 4,000 tokens) and all-MiniLM-L6-v2 reads only
256 word pieces, so one summary vector cannot stand for it. Each stored message gets
its own embedding and full-text vector, so retrieval finds episodes by what was said
in them and picks the most relevant messages inside an episode. ``speaker`` is the
participant's name when the producer gave one (``metadata.name``).

``pending_review`` records what each retrieval returned, for the memory review stage
(FSRS updates from how memories were actually used).

Messages stored before this revision have no embedding: the vector leg skips them until
``memq reindex`` fills them in.
"""

from alembic import context, op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    dim = int(context.config.attributes["embedding_dim"])
    op.execute("ALTER TABLE episode_message ADD COLUMN speaker text")
    op.execute(f"ALTER TABLE episode_message ADD COLUMN embedding vector({dim})")
    op.execute(
        "ALTER TABLE episode_message ADD COLUMN search tsvector GENERATED ALWAYS AS "
        "(to_tsvector('english', coalesce(speaker, '') || ' ' || content)) STORED"
    )
    op.execute(
        "UPDATE episode_message SET speaker = metadata->>'name' "
        "WHERE role <> 'tool' AND jsonb_typeof(metadata->'name') = 'string'"
    )
    op.execute(
        "CREATE INDEX episode_message_embedding_hnsw ON episode_message USING hnsw (embedding vector_cosine_ops)"
    )
    op.execute("CREATE INDEX episode_message_search_gin ON episode_message USING gin (search)")
    op.execute("CREATE INDEX episode_message_conversation_ts ON episode_message (tenant_id, conversation_id, ts)")
    op.execute("CREATE INDEX episodic_memory_tenant_end ON episodic_memory (tenant_id, end_at)")
    op.execute(
        """
        CREATE TABLE pending_review (
            id               bigserial PRIMARY KEY,
            tenant_id        text NOT NULL,
            conversation_id  text NOT NULL,
            memory_id        uuid NOT NULL REFERENCES episodic_memory (id) ON DELETE CASCADE,
            query            text NOT NULL,
            rank             integer NOT NULL,
            score            double precision NOT NULL,
            retrieved_at     timestamptz NOT NULL DEFAULT now(),
            consumed_at      timestamptz
        )
        """
    )
    op.execute(
        "CREATE INDEX pending_review_open ON pending_review (tenant_id, conversation_id, retrieved_at) "
        "WHERE consumed_at IS NULL"
    )


def downgrade() -> None:
    op.execute("DROP TABLE IF EXISTS pending_review")
    op.execute("DROP INDEX IF EXISTS episodic_memory_tenant_end")
    op.execute("ALTER TABLE episode_message DROP COLUMN IF EXISTS search")
    op.execute("ALTER TABLE episode_message DROP COLUMN IF EXISTS embedding")
    op.execute("ALTER TABLE episode_message DROP COLUMN IF EXISTS speaker")
