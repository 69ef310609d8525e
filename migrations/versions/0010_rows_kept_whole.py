"""Episode and message rows keep their short columns in the row.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-23

PostgreSQL moves a row's variable-length columns out of line into TOAST, largest first,
until the row is under ``toast_tuple_target`` (about 2 kB by default). The embedding
stays in the row (migration 0004: 1,544 bytes at 384 dimensions), so that left ~500
bytes for everything else: every LoCoMo episode had its summary, FSRS card and search
vector in TOAST, each read through the TOAST index (the episode lexical leg's
``ts_rank_cd`` detoasts ``search`` for every row it ranks; retrieval reads summary and
card of every episode it found), and half the messages their metadata. With a target
of 4,080 bytes only what is really long (an episode's ``messages`` copy, a long tool
result) leaves the row. Measured on LoCoMo (231 questions, rows re-laid out): the legs'
SQL 1.88 -> 1.66 ms, retrieval's statement 2.90 -> 2.61 ms at the median.

Rows written before this revision keep their layout until they are rewritten
(``VACUUM FULL episodic_memory, episode_message`` re-lays them out; it locks the tables
while it runs, so it is left to the operator).
"""

from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE episodic_memory SET (toast_tuple_target = 4080)")
    op.execute("ALTER TABLE episode_message SET (toast_tuple_target = 4080)")


def downgrade() -> None:
    op.execute("ALTER TABLE episode_message RESET (toast_tuple_target)")
    op.execute("ALTER TABLE episodic_memory RESET (toast_tuple_target)")
