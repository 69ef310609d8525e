"""A conversation as an agent sees it: its episodes, the manifest (MIRA), the session
context, and forgetting it. A conversation of another tenant is the same as one that
does not exist: empty lists, an empty manifest, nothing to forget."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from fastapi import APIRouter, Depends, Path, Query

from memq.api.auth import caller, services
from memq.api.formats import JSON_BY_DEFAULT, Format, markdown, markdown_or_json
from memq.api.models import ContextOut, EpisodeOut, EpisodesOut, ErrorOut, ForgetOut, ManifestOut
from memq.api.services import Services
from memq.shared.forget import forget_conversation
from memq.shared.ids import check_conversation_id

router = APIRouter(prefix="/v1/conversations", tags=["conversations"])
ConversationId = Path(description="1-128 letters, digits, '.', '_', ':', '-', starting with a letter or digit")


@router.get(
    "/{conversation_id}/episodes", response_model=EpisodesOut, summary="The conversation's episodes, oldest first"
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
    responses=markdown_or_json("JSON (the default, with the markdown tree in `text`), or `format=markdown`"),
    summary="The manifest: episodes by relative date",
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
    responses=markdown_or_json("JSON (the default, with the markdown in `text`), or `format=markdown`"),
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
def forget(
    conversation_id: str = ConversationId, tenant: str = Depends(caller), svc: Services = Depends(services)
) -> ForgetOut:
    """Its episodes and messages, pending reviews, cached manifest and every Redis key and
    index entry, including work in flight. Idempotent."""
    check_conversation_id(conversation_id, svc.settings.conversation_id_max_length)
    with svc.conn(tenant) as conn:
        done = forget_conversation(
            svc.redis, conn, svc.producer.keys(conversation_id, tenant), wait_seconds=svc.settings.forget_wait_seconds
        )
    return ForgetOut(
        conversation_id=conversation_id, forgotten=done.existed, episodes=done.episodes, messages=done.messages
    )
