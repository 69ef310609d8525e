"""Memory review (FSRS from how memories were used) and semantic memory (facts).

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-23

- ``pending_review.asked_in``: the conversation a retrieval served (its next segment is
  what shows whether the memory was used); NULL means the memory's own conversation.
- ``memory_review``: one applied review per memory per day (FSRS counts whole days; later
  ratings of the same day are merged into it), with the card before and after, the
  rating, which path rated it (``llm`` / ``usage``) and why.
- ``semantic_fact``: lasting facts distilled from episodes, each in one conversation,
  with a category, its source episodes and two timelines: when it was true
  (``valid_at`` / ``invalid_at``, from the episodes' times) and when memq recorded or
  retired it (``created_at`` / ``expired_at``). Nothing is deleted; ``superseded_by``
  links an updated fact to its successor. ``semantic_fact_history`` keeps every change.
"""

from alembic import context, op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

CATEGORIES = ("identity", "preference", "interest", "personality", "relationship", "experience", "goal", "guideline")


def upgrade() -> None:
    dim = int(context.config.attributes["embedding_dim"])
    op.execute("ALTER TABLE pending_review ADD COLUMN asked_in text")
    op.execute("ALTER TABLE pending_review ADD COLUMN review_id bigint")
    op.execute("DROP INDEX IF EXISTS pending_review_open")
    op.execute(
        "CREATE INDEX pending_review_open ON pending_review (tenant_id, (coalesce(asked_in, conversation_id)), "
        "retrieved_at) "
        "WHERE consumed_at IS NULL"
    )
    op.execute(
        """
        CREATE TABLE memory_review (
            id              bigserial PRIMARY KEY,
            tenant_id       text NOT NULL,
            conversation_id text NOT NULL,
            memory_id       uuid NOT NULL REFERENCES episodic_memory (id) ON DELETE CASCADE,
            review_day      date NOT NULL,
            reviewed_at     timestamptz NOT NULL,
            rating          smallint NOT NULL CHECK (rating BETWEEN 1 AND 4),
            source          text NOT NULL CHECK (source IN ('llm', 'usage')),
            detail          jsonb NOT NULL DEFAULT '{}'::jsonb,
            card_before     jsonb NOT NULL,
            card_after      jsonb NOT NULL,
            reviews_merged  integer NOT NULL DEFAULT 1,
            segment_id      uuid,
            created_at      timestamptz NOT NULL DEFAULT now(),
            updated_at      timestamptz NOT NULL DEFAULT now(),
            UNIQUE (memory_id, review_day)
        )
        """
    )
    op.execute("CREATE INDEX memory_review_conversation ON memory_review (tenant_id, conversation_id, reviewed_at)")
    categories = ", ".join(f"'{c}'" for c in CATEGORIES)
    op.execute(
        f"""
        CREATE TABLE semantic_fact (
            id                 uuid PRIMARY KEY,
            tenant_id          text NOT NULL,
            conversation_id    text NOT NULL,
            category           text NOT NULL CHECK (category IN ({categories})),
            content            text NOT NULL CHECK (length(content) > 0),
            embedding          vector({dim}) NOT NULL,
            search             tsvector GENERATED ALWAYS AS (to_tsvector('english', content)) STORED,
            valid_at           timestamptz,
            invalid_at         timestamptz,
            created_at         timestamptz NOT NULL,
            expired_at         timestamptz,
            superseded_by      uuid REFERENCES semantic_fact (id),
            source_episode_ids uuid[] NOT NULL,
            reinforcements     integer NOT NULL DEFAULT 0,
            last_reinforced_at timestamptz,
            model              text,
            CHECK (invalid_at IS NULL OR valid_at IS NULL OR invalid_at >= valid_at)
        )
        """
    )
    op.execute("ALTER TABLE semantic_fact ALTER COLUMN embedding SET STORAGE MAIN")
    op.execute("CREATE INDEX semantic_fact_embedding_hnsw ON semantic_fact USING hnsw (embedding vector_cosine_ops)")
    op.execute("CREATE INDEX semantic_fact_search_gin ON semantic_fact USING gin (search)")
    op.execute(
        "CREATE INDEX semantic_fact_active ON semantic_fact (tenant_id, conversation_id) WHERE expired_at IS NULL"
    )
    op.execute(
        """
        CREATE TABLE semantic_fact_history (
            id               bigserial PRIMARY KEY,
            fact_id          uuid NOT NULL REFERENCES semantic_fact (id),
            tenant_id        text NOT NULL,
            conversation_id  text NOT NULL,
            action           text NOT NULL CHECK (action IN ('created', 'reinforced', 'superseded', 'invalidated')),
            at               timestamptz NOT NULL,
            run_id           uuid NOT NULL,
            episode_ids      uuid[] NOT NULL,
            detail           jsonb NOT NULL DEFAULT '{}'::jsonb
        )
        """
    )
    op.execute("CREATE INDEX semantic_fact_history_fact ON semantic_fact_history (fact_id, at)")
    op.execute("CREATE INDEX semantic_fact_history_conversation ON semantic_fact_history (tenant_id, conversation_id)")


def downgrade() -> None:
    op.execute("DROP TABLE IF EXISTS semantic_fact_history")
    op.execute("DROP TABLE IF EXISTS semantic_fact")
    op.execute("DROP TABLE IF EXISTS memory_review")
    op.execute("DROP INDEX IF EXISTS pending_review_open")
    op.execute("ALTER TABLE pending_review DROP COLUMN IF EXISTS review_id")
    op.execute("ALTER TABLE pending_review DROP COLUMN IF EXISTS asked_in")
    op.execute(
        "CREATE INDEX pending_review_open ON pending_review (tenant_id, conversation_id, retrieved_at) "
        "WHERE consumed_at IS NULL"
    )
