"""Producer and mailbox settings (a group of ``Settings``; variables ``MEMQ_*``)."""

from __future__ import annotations

from pydantic import BaseModel, Field, field_validator


class MailboxSettings(BaseModel):
    """Producer and mailbox: what a message may be and how it is queued."""

    conversation_id_max_length: int = Field(default=128, ge=8, le=512, description="Longest conversation id accepted.")
    message_max_chars: int = Field(default=100_000, ge=1, description="Longest message content accepted.")
    metadata_max_bytes: int = Field(default=16_384, ge=0, description="Largest metadata object (JSON bytes).")
    out_of_order_policy: str = Field(
        default="clamp",
        description="A timestamp older than the conversation's last accepted one: 'clamp' "
        "(accept, order by arrival, use the previous timestamp for segmentation and keep "
        "the original) or 'reject' (refuse the message with an error).",
    )
    dedup_ttl_days: float = Field(
        default=30,
        gt=0,
        description="How long each message id is remembered for duplicate detection, from its acceptance.",
    )
    producer_confirm_after_ms: float = Field(
        default=25.0,
        ge=0,
        description="When publishing a batch's drain tasks failed, or took longer than this after Redis accepted the "
        "batch, the producer checks that what Redis accepted is still there before it says so (a Redis that crashed "
        "and came back in between can have lost its last second of writes); what is gone is reported 'unknown'.",
    )
    idle_state_ttl_days: float = Field(
        default=30,
        gt=0,
        description="A conversation with nothing waiting keeps its Redis state this long after its last activity; "
        "counters are re-derived from PostgreSQL when it returns.",
    )

    quota_messages_per_day: int = Field(
        default=0,
        ge=0,
        description="Messages one tenant may add per day (UTC, Redis' clock), for tenants without their own "
        "(`memq quota set`); enforced by the enqueue script, so no producer passes it. 0: no limit.",
    )
    quota_stored_messages: int = Field(
        default=0,
        ge=0,
        description="Messages one tenant may hold (added, less those forgotten), for tenants without their own "
        "(`memq quota set`). 0: no limit.",
    )
    quota_lease_messages: int = Field(
        default=200,
        ge=0,
        description="How much of a tenant's quotas each Redis shard takes ahead (a lease), so that most batches "
        "need no extra round trip; a tenant at its limit gets back what shards hold unused first, so the limit "
        "is exact either way.",
    )

    @field_validator("out_of_order_policy")
    @classmethod
    def _policy(cls, v: str) -> str:
        if v not in {"clamp", "reject"}:
            raise ValueError("MEMQ_OUT_OF_ORDER_POLICY must be 'clamp' or 'reject'")
        return v
