"""The HNSW indexes of episodes and messages compare half-precision copies of the vectors.

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-04

Each index is built again on ``embedding::halfvec(<dim>)`` (``halfvec_cosine_ops``, the
same ``ef_construction`` 128); the stored vectors stay single-precision, and retrieval
orders by the same expression (``memq/memory/retrieval/legs.py``: ``distance_sql``). Measured on
the 100,000-message bench corpus (a scratch build beside the old index, 100 LoCoMo
questions, ``hnsw.ef_search`` 500, recall of the exact single-precision top 100): the
message index 211 -> 119 MB; recall in the largest tenant 0.984 -> 0.986, over the whole
table 0.998 -> 0.998; p50 15.8 -> 11.7 ms and 10.4 -> 9.7 ms. An insert compares half
the bytes: a worker's write of 20 messages into a 100,000-row copy of the table cost
3.15 ms per message against 4.19 (docs/benchmarks.md, pipeline: what bounds it).

Each new index is built beside the old one (named ``*_new``) and then takes its name, in
the migration's transaction: reads go on using the old index meanwhile, writes wait for the
build (1 min 43 s here for 110,000 messages and 9,000 episodes; about 10 minutes of one
core per million messages). On a large deployment build the new indexes first without
blocking writes (``CREATE INDEX CONCURRENTLY ... _new``, the statements in
docs/operations.md): the migration then finds them and only swaps the names. A ``*_new``
index that is invalid (a concurrent build interrupted) or built on something else is
dropped and built again. Until the workers and the API run this version they order by the
old expression, which no index serves any more: retrieval stays correct, as slow as an
exact scan of the scope, so roll them right after. The facts' index stays
single-precision: a tenant holds few facts, and their legs are a SQL function of
migration 0009.
"""

import sqlalchemy as sa
from alembic import context, op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None

EF_CONSTRUCTION = 128  # migration 0017's
_INDEXES = (
    ("episodic_memory_embedding_hnsw", "episodic_memory"),
    ("episode_message_embedding_hnsw", "episode_message"),
)


def _swap(operator_class: str, expression: str) -> None:
    """Each index built anew on ``expression`` beside the old one (or one built by hand
    under the new name reused), then renamed over it."""
    bind = op.get_bind()
    for index, table in _INDEXES:
        new = f"{index}_new"
        found = bind.execute(
            sa.text(
                "SELECT i.indisvalid, pg_get_indexdef(i.indexrelid) FROM pg_index i "
                "JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relname = :name"
            ),
            {"name": new},
        ).first()
        if found is not None and not (found[0] and f"{operator_class})" in found[1] and " hnsw " in found[1]):
            op.execute(f"DROP INDEX {new}")
        op.execute(
            f"CREATE INDEX IF NOT EXISTS {new} ON {table} USING hnsw (({expression}) {operator_class}) "
            f"WITH (ef_construction = {EF_CONSTRUCTION})"
        )
        op.execute(f"DROP INDEX {index}")
        op.execute(f"ALTER INDEX {new} RENAME TO {index}")


def upgrade() -> None:
    dim = int(context.config.attributes["embedding_dim"])
    _swap("halfvec_cosine_ops", f"embedding::halfvec({dim})")


def downgrade() -> None:
    _swap("vector_cosine_ops", "embedding")
