"""Ingest: add messages to a conversation (one or a batch) and flush it. The same
validation and Lua enqueue as the Python producer: one Redis round trip per batch, no
PostgreSQL on the way."""

from __future__ import annotations

import asyncio
import time

from fastapi import APIRouter, Depends, Path, Query, Request
from starlette.concurrency import run_in_threadpool

from memq.api.auth import caller, over_message_rate, services
from memq.api.fair_share import away
from memq.api.models import ConversationStatusOut, ErrorOut, FlushOut, MessageIn, MessagesIn, MessagesOut
from memq.api.services import Services
from memq.producer.client import NO_WORKER
from memq.shared.errors import ValidationError
from memq.shared.ids import check_conversation_id

router = APIRouter(prefix="/v1/conversations", tags=["ingest"])

ConversationId = Path(description="1-128 letters, digits, '.', '_', ':', '-', starting with a letter or digit")
WAIT_MAX = 60.0  # seconds a flush may wait for idle
WAIT_STEP = 0.1  # how often it looks


@router.post(
    "/{conversation_id}/messages",
    status_code=202,
    response_model=MessagesOut,
    summary="Add one message or a batch to a conversation",
    responses={
        400: {"model": ErrorOut, "description": "invalid input; nothing was written"},
        409: {
            "model": ErrorOut,
            "description": "out of order under MEMQ_OUT_OF_ORDER_POLICY=reject, or the conversation belongs to "
            "another user (field user_id); nothing written",
        },
        413: {"model": ErrorOut, "description": "body too large"},
        429: {
            "model": ErrorOut,
            "description": "rate_limited (Retry-After: the key's requests or messages a second; nothing written), "
            "or quota_exceeded: a tenant quota refused a part of the batch (limit, setting; nothing of that part "
            "written; see results)",
        },
        503: {"model": ErrorOut, "description": "Redis failed (see results) or has no room (storage_full, cause)"},
    },
)
def add_messages(
    request: Request,
    body: MessagesIn | MessageIn,
    conversation_id: str = ConversationId,
    tenant: str = Depends(caller),
    svc: Services = Depends(services),
) -> MessagesOut:
    """Each result says ``accepted``, ``clamped`` (accepted, timestamp raised to the
    previous one's) or ``duplicate`` (this ``message_id`` was accepted before), with the
    id the message is stored under. Retry a failed request with the same message ids."""
    check_conversation_id(conversation_id, svc.settings.conversation_id_max_length)
    items = body.messages if isinstance(body, MessagesIn) else [body]
    if len(items) > svc.settings.api_max_batch:
        raise ValidationError(
            f"at most {svc.settings.api_max_batch} messages per request (MEMQ_API_MAX_BATCH)", field="messages"
        )
    over_message_rate(request, svc, tenant, len(items))
    raw = [m.model_dump(exclude_none=True) for m in items]
    user_id = body.user_id if isinstance(body, MessagesIn) else None
    results = svc.producer.add_messages(raw, conversation_id=conversation_id, tenant=tenant, user_id=user_id)
    return MessagesOut(
        conversation_id=conversation_id,
        results=[{"index": i, "status": r.status, "message_id": r.message_id} for i, r in enumerate(results)],
    )


@router.post(
    "/{conversation_id}/flush",
    status_code=202,
    response_model=FlushOut,
    summary="Close the open event into an episode once its queue is drained",
    responses={404: {"model": ErrorOut, "description": "no message was ever accepted for this conversation"}},
)
async def flush(
    request: Request,
    conversation_id: str = ConversationId,
    wait: float = Query(
        0, ge=0, le=WAIT_MAX, description=f"Wait up to this many seconds (at most {WAIT_MAX:.0f}) for it to be idle."
    ),
    tenant: str = Depends(caller),
    svc: Services = Depends(services),
) -> FlushOut:
    """With ``wait``, answers once every accepted message is in an episode (``idle``) or the
    wait ends (``idle`` false: the messages are kept, ask ``/status`` later)."""
    await run_in_threadpool(svc.memory(tenant).require, conversation_id)
    flushed = await run_in_threadpool(svc.producer.flush, conversation_id, tenant=tenant)
    async with away(request):  # waits (a worker's answer, idle) outside the key's turns
        warning = NO_WORKER if flushed and not await run_in_threadpool(svc.producer.worker_answers) else None
        idle = None
        if wait:
            deadline = time.monotonic() + wait
            while not (idle := (await run_in_threadpool(svc.producer.status, conversation_id, tenant=tenant)).idle):
                if time.monotonic() >= deadline:
                    break
                await asyncio.sleep(min(WAIT_STEP, max(0.0, deadline - time.monotonic())))
    return FlushOut(conversation_id=conversation_id, flushed=flushed, warning=warning, idle=idle)


@router.get(
    "/{conversation_id}/status",
    response_model=ConversationStatusOut,
    summary="Whether the conversation is idle: every accepted message in an episode",
    responses={404: {"model": ErrorOut, "description": "no message was ever accepted for this conversation"}},
)
def status(
    conversation_id: str = ConversationId, tenant: str = Depends(caller), svc: Services = Depends(services)
) -> ConversationStatusOut:
    svc.memory(tenant).require(conversation_id)
    s = svc.producer.status(conversation_id, tenant=tenant)
    return ConversationStatusOut(
        conversation_id=conversation_id,
        idle=s.idle,
        accepted=s.accepted,
        inbox=s.inbox,
        open_event=s.buffer,
        waiting_segments=s.segments,
        quarantined=len(s.quarantined),
    )
