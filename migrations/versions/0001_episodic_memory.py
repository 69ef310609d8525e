"""Episodic memory (Plast Mem) with pgvector HNSW and full-text GIN indexes.

Revision ID: 0001
Revises:
Create Date: 2026-11-21

The embedding dimension comes from settings (MEMQ_EMBEDDING_DIM, default 384 for
all-MiniLM-L6-v2) at the time the migration runs. Changing the model's dimension
later needs a new migration that re-creates the column and re-embeds.
"""

from alembic import context, op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    dim = int(context.config.attributes["embedding_dim"])
    op.execute("CREATE EXTENSION IF NOT EXISTS vector")
    op.execute(
        f"""
        CREATE TABLE episodic_memory (
            id               uuid PRIMARY KEY,
            tenant_id        text NOT NULL,
            conversation_id  text NOT NULL,
            messages         jsonb NOT NULL,
            message_count    integer NOT NULL CHECK (message_count > 0),
            first_seq        bigint NOT NULL,
            last_seq         bigint NOT NULL,
            title            text NOT NULL,
            summary          text NOT NULL,
            embedding        vector({dim}) NOT NULL,
            stability        double precision NOT NULL,
            difficulty       double precision NOT NULL,
            fsrs_card        jsonb NOT NULL,
            surprise         double precision NOT NULL DEFAULT 0 CHECK (surprise >= 0 AND surprise <= 1),
            boundary_reason  text NOT NULL,
            boundary_source  text NOT NULL,
            detector         text NOT NULL,
            summary_source   text NOT NULL CHECK (summary_source IN ('llm', 'extractive')),
            summary_model    text,
            summary_error    text,
            embedding_model  text NOT NULL,
            tools_used       jsonb NOT NULL DEFAULT '[]'::jsonb,
            overlap          jsonb NOT NULL DEFAULT '[]'::jsonb,
            token_count      integer NOT NULL DEFAULT 0,
            start_at         timestamptz NOT NULL,
            end_at           timestamptz NOT NULL,
            created_at       timestamptz NOT NULL DEFAULT now(),
            last_reviewed_at timestamptz,
            consolidated_at  timestamptz,
            search           tsvector GENERATED ALWAYS AS (
                                 setweight(to_tsvector('english', coalesce(title, '')), 'A') ||
                                 setweight(to_tsvector('english', coalesce(summary, '')), 'B')
                             ) STORED,
            CHECK (end_at >= start_at),
            CHECK (last_seq >= first_seq),
            UNIQUE (tenant_id, conversation_id, first_seq)
        )
        """
    )
    op.execute(
        "CREATE INDEX episodic_memory_embedding_hnsw ON episodic_memory USING hnsw (embedding vector_cosine_ops)"
    )
    op.execute("CREATE INDEX episodic_memory_search_gin ON episodic_memory USING gin (search)")
    op.execute(
        "CREATE INDEX episodic_memory_conversation_time ON episodic_memory (tenant_id, conversation_id, start_at)"
    )
    op.execute(
        "CREATE INDEX episodic_memory_unconsolidated ON episodic_memory (tenant_id, created_at) "
        "WHERE consolidated_at IS NULL"
    )


def downgrade() -> None:
    op.execute("DROP TABLE IF EXISTS episodic_memory")
