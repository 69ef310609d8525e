"""Webhook endpoints over HTTP: register, list and remove the key's tenant's endpoints, list
their deliveries (the failed ones alone) and send one again (docs/webhooks.md). The
secret is in the answer to the registration only."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Path, Query
from pydantic import BaseModel, Field

from memq.api.auth import acting, caller, services
from memq.api.services import Services
from memq.shared.activity import Actor
from memq.shared.errors import NotFound
from memq.shared.webhooks.deliveries import list_deliveries, reopen
from memq.shared.webhooks.destinations import Destinations
from memq.shared.webhooks.endpoints import EVENTS, add_endpoint, list_endpoints, remove_endpoint

router = APIRouter(tags=["webhooks"])


class WebhookIn(BaseModel):
    url: str = Field(
        description="https:// to a public address (every address its host resolves to; loopback, private, "
        "link-local and other non-public addresses are refused unless MEMQ_WEBHOOK_ALLOW_DESTINATIONS opens them)"
    )
    events: list[str] | None = Field(default=None, description=f"Some of {', '.join(EVENTS)}; all when omitted.")
    content: bool = Field(default=False, description="Send titles, summaries and fact texts, not only ids.")


class WebhookOut(BaseModel):
    id: str
    url: str
    events: list[str]
    content: bool
    created_at: str


class WebhookCreatedOut(WebhookOut):
    secret: str = Field(description="Signs every delivery (memq-signature); shown this once.")


class WebhookListOut(BaseModel):
    webhooks: list[WebhookOut]


class DeliveryOut(BaseModel):
    id: str
    endpoint_id: str
    event_id: str = Field(description="The same for every attempt and every endpoint: de-duplicate by it.")
    event: str
    conversation_id: str | None
    status: str = Field(description="pending, delivered or failed (after the last attempt)")
    attempts: int
    last_error: str | None
    last_status: int | None = Field(description="The endpoint's last HTTP status, if it answered.")
    created_at: str
    finished_at: str | None


class DeliveryListOut(BaseModel):
    deliveries: list[DeliveryOut]


class DeliveryRetriedOut(BaseModel):
    id: str
    status: str = Field(description='"pending": queued for a new round of attempts')


class WebhookDeletedOut(BaseModel):
    id: str
    deleted: bool


@router.post("/v1/webhooks", response_model=WebhookCreatedOut, status_code=201, summary="Register a webhook endpoint")
def create(
    body: WebhookIn, tenant: str = Depends(caller), who: Actor = Depends(acting), svc: Services = Depends(services)
) -> dict[str, Any]:
    with svc.conn(tenant) as conn:
        endpoint, secret = add_endpoint(
            conn,
            tenant,
            body.url,
            Destinations(svc.settings.webhook_allowance),
            body.events,
            body.content,
            actor=who,
        )
    return {**endpoint.to_json(), "secret": secret}


@router.get("/v1/webhooks", response_model=WebhookListOut, summary="The tenant's webhook endpoints")
def listing(tenant: str = Depends(caller), svc: Services = Depends(services)) -> dict[str, Any]:
    with svc.conn(tenant) as conn:
        return {"webhooks": [e.to_json() for e in list_endpoints(conn, tenant)]}


@router.delete(
    "/v1/webhooks/{webhook_id}", response_model=WebhookDeletedOut, summary="Remove an endpoint and its deliveries"
)
def delete(
    webhook_id: str = Path(...),
    tenant: str = Depends(caller),
    who: Actor = Depends(acting),
    svc: Services = Depends(services),
) -> dict[str, Any]:
    with svc.conn(tenant) as conn:
        if not remove_endpoint(conn, tenant, webhook_id, actor=who):
            raise NotFound("no such webhook")
    return {"id": webhook_id, "deleted": True}


@router.get(
    "/v1/webhooks/deliveries",
    response_model=DeliveryListOut,
    summary="The tenant's latest webhook deliveries, newest first",
)
def deliveries(
    failed: bool = Query(False, description="Only the deliveries that failed after their last attempt."),
    limit: int = Query(100, ge=1, le=10_000),
    tenant: str = Depends(caller),
    svc: Services = Depends(services),
) -> dict[str, Any]:
    with svc.conn(tenant) as conn:
        return {"deliveries": [d.to_json() for d in list_deliveries(conn, tenant, failed_only=failed, limit=limit)]}


@router.post(
    "/v1/webhooks/deliveries/{delivery_id}/retry",
    response_model=DeliveryRetriedOut,
    status_code=202,
    summary="Send a delivery again (a failed one gets a new round of attempts)",
)
def retry(
    delivery_id: str = Path(...), tenant: str = Depends(caller), svc: Services = Depends(services)
) -> dict[str, Any]:
    from memq.shared import publisher

    with svc.conn(tenant) as conn:
        if not reopen(conn, delivery_id, tenant):
            raise NotFound("no such delivery")
    publisher.webhook_delivery(svc.producer.celery, delivery_id)
    return {"id": delivery_id, "status": "pending"}
