"""Per-key request rate limits, held across API processes through Redis: each key (or,
without keys, each tenant) may make ``MEMQ_API_RATE_LIMIT_PER_SECOND`` requests a second
on average, ``MEMQ_API_RATE_LIMIT_BURST`` at once; beyond that a request is refused with
429 and ``Retry-After`` naming the limit and its setting. GCRA in one Lua script
(``lua/rate_limit.lua``) on Redis' own clock, so every process shares one timeline.

When Redis cannot be asked, the request goes through (logged): the limit protects the
service, it must not be a second way for it to fail."""

from __future__ import annotations

import asyncio
import json
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog
from redis.exceptions import RedisError

from memq.shared.settings import Settings

log = structlog.get_logger("memq.api")

SCRIPT = (Path(__file__).with_name("lua") / "rate_limit.lua").read_text()


@dataclass(frozen=True)
class Limit:
    per_second: float
    burst: int
    unit: str = "requests"  # what is counted, and the settings naming its rate and burst
    settings: tuple[str, str] = ("MEMQ_API_RATE_LIMIT_PER_SECOND", "MEMQ_API_RATE_LIMIT_BURST")

    @classmethod
    def of(cls, settings: Settings) -> Limit | None:
        if settings.api_rate_limit_per_second <= 0:
            return None
        return cls(settings.api_rate_limit_per_second, settings.api_rate_limit_burst)

    @classmethod
    def of_messages(cls, settings: Settings) -> Limit | None:
        if settings.api_rate_limit_messages_per_second <= 0:
            return None
        names = ("MEMQ_API_RATE_LIMIT_MESSAGES_PER_SECOND", "MEMQ_API_RATE_LIMIT_MESSAGES_BURST")
        return cls(
            settings.api_rate_limit_messages_per_second, settings.api_rate_limit_messages_burst, "messages", names
        )

    @property
    def interval_ms(self) -> float:
        return 1000.0 / self.per_second

    @property
    def tolerance_ms(self) -> float:
        """How far ahead of now the caller's schedule may run: ``burst`` requests at once."""
        return (self.burst - 1) * self.interval_ms

    def refusal(self, wait_ms: float) -> tuple[str, int]:
        """The message of a refused request and its Retry-After (whole seconds, at least 1)."""
        seconds = max(1, math.ceil(wait_ms / 1000))
        rate = f"{self.per_second:g}"
        verb = "make" if self.unit == "requests" else "add"
        return (
            f"rate limit: this key may {verb} {rate} {self.unit} a second ({self.burst} at once; "
            f"{self.settings[0]}, {self.settings[1]}); retry after {seconds} s",
            seconds,
        )


def ask(script: Any, key: str, limit: Limit, units: int = 1) -> float:
    """0 when ``units`` more fit ``key``'s limit now (and they are spent), else the ms until
    they would; 0 too when Redis cannot be asked (logged): the limit protects the service,
    it must not be a second way for it to fail."""
    try:
        reply = script(keys=[key], args=[f"{limit.interval_ms:.3f}", f"{limit.tolerance_ms:.3f}", str(units)])
    except RedisError as exc:
        log.warning("rate_limit_unchecked", error=type(exc).__name__)
        return 0.0
    return float(reply)


class RateLimiter:
    """A refusal is also remembered in the process until it ends: a refused request spends
    nothing of the budget (GCRA), and other processes' requests can only move the caller's
    next chance later, so until then Redis would refuse it too. A flood of refused requests
    then costs the API no Redis round trip each: the rest of the tenants keep their share."""

    REMEMBERED = 10_000  # refusals kept at most; past that the ended ones are dropped

    def __init__(self, client: Any, settings: Settings) -> None:
        self.limit = Limit.of(settings)
        self.prefix = f"{settings.key_prefix}:ratelimit:"
        self._script = client.register_script(SCRIPT)
        self._refused: dict[str, float] = {}  # caller -> monotonic time its refusal ends

    def wait_ms(self, caller: str) -> float:
        """0 when ``caller`` may go on, else how long until it may."""
        if self.limit is None:
            return 0.0
        remembered = self.remembered_ms(caller)
        if remembered > 0:
            return remembered
        now = time.monotonic()
        wait = self._ask(caller)
        if wait > 0:
            if len(self._refused) >= self.REMEMBERED:
                self._refused = {c: t for c, t in self._refused.items() if t > now}
            self._refused[caller] = now + wait / 1000
        return wait

    def remembered_ms(self, caller: str) -> float:
        """How long ``caller``'s refusal still runs, from this process' memory alone (0: none
        remembered; then only Redis can tell)."""
        until = self._refused.get(caller)
        return 0.0 if until is None else max(0.0, (until - time.monotonic()) * 1000)

    def _ask(self, caller: str) -> float:
        assert self.limit is not None
        return ask(self._script, self.prefix + caller, self.limit)


class MessageRate:
    """The messages a key adds through the API, each counted (a batch of 1,000 costs what
    1,000 single messages do): ``MEMQ_API_RATE_LIMIT_MESSAGES_PER_SECOND`` on average,
    ``_BURST`` at once, on a budget of its own beside the request rate. Nothing is kept in
    the process: a smaller batch may fit where a larger one was refused."""

    def __init__(self, client: Any, settings: Settings) -> None:
        self.limit = Limit.of_messages(settings)
        self.prefix = f"{settings.key_prefix}:ratelimit:messages:"
        self._script = client.register_script(SCRIPT)

    def refusal(self, caller: str, messages: int) -> tuple[str, int] | None:
        """(what to say, Retry-After seconds) when ``messages`` more do not fit ``caller``'s
        budget now (nothing spent), else None (they are spent)."""
        if self.limit is None or messages <= 0:
            return None
        wait = ask(self._script, self.prefix + caller, self.limit, messages)
        return self.limit.refusal(wait) if wait > 0 else None


class RefusalGate:
    """ASGI middleware: a request whose key is still refused (``RateLimiter.remembered_ms``)
    is answered 429 before routing, validation or reading its body, with the same answer the
    route's check gives (``memq.api.auth.caller``). A flooding key's surplus then costs the
    API next to nothing, and its neighbours keep their share of the CPU. Only a refusal
    already decided is short-cut here: every other request goes to the route's check.

    Such a request came back before the Retry-After it was told (at least a second), so its
    answer is held ``MEMQ_API_RATE_LIMIT_HOLD_MS`` first: a client that sends again at once
    then sends a few times a second, not thousands, and waits in a sleeping coroutine that
    costs the process nothing. A client that waits as told is never held."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and (refused := self._refused(scope)) is not None:
            message, seconds, hold = refused
            await asyncio.sleep(hold)
            body = json.dumps({"error": {"type": "rate_limited", "message": message, "field": None}}).encode()
            headers = [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"retry-after", str(seconds).encode()),
            ]
            await send({"type": "http.response.start", "status": 429, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, send)

    @staticmethod
    def _refused(scope: Any) -> tuple[str, int, float] | None:
        from memq.shared.auth.api_keys import header_key_id

        services = getattr(scope["app"].state, "services", None)
        if services is None or not services.settings.api_auth or services.rate_limiter.limit is None:
            return None
        authorization = next((v for k, v in scope["headers"] if k == b"authorization"), None)
        if authorization is None or not scope["path"].startswith(("/v1/", "/mcp")):
            return None
        identity = header_key_id(authorization.decode("latin-1"))
        if identity is None:
            return None
        wait = services.rate_limiter.remembered_ms(f"key:{identity}")
        if wait <= 0:
            return None
        return (*services.rate_limiter.limit.refusal(wait), services.settings.api_rate_limit_hold_ms / 1000)
