"""``GET /v1/quota``: the caller's tenant's quotas and what it has used."""

from __future__ import annotations

from fastapi import APIRouter, Depends

from memq.api.auth import caller, services
from memq.api.models import QuotaOut
from memq.api.services import Services
from memq.shared.mailbox.quota import usage

router = APIRouter(prefix="/v1/quota", tags=["quota"])


@router.get("", response_model=QuotaOut, summary="The tenant's quotas and what it has used")
def quota(tenant: str = Depends(caller), svc: Services = Depends(services)) -> QuotaOut:
    """Messages a day (UTC) and stored messages: each limit (null: none) and its use. A batch
    a quota cannot take is refused with 429 ``quota_exceeded`` naming the limit; the
    operator sets a tenant's own limits with `memq quota set`."""
    used = usage(svc.redis, svc.settings, tenant)
    return QuotaOut(
        messages_per_day=used.messages_per_day,
        used_today=used.used_today + used.leased_today,
        stored_messages=used.stored_messages,
        stored=None if used.stored_messages is None else used.stored + used.leased_stored,
    )
