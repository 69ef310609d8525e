"""Retrieval's lookups after the legs in one function call, facts only when there are any.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-23

``memq_retrieval_rows`` returns, in the 14 shared columns of retrieval's statement
(``memq/memory/retrieval/legs.retrieval_sql``), what migration 0009's three functions returned
as three parts of it: the found episodes' rows (through ``memq_episode_rows``), the
messages that may be shown (the ranked ones and their neighbours, as
``memq_shown_messages`` did) and, when facts are asked for, the facts legs
(``memq_fact_legs``). One call instead of three leaves the statement less to plan and
execute. ``memq_fact_legs`` itself now returns at once when the scope holds no active
fact, so a scope without facts (every deployment without an LLM) no longer runs two
empty index scans, in retrieval and in ``search_facts`` alike: together about 0.06 ms of
each retrieval on LoCoMo.
``memq_shown_messages`` stays for processes of the previous release still running
during an upgrade; nothing of this release calls it.

Both lookups by key are written as a join of the keys to the unique index, one probe
per key, which a generic plan cannot get wrong: ``memq_shown_messages``' array of seqs
per episode cost 0.2 ms where one probe per (episode, seq) costs 0.09, and
``memq_episode_rows``' ``id = ANY(ids) AND tenant_id = t`` let a generic plan AND a scan
of the whole tenant's index entries with the ids' (cheap for small tenants, not for a
tenant of 100,000 episodes).
"""

from importlib.util import module_from_spec, spec_from_file_location
from pathlib import Path

from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

RETRIEVAL_ROWS = """
CREATE OR REPLACE FUNCTION memq_retrieval_rows(p_tenant text, p_ids uuid[], p_episodes uuid[], p_seqs bigint[],
                                               p_facts boolean, p_conversations text[], p_query tsquery,
                                               p_vector vector, p_fact_k integer, p_fact_min double precision)
RETURNS TABLE (kind text, id text, seq bigint, rank bigint, conversation_id text, title_or_role text,
               summary_or_speaker text, source_or_content text, start_or_ts timestamptz, end_at timestamptz,
               surprise double precision, message_count integer, stability double precision,
               last_review timestamptz)
LANGUAGE plpgsql STABLE SET plan_cache_mode = force_generic_plan AS $$
#variable_conflict use_column
BEGIN
    -- the found episodes: (episode, id, first_seq, last_seq, conversation, title, summary, summary source,
    -- start, end, surprise, message count, FSRS stability and last review)
    RETURN QUERY
    SELECT 'episode'::text, e.* FROM memq_episode_rows(p_tenant, p_ids) e;
    -- each (episode, seq) pair's message and the ones just before and after it in the episode, each once:
    -- (message, episode id, seq, -, -, role, speaker, content, ts)
    RETURN QUERY
    SELECT 'message'::text, m.episode_id::text, m.seq, NULL::bigint, NULL::text, m.role, m.speaker, m.content, m.ts,
           NULL::timestamptz, NULL::double precision, NULL::integer, NULL::double precision, NULL::timestamptz
    FROM (SELECT DISTINCT r.e, r.s + n.d AS s
          FROM unnest(p_episodes, p_seqs) AS r(e, s), (VALUES (-1::bigint), (0), (1)) AS n(d)) near
    JOIN episode_message m ON m.episode_id = near.e AND m.seq = near.s
    WHERE m.tenant_id = p_tenant;
    -- the facts legs: (fact_vector | fact_lexical, fact id, -, rank)
    IF NOT p_facts THEN
        RETURN;
    END IF;
    RETURN QUERY
    SELECT f.leg, f.id, NULL::bigint, f.rank, NULL::text, NULL::text, NULL::text, NULL::text, NULL::timestamptz,
           NULL::timestamptz, NULL::double precision, NULL::integer, NULL::double precision, NULL::timestamptz
    FROM memq_fact_legs(p_tenant, p_conversations, p_query, p_vector, p_fact_k, p_fact_min) f;
END $$
"""


EPISODE_ROWS = """
CREATE OR REPLACE FUNCTION memq_episode_rows(p_tenant text, p_ids uuid[])
RETURNS TABLE (id text, first_seq bigint, last_seq bigint, conversation_id text, title text, summary text,
               summary_source text, start_at timestamptz, end_at timestamptz, surprise double precision,
               message_count integer, stability double precision, last_review timestamptz)
LANGUAGE plpgsql STABLE SET plan_cache_mode = force_generic_plan AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT e.id::text, e.first_seq, e.last_seq, e.conversation_id, e.title, e.summary, e.summary_source, e.start_at,
           e.end_at, e.surprise, e.message_count, (e.fsrs_card->>'stability')::double precision,
           (e.fsrs_card->>'last_review')::timestamptz
    FROM unnest(p_ids) AS wanted(id) JOIN episodic_memory e ON e.id = wanted.id WHERE e.tenant_id = p_tenant;
END $$
"""


# put in front of migration 0009's memq_fact_legs: a scope without an active fact has nothing to rank
NO_ACTIVE_FACT = """    IF NOT (CASE WHEN p_conversations IS NULL
                 THEN EXISTS (SELECT 1 FROM semantic_fact f WHERE f.tenant_id = p_tenant AND f.expired_at IS NULL)
                 ELSE EXISTS (SELECT 1 FROM semantic_fact f WHERE f.tenant_id = p_tenant AND f.expired_at IS NULL
                                                            AND f.conversation_id = ANY(p_conversations)) END) THEN
        RETURN;
    END IF;
"""


def _revision_0009():
    """Migration 0009's module, whose definitions a downgrade puts back."""
    path = Path(__file__).with_name("0009_retrieval_lookups.py")
    spec = spec_from_file_location("memq_migration_0009", path)
    assert spec is not None and spec.loader is not None  # a .py file next to this one
    module = module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def fact_legs_with_guard(previous_definition: str) -> str:
    """Migration 0009's ``memq_fact_legs`` returning at once when the scope holds no active fact."""
    assert previous_definition.count("BEGIN\n") == 1
    return previous_definition.replace("BEGIN\n", "BEGIN\n" + NO_ACTIVE_FACT)


def upgrade() -> None:
    op.execute(EPISODE_ROWS)
    op.execute(fact_legs_with_guard(_revision_0009().FACT_LEGS))
    op.execute(RETRIEVAL_ROWS)


def downgrade() -> None:
    op.execute(
        "DROP FUNCTION IF EXISTS memq_retrieval_rows(text, uuid[], uuid[], bigint[], boolean, text[], tsquery, vector, "
        "integer, double precision)"
    )
    previous = _revision_0009()
    op.execute(previous.EPISODE_ROWS)
    op.execute(previous.FACT_LEGS)
