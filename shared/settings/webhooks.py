"""Webhook delivery settings (a group of ``Settings``; variables ``MEMQ_*``)."""

from __future__ import annotations

from pydantic import BaseModel, Field, field_validator

from memq.shared.webhooks.destinations import Allowance


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
    webhook_allow_destinations: str = Field(
        default="",
        description="For development and tests only: host names, addresses and networks (CIDR), comma-separated, "
        "that webhooks may reach although they are not public (loopback, private, link-local ...), and over plain "
        "http://. Empty: webhooks reach only public addresses over https:// (docs/webhooks.md). Every process that "
        "delivers or registers webhooks logs what it opens (`webhook_destinations_opened`), and `memq config "
        "--check` says it.",
    )

    @field_validator("webhook_allow_destinations")
    @classmethod
    def _allowance_parses(cls, value: str) -> str:
        Allowance.parse(value)  # a ValueError names the entry
        return value

    @property
    def webhook_allowance(self) -> Allowance:
        return Allowance.parse(self.webhook_allow_destinations)
