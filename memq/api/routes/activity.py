"""The tenant's activity log over HTTP: who created and revoked keys, forgot conversations
and users, exported and imported, registered and removed webhooks (``memq.shared.activity``,
docs/isolation.md), newest first, a page at a time like ``GET /v1/conversations``."""

from __future__ import annotations

from datetime import datetime

from fastapi import APIRouter, Depends, Query

from memq.api.auth import caller, services
from memq.api.models import ActivityEntryOut, ActivityOut
from memq.api.services import Services
from memq.shared.activity import ACTIONS, check_action, check_cursor, check_since
from memq.shared.db.activity import activity_page
from memq.shared.paging import PAGE_DEFAULT, PAGE_MAX

router = APIRouter(tags=["activity"])
Since = Query(None, description="Only entries at or after this time (ISO-8601 with Z or an offset).")


@router.get(
    "/v1/activity", response_model=ActivityOut, summary="The tenant's activity log, newest first, a page at a time"
)
def activity(
    action: str | None = Query(None, description=f"Only this action: one of {', '.join(ACTIONS)}."),
    since: datetime | None = Since,
    after: str | None = Query(None, description="The cursor: `next` of the previous page."),
    limit: int = Query(PAGE_DEFAULT, ge=1, le=PAGE_MAX),
    tenant: str = Depends(caller),
    svc: Services = Depends(services),
) -> ActivityOut:
    cursor, wanted, start = check_cursor(after), check_action(action), check_since(since)
    with svc.conn(tenant) as conn:
        page, following = activity_page(conn, tenant, after=cursor, limit=limit, action=wanted, since=start)
    return ActivityOut(entries=[ActivityEntryOut(**r.to_json()) for r in page], next=following)
