"""An episode's full-text search reads its messages too, not only its title and summary.

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-28

Without an LLM an episode's title and summary are extractive (a few key phrases and
quoted sentences), so the episode lexical leg found an episode only by the words those
happened to quote: measured on LoCoMo (``memq eval-locomo --ablations``, "episode legs
only"), the episode legs found 0.438 of the evidence at 1,000 tokens. ``search`` now also
holds every message's content, from the copy of its messages the row already keeps
(``messages``), at the lowest weight (D; title A, summary B), each message
its own run of positions (``to_tsvector(jsonb)``), so that words of different messages are
never adjacent: 0.517 at 1,000 tokens, memq itself within a question of where it was.

The generated column is dropped and added again (``ALTER COLUMN ... SET EXPRESSION`` needs
PostgreSQL 17; memq supports 15): the table is rewritten and its full-text index and the
search view of migration 0015 are made again, writes waiting meanwhile (seconds per
hundred thousand episodes).
"""

from alembic import context, op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None

_TITLE_AND_SUMMARY = (
    "setweight(to_tsvector('english', coalesce(title, '')), 'A') || "
    "setweight(to_tsvector('english', coalesce(summary, '')), 'B')"
)
_MESSAGES = "setweight(to_tsvector('english', jsonb_path_query_array(messages, '$[*].content')), 'D')"
# migration 0015's index and view over ``search``
_INDEX = (
    "CREATE INDEX episodic_memory_search_gin ON episodic_memory "
    "USING gin ((search || array_to_tsvector(ARRAY['tenant ' || md5(tenant_id)])))"
)
_VIEW = "memq_episode_search"
_VIEW_BODY = (
    "SELECT tenant_id, conversation_id, id, start_at, end_at, search FROM episodic_memory "
    "WHERE tenant_id = NULLIF(current_setting('memq.tenant', true), '')"
)


def _role() -> str:
    from memq.shared.db.tenant_scope import quoted_app_role

    return quoted_app_role(context.config.attributes.get("app_role"))


def _search(expression: str) -> None:
    role = _role()
    op.execute(f"DROP VIEW IF EXISTS {_VIEW}")
    op.execute("DROP INDEX IF EXISTS episodic_memory_search_gin")
    op.execute("ALTER TABLE episodic_memory DROP COLUMN search")
    op.execute(f"ALTER TABLE episodic_memory ADD COLUMN search tsvector GENERATED ALWAYS AS ({expression}) STORED")
    op.execute(_INDEX)
    op.execute(f"CREATE VIEW {_VIEW} WITH (security_barrier = false) AS {_VIEW_BODY}")
    op.execute(f"REVOKE ALL ON {_VIEW} FROM {role}")  # select only, as migration 0015 grants it
    op.execute(f"GRANT SELECT ON {_VIEW} TO {role}")


def upgrade() -> None:
    _search(f"{_TITLE_AND_SUMMARY} || {_MESSAGES}")


def downgrade() -> None:
    _search(_TITLE_AND_SUMMARY)
