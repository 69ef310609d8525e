"""Webhook delivery settings (a group of ``Settings``; variables ``MEMQ_*``)."""

from __future__ import annotations

from pydantic import BaseModel, Field


class WebhookSettings(BaseModel):
    """Webhooks."""

    webhook_timeout_seconds: float = Field(
        default=10.0, gt=0, le=60, description="How long one delivery waits for the endpoint's response."
    )
    webhook_max_attempts: int = Field(
        default=8,
        ge=1,
        description="Attempts of a delivery (the first and its retries) before it is kept as failed "
        "(`memq webhooks deliveries --failed`, `memq webhooks retry ID`).",
    )
    webhook_retry_backoff_seconds: float = Field(
        default=5.0, gt=0, description="First delay before a failed delivery is tried again; doubles each attempt."
    )
    webhook_retry_backoff_max_seconds: float = Field(
        default=600.0, gt=0, description="Longest delay between two attempts of a delivery."
    )
    webhook_sweep_seconds: float = Field(
        default=15.0,
        gt=0,
        description="How often `memq beat` publishes the deliveries that are due and were never published, "
        "or whose task was lost (the outbox sweep).",
    )
    webhook_republish_after_seconds: float = Field(
        default=120.0,
        gt=0,
        description="A pending delivery whose task was due this long ago and has not run is published again.",
    )
