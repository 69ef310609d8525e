"""Semantic memory over HTTP: a conversation's facts, search over active facts, and the
history of one fact; scoped to the key's tenant like everything else."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Path, Query

from memq.api.auth import caller, services
from memq.api.models import ConversationFactsOut, FactHistoryOut, FactSearchIn, FactSearchOut
from memq.api.services import Services
from memq.memory.retrieval.facts_section import fact_record
from memq.shared.errors import NotFound

router = APIRouter(tags=["facts"])


@router.get(
    "/v1/conversations/{conversation_id}/facts",
    response_model=ConversationFactsOut,
    summary="The conversation's facts (active, or all with retired)",
)
def conversation_facts(
    conversation_id: str = Path(...),
    include_retired: bool = Query(False),
    tenant: str = Depends(caller),
    svc: Services = Depends(services),
) -> dict[str, Any]:
    facts = svc.memory(tenant).conversation_facts(conversation_id, include_retired=include_retired)
    return {"conversation_id": conversation_id, "facts": [f.to_json() for f in facts]}


# response_model_exclude_unset: a fact's scores name only the legs that found it, as the library's JSON does
@router.post(
    "/v1/facts/search",
    response_model=FactSearchOut,
    response_model_exclude_unset=True,
    summary="Active facts most relevant to a query (hybrid search)",
)
def facts_search(
    body: FactSearchIn, tenant: str = Depends(caller), svc: Services = Depends(services)
) -> dict[str, Any]:
    query, found = svc.memory(tenant).facts(
        body.query,
        conversation_id=body.conversation_id,
        conversation_ids=body.conversation_ids,
        user_id=body.user_id,
        limit=body.limit,
    )
    return {"query": query, "facts": [fact_record(f, score, ranks) for f, score, ranks in found]}


@router.get("/v1/facts/{fact_id}/history", response_model=FactHistoryOut, summary="A fact and every change to it")
def history(
    fact_id: str = Path(...), tenant: str = Depends(caller), svc: Services = Depends(services)
) -> dict[str, Any]:
    found = svc.memory(tenant).fact(fact_id)
    if found is None:
        raise NotFound("no such fact")
    fact, changes = found
    return {"fact": fact.to_json(), "history": changes}
