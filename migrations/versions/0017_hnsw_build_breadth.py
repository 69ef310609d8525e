"""The HNSW indexes link each vector after a wider search (``ef_construction`` 128,
pgvector's default 64).

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-29

Measured on the 1,000,000-message bench corpus (``memq bench --scale large``, corpus
version 3), a tenant-wide search of the largest tenant with ``hnsw.ef_search`` 400 found
of the exact top 100: episodes 0.872 -> 0.931, messages 0.928 -> 0.949, in the same
time (raising ``ef_search`` instead to reach the same recall of messages cost 40 % more
per search). Building an index takes about twice as long, and each insert searches twice
as wide (a worker's write of an episode's messages, well under the embedding model's time).

The option is set on the existing indexes (``ALTER INDEX ... SET``, instant): rows
inserted from now on are linked with it, and an index built from its definition (a
restore, ``REINDEX``, the bench's bulk load) is built with it. A graph already built
keeps its links until rebuilt: ``REINDEX INDEX CONCURRENTLY <index>`` when convenient
(docs/operations.md).
"""

from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None

EF_CONSTRUCTION = 128
_INDEXES = ("episodic_memory_embedding_hnsw", "episode_message_embedding_hnsw", "semantic_fact_embedding_hnsw")


def upgrade() -> None:
    for index in _INDEXES:
        op.execute(f"ALTER INDEX {index} SET (ef_construction = {EF_CONSTRUCTION})")


def downgrade() -> None:
    for index in _INDEXES:
        op.execute(f"ALTER INDEX {index} RESET (ef_construction)")
