"""The lexical query every full-text leg searches by (episodes, messages, facts, the
evaluation's baselines): any of the query's words, as an OR of its lexemes stemmed by the
``english`` configuration, matched against ``simple`` tsvectors of stemmed text. Used as
``WITH q AS (SELECT {OR_QUERY} AS q)`` with the query text as ``%(query)s``."""

OR_QUERY = (
    "to_tsquery('simple', array_to_string(ARRAY(SELECT quote_literal(l) FROM "
    "unnest(tsvector_to_array(to_tsvector('english', %(query)s))) AS l), ' | '))"
)
