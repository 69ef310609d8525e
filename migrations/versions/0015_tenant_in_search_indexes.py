"""The tenant inside the full-text indexes; the query's lexical forms as functions; the
full-text search of a tenant through views under row-level security.

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-25

The GIN indexes over ``search`` held every tenant's words together: a search of one
tenant fetched every row of the table holding one of the query's words, and dropped
other tenants' rows only after reading them from the heap (measured at 1,000,000
messages: 80,759 of the 103,915 rows a question fetched were other tenants'). The
indexes now hold ``search`` plus one lexeme naming the row's tenant (``'tenant ' ||
md5(tenant_id)``; ``shared/db/lexical.py``), and the lexical legs match the query ANDed
with it, so the index returns the tenant's rows only. ``btree_gin``'s (tenant_id,
search) index would do the same, but is not in every PostgreSQL build (the embedded
one lacks it). The tables are not rewritten; each index is built anew (writes to the
table wait while it builds: seconds to minutes at millions of rows).

The query's lexical forms become functions (``memq_any_words``: an OR of its stemmed
words; ``memq_two_words``: an OR of every pair of them; ``memq_tenant_words``: the
tenant's lexeme), declared immutable: called with the statement's parameters, each is
evaluated while the statement is planned, so the planner weighs the full-text index by
the query's actual words. Computed inside the statement (a CTE, a subquery), the query was
unknown to it, and at 1,000,000 messages it read the largest tenant sequentially rather
than through the index.

Under row-level security (migration 0014) PostgreSQL applies a query's own conditions only
after the policy's, unless they are leakproof, and ``@@`` is not: so for a connection
scoped to a tenant no full-text index was ever used, and a tenant-wide search read every
message of the tenant (1.1 s for the largest at 1,000,000). ``memq_message_search`` and
``memq_episode_search`` are views of what the lexical legs read, filtered by the same
setting as the policy (``tenant_id = NULLIF(current_setting('memq.tenant', true), '')``);
a view reads its tables with its owner's rights, to which the policies do not apply, and
a view that is not a security barrier lets the query's conditions reach the indexes.
Scoped connections read through them (``legs.py``); the application role may only
select from them.
"""

from alembic import context, op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

_TABLES = ("episode_message", "episodic_memory")
_WITH_TENANT = "(search || array_to_tsvector(ARRAY['tenant ' || md5(tenant_id)]))"
# the query's stemmed words (``english``), each quoted, as matched against ``search``
_WORDS = "SELECT quote_literal(l) AS w FROM unnest(tsvector_to_array(to_tsvector('english', query))) AS l"
_FUNCTIONS = {
    "memq_any_words(query text)": f"SELECT to_tsquery('simple', array_to_string(ARRAY({_WORDS}), ' | '))",
    # fewer than two words: the words themselves
    "memq_two_words(query text)": (
        f"WITH w AS ({_WORDS}), n AS (SELECT w, row_number() OVER () AS i FROM w) "
        "SELECT CASE WHEN count(*) = 0 THEN memq_any_words(query) "
        "ELSE to_tsquery('simple', string_agg(a.w || ' & ' || b.w, ' | ')) END FROM n a JOIN n b ON a.i < b.i"
    ),
    "memq_tenant_words(tenant text)": "SELECT quote_literal('tenant ' || md5(tenant))::tsquery",
}


# what the lexical legs read, of the rows the policy lets through (its very condition)
_POLICY = "tenant_id = NULLIF(current_setting('memq.tenant', true), '')"
_VIEWS = {
    "memq_message_search": (
        f"SELECT tenant_id, conversation_id, episode_id, seq, ts, search FROM episode_message WHERE {_POLICY}"
    ),
    "memq_episode_search": (
        f"SELECT tenant_id, conversation_id, id, start_at, end_at, search FROM episodic_memory WHERE {_POLICY}"
    ),
}


def _role() -> str:
    from memq.shared.db.tenant_scope import quoted_app_role

    return quoted_app_role(context.config.attributes.get("app_role"))


def upgrade() -> None:
    role = _role()
    for view, body in _VIEWS.items():
        op.execute(f"CREATE OR REPLACE VIEW {view} WITH (security_barrier = false) AS {body}")
        # select only: the default privileges of 0014 would let the role write through them
        op.execute(f"REVOKE ALL ON {view} FROM {role}")
        op.execute(f"GRANT SELECT ON {view} TO {role}")
    for signature, body in _FUNCTIONS.items():
        op.execute(
            f"CREATE OR REPLACE FUNCTION {signature} RETURNS tsquery LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE "
            f"AS $$ {body} $$"
        )
    for table in _TABLES:
        op.execute(f"DROP INDEX IF EXISTS {table}_search_gin")
        op.execute(f"CREATE INDEX {table}_search_gin ON {table} USING gin ({_WITH_TENANT})")


def downgrade() -> None:
    for table in _TABLES:
        op.execute(f"DROP INDEX IF EXISTS {table}_search_gin")
        op.execute(f"CREATE INDEX {table}_search_gin ON {table} USING gin (search)")
    for signature in reversed(list(_FUNCTIONS)):
        op.execute(f"DROP FUNCTION IF EXISTS {signature}")
    for view in _VIEWS:
        op.execute(f"DROP VIEW IF EXISTS {view}")
