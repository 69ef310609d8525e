"""Data portability over HTTP: the caller's tenant as a streamed ``memq-export`` file (JSON
Lines), and such a file imported into the caller's tenant (every record is mapped into it,
whichever tenant it was exported from). See docs/portability.md."""

from __future__ import annotations

from typing import Any

import anyio
from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, Field

from memq.api.auth import acting, caller, services
from memq.api.fair_share import away
from memq.api.services import Services
from memq.memory.portability.format import FORMAT, VERSION, FormatError
from memq.shared.activity import Actor
from memq.shared.errors import ValidationError

router = APIRouter(tags=["portability"])

JSONL = "application/x-ndjson"


class ExportHeaderOut(BaseModel):
    """The first line of an export; every following line is one record (docs/portability.md)."""

    type: str = Field(description='"header"')
    format: str = Field(description=f'"{FORMAT}"')
    version: int = Field(description=f"The format's version ({VERSION}).")
    embedding_model: str
    embedding_dim: int
    tenant: str
    conversation_id: str | None
    user_id: str | None = Field(None, description="The user whose conversations were exported, if one was asked.")
    exported_at: str


class ImportOut(BaseModel):
    tenant: str = Field(description="The tenant the records were written to (the caller's).")
    source_tenant: str = Field(description="The tenant the file was exported from.")
    complete: bool
    lines: int
    reembedded: bool = Field(description="True when the file's embedding model was not this deployment's.")
    inserted: dict[str, int] = Field(description="Rows written, per record type.")
    skipped: dict[str, int] = Field(description="Records already there (importing again changes nothing).")
    stopped_at_line: int | None
    stopped_reason: str | None


@router.get(
    "/v1/export",
    summary="The caller's tenant (or one conversation) as JSON Lines, streamed",
    response_class=StreamingResponse,
    responses={
        200: {
            "model": ExportHeaderOut,
            "description": "JSON Lines: the header (this schema), one record per line, then the end record.",
            "content": {JSONL: {}},
        }
    },
)
def export(
    conversation_id: str | None = Query(None, description="Only this conversation."),
    user_id: str | None = Query(None, description="Only the conversations of this user."),
    tenant: str = Depends(caller),
    who: Actor = Depends(acting),
    svc: Services = Depends(services),
) -> StreamingResponse:
    lines = svc.memory(tenant).export(conversation_id=conversation_id, user_id=user_id, actor=who)
    scope = f"-{conversation_id}" if conversation_id else f"-user-{user_id}" if user_id else ""
    name = f"memq-{tenant}{scope}.jsonl"
    return StreamingResponse(lines, media_type=JSONL, headers={"Content-Disposition": f'attachment; filename="{name}"'})


@router.post(
    "/v1/import",
    response_model=ImportOut,
    summary="Import a file of GET /v1/export into the caller's tenant (idempotent)",
    openapi_extra={
        "requestBody": {
            "required": True,
            "description": "A memq-export file (JSON Lines), at most MEMQ_API_MAX_BODY_BYTES.",
            # either media type (the body is read as it is); text/plain for clients that know no other
            "content": {JSONL: {"schema": {"type": "string"}}, "text/plain": {"schema": {"type": "string"}}},
        }
    },
)
async def import_(
    request: Request,
    tenant: str = Depends(caller),
    who: Actor = Depends(acting),
    svc: Services = Depends(services),
) -> dict[str, Any]:
    from memq.memory.portability.importer import ImportStopped

    async with away(request):  # an upload's pace is the client's: outside the key's turns
        body = await request.body()  # bounded by the body limit (memq.api.limits)

    def run() -> dict[str, Any]:
        report = svc.memory(tenant).import_lines(body.splitlines(keepends=True), actor=who)
        if report.stopped is not None:
            raise ImportStopped(report)
        return report.to_json()

    try:
        return await anyio.to_thread.run_sync(run)
    except (FormatError, ImportStopped) as exc:
        raise ValidationError(str(exc), field="body") from None
