"""HTTP API and keys settings (a group of ``Settings``; variables ``MEMQ_*``)."""

from __future__ import annotations

from pydantic import BaseModel, Field


class ApiSettings(BaseModel):
    """HTTP API and keys."""

    api_host: str = Field(default="127.0.0.1", description="Where `memq api` listens (loopback by default).")
    api_port: int = Field(default=8765, ge=1, le=65535, description="Where `memq api` listens.")
    api_auth: bool = Field(
        default=True, description="Bearer API keys required (`memq keys create`). Off only for trusted networks."
    )
    api_max_body_bytes: int = Field(
        default=8 * 1024 * 1024, ge=1024, description="Largest request body accepted; a larger one is refused with 413."
    )
    api_max_batch: int = Field(default=1000, ge=1, le=100_000, description="Messages one request may add.")
    api_rate_limit_per_second: float = Field(
        default=100.0,
        ge=0,
        description="Requests a second one API key (or, without keys, one tenant) may make on average, held across "
        "API processes through Redis; beyond it a request gets 429 with Retry-After. 0: no limit.",
    )
    api_rate_limit_burst: int = Field(
        default=200, ge=1, description="Requests one API key may make at once before the rate limit applies."
    )
    api_rate_limit_messages_per_second: float = Field(
        default=2000.0,
        ge=0,
        description="Messages a second one API key may add on average (a batch counts each of its messages), held "
        "across API processes through Redis: the request rate alone would let a key send its largest batches as "
        "often as single messages. Beyond it: 429 with Retry-After. 0: no limit.",
    )
    api_rate_limit_messages_burst: int = Field(
        default=5000,
        ge=1,
        description="Messages one API key may add at once before MEMQ_API_RATE_LIMIT_MESSAGES_PER_SECOND applies; "
        "at least MEMQ_API_MAX_BATCH, so the largest batch can pass.",
    )
    api_rate_limit_hold_ms: float = Field(
        default=500.0,
        ge=0,
        lt=1000,
        description="A key that sends again while it is still refused gets its 429 after this long: a client that "
        "ignores Retry-After gains nothing and costs the API a sleeping request, not its CPU. Under a second (the "
        "least Retry-After), so a client that waits as told never meets it. 0: at once.",
    )
    api_concurrency_per_key: int = Field(
        default=2,
        ge=0,
        description="Requests of one API key one API process works on at once while no other key has used the "
        "process in the last second; with others about, this many are shared among the keys present (at least one "
        "each). A key's further requests wait their turn (in arrival order, not refused), so a busy key cannot crowd "
        "the others out of the process. 0: no limit.",
    )
    api_keys_refresh_seconds: float = Field(
        default=5.0, gt=0, description="How often the API reloads the keys (a revoked key stops working within this)."
    )
    activity_retention_days: float = Field(
        default=0.0,
        ge=0,
        description="How long the activity log keeps its entries; `memq beat` deletes older ones hourly. The "
        "entries of forget (they name only a hash) are kept: they are what keeps a forgotten id forgotten. 0: "
        "until the database is.",
    )
    forget_wait_seconds: float = Field(
        default=90.0,
        gt=0,
        description="How long forgetting a conversation waits for a worker draining it to let go "
        "before answering busy.",
    )
