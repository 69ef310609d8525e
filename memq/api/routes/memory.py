"""Retrieval (Plast Mem's retrieve_memory and recent_memory): markdown for an LLM's tool
result by default, ``?format=json`` with every score. ``/retrieve/raw`` and ``/recent/raw``
are deprecated aliases of ``?format=json`` (``memq.api.formats``)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request, Response

from memq.api.auth import caller, services
from memq.api.formats import MARKDOWN_BY_DEFAULT, Format, deprecated_alias, markdown, markdown_or_json
from memq.api.models import RecentIn, RecentOut, RetrieveIn, RetrieveOut
from memq.api.services import Services
from memq.memory.retrieval.service import RecentResult, RetrievalResult

router = APIRouter(prefix="/v1/memory", tags=["memory"])


def _retrieve(body: RetrieveIn, tenant: str, svc: Services) -> RetrievalResult:
    time_range = None if body.time_range is None else (body.time_range.start, body.time_range.end)
    return svc.memory(tenant).retrieve(
        body.query,
        conversation_id=body.conversation_id,
        conversation_ids=body.conversation_ids,
        user_id=body.user_id,
        limit=body.limit,
        detail=body.detail,
        max_tokens=body.max_tokens,
        time_range=time_range,
        now=body.now,
        record=body.record,
        asked_in=body.asked_in,
    )


def _recent(body: RecentIn, tenant: str, svc: Services) -> RecentResult:
    return svc.memory(tenant).recent(
        body.conversation_id,
        user_id=body.user_id,
        limit=body.limit,
        days=body.days,
        max_tokens=body.max_tokens,
        now=body.now,
    )


def _recent_json(body: RecentIn, result: RecentResult) -> dict[str, Any]:
    return {
        "conversation_id": body.conversation_id,
        "tokens": result.tokens,
        "text": result.text,
        "memories": result.records,
    }


# response_model_exclude_unset: the answer has exactly the keys the library's JSON has (a
# fact's scores name only the legs that found it)
@router.post(
    "/retrieve",
    response_model=RetrieveOut,
    response_model_exclude_unset=True,
    responses=markdown_or_json("markdown (the default), or `format=json`: the same with every score"),
    summary="What memq remembers (markdown, or JSON with every score)",
)
def retrieve(
    body: RetrieveIn,
    fmt: Format = MARKDOWN_BY_DEFAULT,
    tenant: str = Depends(caller),
    svc: Services = Depends(services),
) -> Any:
    """Hybrid lexical + vector search over episodes and their messages, fused by RRF and
    re-ranked by FSRS retrievability, within ``max_tokens``."""
    result = _retrieve(body, tenant, svc)
    return markdown(result.text) if fmt == "markdown" else result.to_json()


@router.post(
    "/retrieve/raw",
    response_model=RetrieveOut,
    response_model_exclude_unset=True,
    deprecated=True,
    summary="Deprecated: use POST /v1/memory/retrieve?format=json",
)
def retrieve_raw(
    body: RetrieveIn,
    request: Request,
    response: Response,
    tenant: str = Depends(caller),
    svc: Services = Depends(services),
) -> Any:
    """The same as ``POST /v1/memory/retrieve?format=json``; answered with ``Deprecation:
    true`` and a ``Link`` to it. Removed in the next release."""
    deprecated_alias(request, response, "/v1/memory/retrieve?format=json")
    return _retrieve(body, tenant, svc).to_json()


@router.post(
    "/recent",
    response_model=RecentOut,
    responses=markdown_or_json("markdown (the default), or `format=json`"),
    summary="The latest episodes (markdown, or JSON)",
)
def recent(
    body: RecentIn,
    fmt: Format = MARKDOWN_BY_DEFAULT,
    tenant: str = Depends(caller),
    svc: Services = Depends(services),
) -> Any:
    result = _recent(body, tenant, svc)
    return markdown(result.text) if fmt == "markdown" else _recent_json(body, result)


@router.post(
    "/recent/raw",
    response_model=RecentOut,
    deprecated=True,
    summary="Deprecated: use POST /v1/memory/recent?format=json",
)
def recent_raw(
    body: RecentIn,
    request: Request,
    response: Response,
    tenant: str = Depends(caller),
    svc: Services = Depends(services),
) -> Any:
    """The same as ``POST /v1/memory/recent?format=json``; answered with ``Deprecation:
    true`` and a ``Link`` to it. Removed in the next release."""
    deprecated_alias(request, response, "/v1/memory/recent?format=json")
    return _recent_json(body, _recent(body, tenant, svc))
