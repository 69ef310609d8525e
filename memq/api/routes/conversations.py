"""A conversation as an agent sees it: its episodes, the manifest (MIRA), the session
context, and forgetting it; and the tenant's conversations, a page at a time. A
conversation this tenant does not know (never accepted, forgotten, or another tenant's:
the same answer) is a 404 naming it, except for forget, which is idempotent."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from fastapi import APIRouter, Depends, Path, Query, Request
from starlette.concurrency import run_in_threadpool

from memq.api.auth import acting, caller, services
from memq.api.fair_share import away
from memq.api.formats import JSON_BY_DEFAULT, Format, markdown, markdown_or_json
from memq.api.models import (
    ContextOut,
    ConversationOut,
    ConversationsOut,
    EpisodeOut,
    EpisodesOut,
    ErrorOut,
    ForgetOut,
    ManifestOut,
)
from memq.api.services import Services
from memq.shared.activity import Actor
from memq.shared.forget import Forgotten, forget_conversation
from memq.shared.ids import check_conversation_id

router = APIRouter(prefix="/v1/conversations", tags=["conversations"])
ConversationId = Path(description="1-128 letters, digits, '.', '_', ':', '-', starting with a letter or digit")
NOT_KNOWN: dict[int | str, dict[str, Any]] = {
    404: {"model": ErrorOut, "description": "a conversation (or user) this tenant does not know"}
}


@router.get("", response_model=ConversationsOut, summary="The tenant's conversations, in id order, a page at a time")
def conversations(
    after: str | None = Query(None, description="The cursor: `next` of the previous page."),
    limit: int = Query(100, ge=1, le=500),
    tenant: str = Depends(caller),
    svc: Services = Depends(services),
) -> ConversationsOut:
    page, cursor = svc.memory(tenant).conversations(after=after, limit=limit)
    return ConversationsOut(conversations=[ConversationOut(**c.to_json()) for c in page], next=cursor)


@router.get(
    "/{conversation_id}/episodes",
    response_model=EpisodesOut,
    summary="The conversation's episodes, oldest first",
    responses=NOT_KNOWN,
)
def episodes(
    conversation_id: str = ConversationId, tenant: str = Depends(caller), svc: Services = Depends(services)
) -> EpisodesOut:
    rows = svc.memory(tenant).episodes(conversation_id)
    return EpisodesOut(
        conversation_id=conversation_id,
        episodes=[
            EpisodeOut(**{**asdict(e), "start_at": e.start_at.isoformat(), "end_at": e.end_at.isoformat()})
            for e in rows
        ],
    )


@router.get(
    "/{conversation_id}/manifest",
    response_model=ManifestOut,
    responses={
        **NOT_KNOWN,
        **markdown_or_json("JSON (the default, with the markdown tree in `text`), or `format=markdown`"),
    },
    summary="The manifest: chapters by relative date",
)
def manifest(
    conversation_id: str = ConversationId,
    depth: int | None = Query(None, description="default MEMQ_MANIFEST_DEPTH"),
    tz: str | None = Query(None, alias="timezone", description="IANA name, default UTC"),
    user_id: str | None = Query(None, description="Scope to this user's conversations (see docs/api.md#users)"),
    fmt: Format = JSON_BY_DEFAULT,
    tenant: str = Depends(caller),
    svc: Services = Depends(services),
) -> Any:
    result = svc.memory(tenant).manifest(conversation_id, user_id=user_id, depth=depth, timezone=tz)
    return markdown(result.text) if fmt == "markdown" else result.to_json()


@router.get(
    "/{conversation_id}/context",
    response_model=ContextOut,
    responses={
        **NOT_KNOWN,
        **markdown_or_json("JSON (the default, with the markdown in `text`), or `format=markdown`"),
    },
    summary="What to put at the top of a new session",
)
def context(
    conversation_id: str = ConversationId,
    max_tokens: int | None = Query(None, description="default MEMQ_SESSION_MAX_TOKENS"),
    summaries: int | None = Query(None, description="episode summaries (default MEMQ_SESSION_SUMMARY_COUNT)"),
    continuity: int | None = Query(None, description="messages before the open segment"),
    tz: str | None = Query(None, alias="timezone", description="IANA name, default UTC"),
    user_id: str | None = Query(None, description="Scope to this user's conversations (see docs/api.md#users)"),
    fmt: Format = JSON_BY_DEFAULT,
    tenant: str = Depends(caller),
    svc: Services = Depends(services),
) -> Any:
    """In order: a collapse marker, the latest episode summaries, the last messages before
    the open segment, a session-boundary marker with the time gap, and the open segment's
    messages not yet in an episode; within ``max_tokens``."""
    result = svc.memory(tenant).context(
        conversation_id, user_id=user_id, max_tokens=max_tokens, summaries=summaries, continuity=continuity, timezone=tz
    )
    return markdown(result.text) if fmt == "markdown" else result.to_json()


@router.delete(
    "/{conversation_id}",
    response_model=ForgetOut,
    summary="Forget the conversation: every trace of it",
    responses={503: {"model": ErrorOut, "description": "a worker is processing it; try again"}},
)
async def forget(
    request: Request,
    conversation_id: str = ConversationId,
    tenant: str = Depends(caller),
    who: Actor = Depends(acting),
    svc: Services = Depends(services),
) -> ForgetOut:
    """Its episodes and messages, pending reviews, cached manifest and every Redis key and
    index entry, including work in flight. Idempotent."""
    check_conversation_id(conversation_id, svc.settings.conversation_id_max_length)

    def run() -> Forgotten:
        with svc.conn(tenant) as conn:
            return forget_conversation(
                svc.redis,
                conn,
                svc.producer.keys(conversation_id, tenant),
                wait_seconds=svc.settings.forget_wait_seconds,
                actor=who,
            )

    async with away(request):  # it may wait for a worker to let go: outside the key's turns
        done = await run_in_threadpool(run)
    return ForgetOut(
        conversation_id=conversation_id, forgotten=done.existed, episodes=done.episodes, messages=done.messages
    )
