"""Searching semantic memory (active facts) for a query: the same request validation and
participant handling as retrieval, then the hybrid search of ``shared/db/facts.py``.
Used by the HTTP API, the MCP server and ``memq facts --query``."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import psycopg

from memq.memory.retrieval.legs import participants
from memq.memory.retrieval.participants import query_terms
from memq.memory.retrieval.request import build_request, scoped
from memq.shared.db.facts import Fact, search_facts
from memq.shared.settings import Settings


def find_facts(
    query: str,
    *,
    tenant: str | None,
    settings: Settings,
    conn: psycopg.Connection,
    conversation_id: str | None = None,
    conversation_ids: list[str] | None = None,
    limit: int | None = None,
    embed: Callable[[str], np.ndarray] | None = None,
    user_id: str | None = None,
) -> tuple[str, list[tuple[Fact, float, dict[str, int]]]]:
    """(the validated query, the facts best first with their scores)."""
    request = build_request(
        settings,
        tenant=tenant,
        query=query,
        conversation_id=conversation_id,
        conversation_ids=conversation_ids,
        limit=limit,
        user_id=user_id,
    )
    request = scoped(conn, request)
    terms = query_terms(request.query, participants(conn, request))
    if embed is None:
        from memq.shared.embeddings import get_embedder

        vector = get_embedder(settings).embed([terms.search_text])[0]
    else:
        vector = embed(terms.search_text)
    found = search_facts(
        conn,
        request.tenant,
        request.conversation_ids,
        [(terms.search_text, vector)],
        request.limit,
        k=settings.rrf_k,
        min_similarity=settings.fact_min_similarity,
    )
    return request.query, found
