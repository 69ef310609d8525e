"""The lexical query every full-text leg searches by (episodes, messages, facts, the
evaluation's baselines): any of the query's words, as an OR of its lexemes stemmed by the
``english`` configuration, matched against ``simple`` tsvectors of stemmed text
(``memq_any_words``). Used as ``WITH q AS (SELECT {OR_QUERY} AS q)`` with the query text
as ``%(query)s``.

Retrieval's legs also use:

- ``PAIRS_QUERY``: at least two of the query's words (``memq_two_words``: an OR of every
  pair of its lexemes; the OR query itself when it has fewer than two). A word a quarter of a large scope's
  messages hold (a name, "like") matches tens of thousands of rows, each of which
  ``ts_rank_cd`` must read; rows holding two of the query's words are few, and are where
  the cover-density ranking finds its best matches.
- The tenant's own lexeme (``TENANT_QUERY``, ``memq_tenant_words``), held in the GIN
  indexes over ``search`` (``indexed_search``, migration 0015), so that a search of one
  tenant reads no other tenant's rows. It holds a space, which no text parser yields, so
  no word of a message is ever taken for it; the tenant id appears only as its MD5.
"""

# the functions are migration 0015's: immutable, so that with the statement's parameters
# each is evaluated while the statement is planned, and the planner sees the actual words
OR_QUERY = "memq_any_words(%(query)s)"
PAIRS_QUERY = "memq_two_words(%(query)s)"
TENANT_QUERY = "memq_tenant_words(%(tenant)s)"


def indexed_search(alias: str) -> str:
    """The expression the ``*_search_gin`` indexes hold (migration 0015): the row's
    ``search`` with its tenant's lexeme. Matched against ``query && TENANT_QUERY`` it
    finds the tenant's rows only, inside the index."""
    return f"({alias}.search || array_to_tsvector(ARRAY['tenant ' || md5({alias}.tenant_id)]))"
