"""Users: the conversations of a user, moving a conversation to a user (audited) and
forgetting a user (every conversation of the user, and the user's audit rows). See
``shared/users.py`` and docs/api.md#users."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Path, Query, Request
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from memq.api.auth import acting, caller, services
from memq.api.fair_share import away
from memq.api.models import ErrorOut
from memq.api.services import Services
from memq.shared.activity import Actor
from memq.shared.ids import check_user_id
from memq.shared.users import forget_user, move_conversation, user_changes, user_conversations

router = APIRouter(tags=["users"])
UserId = Path(description="1-128 letters, digits, '.', '_', ':', '-', starting with a letter or digit")


class MoveIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    user_id: str | None = Field(description="The user the conversation now belongs to; null: to no user.")


class MoveOut(BaseModel):
    conversation_id: str
    from_user_id: str | None
    user_id: str | None
    changed: bool = Field(description="False when the conversation already belonged to that user (nothing audited).")


class UserChangeOut(BaseModel):
    conversation_id: str
    from_user_id: str | None
    user_id: str | None
    at: str
    actor: str | None


class UserConversationsOut(BaseModel):
    user_id: str
    conversations: list[str]
    changes: list[UserChangeOut] | None = Field(default=None, description="With changes=true: the audited moves.")


class UserForgetOut(BaseModel):
    user_id: str
    conversations: list[str] = Field(description="The conversations forgotten.")
    episodes: int
    messages: int
    audit_rows: int


@router.post(
    "/v1/conversations/{conversation_id}/user",
    response_model=MoveOut,
    summary="Move the conversation to a user (audited)",
    responses={404: {"model": ErrorOut, "description": "no such conversation"}},
)
def move(
    body: MoveIn,
    conversation_id: str = Path(...),
    tenant: str = Depends(caller),
    svc: Services = Depends(services),
) -> dict[str, Any]:
    """Later messages must name this user (or none); every change is a row of
    ``conversation_user_change``."""
    with svc.conn(tenant) as conn:
        moved = move_conversation(
            svc.redis,
            conn,
            svc.settings,
            tenant=tenant,
            conversation_id=conversation_id,
            user_id=body.user_id,
            actor="api",
        )
    return moved.to_json()


@router.get(
    "/v1/users/{user_id}/conversations",
    response_model=UserConversationsOut,
    summary="The user's conversations",
)
def conversations(
    user_id: str = UserId,
    changes: bool = Query(False, description="also the audited moves from or to the user"),
    tenant: str = Depends(caller),
    svc: Services = Depends(services),
) -> dict[str, Any]:
    check_user_id(user_id, svc.settings.conversation_id_max_length)
    with svc.conn(tenant) as conn:
        out: dict[str, Any] = {"user_id": user_id, "conversations": user_conversations(conn, tenant, user_id)}
        if changes:
            out["changes"] = user_changes(conn, tenant, user_id=user_id)
    return out


@router.delete(
    "/v1/users/{user_id}",
    response_model=UserForgetOut,
    summary="Forget the user: every conversation of the user, and its audit rows",
    responses={503: {"model": ErrorOut, "description": "a worker is processing one of them; try again"}},
)
async def forget(
    request: Request,
    user_id: str = UserId,
    tenant: str = Depends(caller),
    who: Actor = Depends(acting),
    svc: Services = Depends(services),
) -> dict[str, Any]:
    """Each conversation as ``DELETE /v1/conversations/{id}`` forgets it. Idempotent."""

    def run() -> dict[str, Any]:
        with svc.conn(tenant) as conn:
            return forget_user(
                svc.redis,
                conn,
                svc.settings,
                tenant=tenant,
                user_id=user_id,
                wait_seconds=svc.settings.forget_wait_seconds,
                actor=who,
            ).to_json()

    async with away(request):  # it may wait for workers to let go: outside the key's turns
        return await run_in_threadpool(run)
