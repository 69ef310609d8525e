"""Retrieval (Plast Mem's retrieve_memory and recent_memory): markdown for an LLM's tool
result, and ``/raw`` with every score."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends
from fastapi.responses import PlainTextResponse

from memq.api.auth import caller, services
from memq.api.models import RecentIn, RetrieveIn
from memq.api.services import Services
from memq.shared.retrieval.service import RecentResult, RetrievalResult, recent_memory, retrieve_memory

router = APIRouter(prefix="/v1/memory", tags=["memory"])
MARKDOWN: dict[int | str, dict[str, Any]] = {
    200: {"content": {"text/markdown": {"schema": {"type": "string"}}}, "description": "markdown"}
}


def _retrieve(body: RetrieveIn, tenant: str, svc: Services) -> RetrievalResult:
    time_range = None if body.time_range is None else (body.time_range.start, body.time_range.end)
    with svc.conn() as conn:
        return retrieve_memory(
            body.query,
            tenant=tenant,
            conversation_id=body.conversation_id,
            conversation_ids=body.conversation_ids,
            limit=body.limit,
            detail=body.detail,
            max_tokens=body.max_tokens,
            time_range=time_range,
            now=body.now,
            settings=svc.settings,
            conn=conn,
            record=body.record,
            asked_in=body.asked_in,
        )


def _recent(body: RecentIn, tenant: str, svc: Services) -> RecentResult:
    with svc.conn() as conn:
        return recent_memory(
            body.conversation_id,
            tenant=tenant,
            limit=body.limit,
            days=body.days,
            max_tokens=body.max_tokens,
            now=body.now,
            settings=svc.settings,
            conn=conn,
        )


@router.post(
    "/retrieve", response_class=PlainTextResponse, responses=MARKDOWN, summary="What memq remembers (markdown)"
)
def retrieve(body: RetrieveIn, tenant: str = Depends(caller), svc: Services = Depends(services)) -> PlainTextResponse:
    """Hybrid lexical + vector search over episodes and their messages, fused by RRF and
    re-ranked by FSRS retrievability, within ``max_tokens``."""
    return PlainTextResponse(_retrieve(body, tenant, svc).text, media_type="text/markdown; charset=utf-8")


@router.post("/retrieve/raw", summary="The same as JSON, with every score")
def retrieve_raw(body: RetrieveIn, tenant: str = Depends(caller), svc: Services = Depends(services)) -> dict[str, Any]:
    return _retrieve(body, tenant, svc).to_json()


@router.post("/recent", response_class=PlainTextResponse, responses=MARKDOWN, summary="The latest episodes (markdown)")
def recent(body: RecentIn, tenant: str = Depends(caller), svc: Services = Depends(services)) -> PlainTextResponse:
    return PlainTextResponse(_recent(body, tenant, svc).text, media_type="text/markdown; charset=utf-8")


@router.post("/recent/raw", summary="The latest episodes as JSON")
def recent_raw(body: RecentIn, tenant: str = Depends(caller), svc: Services = Depends(services)) -> dict[str, Any]:
    r = _recent(body, tenant, svc)
    return {"conversation_id": body.conversation_id, "tokens": r.tokens, "text": r.text, "memories": r.records}
