"""Keep embeddings inside the row so the planner prices HNSW scans right.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-22

pgvector's columns default to EXTERNAL storage: once a row passes about 2 kB (every
episode row does, with its messages) the vector moves out of line into TOAST, and
PostgreSQL's cost of a sequential scan leaves that detour out, so it keeps choosing a
sequential scan over the HNSW index long after the index is cheaper (pgvector issues
186 and 784). MAIN keeps the vector in the row; rows written before this revision
keep their layout until they are rewritten.
"""

from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE episodic_memory ALTER COLUMN embedding SET STORAGE MAIN")
    op.execute("ALTER TABLE episode_message ALTER COLUMN embedding SET STORAGE MAIN")


def downgrade() -> None:
    op.execute("ALTER TABLE episode_message ALTER COLUMN embedding SET STORAGE EXTERNAL")
    op.execute("ALTER TABLE episodic_memory ALTER COLUMN embedding SET STORAGE EXTERNAL")
