"""Webhook endpoints over HTTP: register, list and remove the key's tenant's endpoints
(docs/webhooks.md). The secret is in the answer to the registration only."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Path
from pydantic import BaseModel, Field

from memq.api.auth import caller, services
from memq.api.services import Services
from memq.shared.errors import NotFound
from memq.shared.webhooks.endpoints import EVENTS, add_endpoint, list_endpoints, remove_endpoint

router = APIRouter(tags=["webhooks"])


class WebhookIn(BaseModel):
    url: str = Field(description="https:// (http:// only to 127.0.0.1 or localhost, for development)")
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


class WebhookDeletedOut(BaseModel):
    id: str
    deleted: bool


@router.post("/v1/webhooks", response_model=WebhookCreatedOut, status_code=201, summary="Register a webhook endpoint")
def create(body: WebhookIn, tenant: str = Depends(caller), svc: Services = Depends(services)) -> dict[str, Any]:
    with svc.conn(tenant) as conn:
        endpoint, secret = add_endpoint(conn, tenant, body.url, body.events, body.content)
    return {**endpoint.to_json(), "secret": secret}


@router.get("/v1/webhooks", response_model=WebhookListOut, summary="The tenant's webhook endpoints")
def listing(tenant: str = Depends(caller), svc: Services = Depends(services)) -> dict[str, Any]:
    with svc.conn(tenant) as conn:
        return {"webhooks": [e.to_json() for e in list_endpoints(conn, tenant)]}


@router.delete(
    "/v1/webhooks/{webhook_id}", response_model=WebhookDeletedOut, summary="Remove an endpoint and its deliveries"
)
def delete(
    webhook_id: str = Path(...), tenant: str = Depends(caller), svc: Services = Depends(services)
) -> dict[str, Any]:
    with svc.conn(tenant) as conn:
        if not remove_endpoint(conn, tenant, webhook_id):
            raise NotFound("no such webhook")
    return {"id": webhook_id, "deleted": True}
