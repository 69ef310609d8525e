"""Retrieval's lookups after the legs as functions with cached plans.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-23

Retrieval's one statement (``memq/memory/retrieval/legs.retrieval_sql``) is planned for each
query's values when PostgreSQL judges it worth it, which the legs need (a conversation's
size decides between an HNSW scan and reading it whole). The lookups that follow them do not: the found episodes by id,
the messages that may be shown by (episode, seq), and the facts of a small per-tenant
table. Planning them inline cost about 0.23 ms of every retrieval (measured on LoCoMo);
as PL/pgSQL functions their plans are made once per connection and kept generic: lookups
by unique keys, and facts, which are few per tenant, do not depend on the values.

- ``memq_episode_rows(tenant, ids)``: the rows retrieval reads of episodes (the FSRS
  state taken out of the card as two values).
- ``memq_shown_messages(tenant, episode_ids, seqs)``: for each (episode, seq) pair, that
  message and the ones just before and after it in the episode, each once.
- ``memq_fact_legs(tenant, conversations or NULL, tsquery, vector, k, min_similarity)``:
  the facts section's vector and lexical legs, (leg, fact id, rank).
"""

from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

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
    FROM episodic_memory e WHERE e.id = ANY(p_ids) AND e.tenant_id = p_tenant;
END $$
"""

SHOWN_MESSAGES = """
CREATE OR REPLACE FUNCTION memq_shown_messages(p_tenant text, p_episodes uuid[], p_seqs bigint[])
RETURNS TABLE (episode_id text, seq bigint, role text, speaker text, content text, ts timestamptz)
LANGUAGE plpgsql STABLE SET plan_cache_mode = force_generic_plan AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT m.episode_id::text, m.seq, m.role, m.speaker, m.content, m.ts
    FROM (SELECT r.e, array_agg(DISTINCT r.s + n.d) AS seqs
          FROM unnest(p_episodes, p_seqs) AS r(e, s), (VALUES (-1::bigint), (0), (1)) AS n(d) GROUP BY r.e) near
    JOIN episode_message m ON m.episode_id = near.e AND m.seq = ANY(near.seqs)
    WHERE m.tenant_id = p_tenant;
END $$
"""

FACT_LEGS = """
CREATE OR REPLACE FUNCTION memq_fact_legs(p_tenant text, p_conversations text[], p_query tsquery, p_vector vector,
                                          p_k integer, p_min double precision)
RETURNS TABLE (leg text, id text, rank bigint)
LANGUAGE plpgsql STABLE SET plan_cache_mode = force_generic_plan AS $$
#variable_conflict use_column
BEGIN
    IF p_conversations IS NULL THEN
        RETURN QUERY
        (SELECT 'fact_vector'::text, v.id::text, row_number() OVER (ORDER BY v.d, v.id) FROM (
            SELECT f.id, f.embedding <=> p_vector AS d FROM semantic_fact f
            WHERE f.tenant_id = p_tenant AND f.expired_at IS NULL ORDER BY d, f.id LIMIT p_k) v WHERE 1 - v.d >= p_min)
        UNION ALL
        (SELECT 'fact_lexical'::text, l.id::text, row_number() OVER (ORDER BY l.r DESC, l.id) FROM (
            SELECT f.id, ts_rank_cd(f.search, p_query, 1) AS r FROM semantic_fact f
            WHERE f.tenant_id = p_tenant AND f.expired_at IS NULL AND f.search @@ p_query
            ORDER BY r DESC, f.id LIMIT p_k) l);
    ELSE
        RETURN QUERY
        (SELECT 'fact_vector'::text, v.id::text, row_number() OVER (ORDER BY v.d, v.id) FROM (
            SELECT f.id, f.embedding <=> p_vector AS d FROM semantic_fact f
            WHERE f.tenant_id = p_tenant AND f.expired_at IS NULL AND f.conversation_id = ANY(p_conversations)
            ORDER BY d, f.id LIMIT p_k) v WHERE 1 - v.d >= p_min)
        UNION ALL
        (SELECT 'fact_lexical'::text, l.id::text, row_number() OVER (ORDER BY l.r DESC, l.id) FROM (
            SELECT f.id, ts_rank_cd(f.search, p_query, 1) AS r FROM semantic_fact f
            WHERE f.tenant_id = p_tenant AND f.expired_at IS NULL AND f.conversation_id = ANY(p_conversations)
              AND f.search @@ p_query ORDER BY r DESC, f.id LIMIT p_k) l);
    END IF;
END $$
"""


def upgrade() -> None:
    op.execute(EPISODE_ROWS)
    op.execute(SHOWN_MESSAGES)
    op.execute(FACT_LEGS)


def downgrade() -> None:
    op.execute("DROP FUNCTION IF EXISTS memq_fact_legs(text, text[], tsquery, vector, integer, double precision)")
    op.execute("DROP FUNCTION IF EXISTS memq_shown_messages(text, uuid[], bigint[])")
    op.execute("DROP FUNCTION IF EXISTS memq_episode_rows(text, uuid[])")
