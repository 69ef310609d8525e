"""A fair share of one API process: each key has at most ``MEMQ_API_CONCURRENCY_PER_KEY``
requests worked on at once, shared among the keys present when others have come within the
last second (at least one each); its further requests wait their turn, in arrival order.
They are not refused (the rate limit does that, across processes): they queue at no CPU cost.

Why: the routes' work runs in the process' thread pool, under one interpreter lock. A key
sending many requests at once would hold as many threads, and every other key's request
would share the lock with all of them: its latency grows with the busiest neighbour's
concurrency. With turns, another key's request shares the process with one of the busy
key's. One key alone loses nothing that matters: it has all of them, and past two threads
one process' work does not go faster (the lock), it only queues inside the interpreter
instead of here.

A turn is held while the route works (its dependencies, its body's validation, its
function), not while a body is uploaded or a response streamed, and a route that waits
(``flush`` with ``wait``) steps out of its turn while it sleeps (``Turn.away``).
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict, deque
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import ClassVar

from fastapi import Request

from memq.shared.auth.api_keys import header_key_id


class Turn:
    """One request's place among its key's: held or given back (while it waits)."""

    def __init__(self, turns: Turns, key: str) -> None:
        self._turns = turns
        self._key = key
        self.holding = False

    async def take(self) -> None:
        await self._turns._take(self._key)
        self.holding = True

    def give_back(self) -> None:
        if self.holding:
            self.holding = False
            self._turns._give_back(self._key)

    @asynccontextmanager
    async def away(self) -> AsyncIterator[None]:
        """Out of the turn for a wait that costs the process nothing (a sleep between
        looks); the turn is taken again, in line with the key's others, after it."""
        self.give_back()
        try:
            yield
        finally:
            await self.take()


@dataclass
class _Line:
    working: int = 0
    users: int = 0  # working or in line
    waiters: deque[asyncio.Future[None]] = field(default_factory=deque)


@dataclass
class Turns:
    """The lines of one process, one per key that has a request in it (0: no limit).

    A key alone in the process (no other key's request in the last ``COMPANY_SECONDS``)
    works ``per_key`` requests at once; with others about, ``per_key`` is shared among the
    keys present (at least one each). Another key's request then shares the interpreter
    with one of a busy key's, not ``per_key`` of them: measured with the fair-share bench
    (a flood at its rate limit beside a steady tenant), two turns each put the steady
    tenant's p99 at 2.0-2.7x its unloaded value, one at 1.5-1.7x; a key alone keeps two,
    which its throughput needs (one cost it a quarter of ``ingest_http``)."""

    per_key: int
    clock: Callable[[], float] = time.monotonic
    _lines: dict[str, _Line] = field(default_factory=dict)
    _seen: OrderedDict[str, float] = field(default_factory=OrderedDict)  # key -> last request, oldest first

    COMPANY_SECONDS: ClassVar[float] = 1.0

    @asynccontextmanager
    async def turn(self, key: str) -> AsyncIterator[Turn | None]:
        if self.per_key <= 0:
            yield None
            return
        line = self._lines.get(key)
        if line is None:
            line = self._lines[key] = _Line()
        line.users += 1
        self._see(key)
        turn = Turn(self, key)
        try:
            await turn.take()
            yield turn
        finally:
            turn.give_back()
            line.users -= 1
            if line.users == 0:  # a key's line lives only while it has requests
                del self._lines[key]

    def waiting(self, key: str) -> int:
        """Requests of ``key`` in this process, working or in line (0 when none)."""
        line = self._lines.get(key)
        return 0 if line is None else line.users

    def allowed(self) -> int:
        """Requests a key may work on at once now: ``per_key`` shared among the keys present."""
        present = max(1, len(self._seen))
        return max(1, self.per_key // present)

    def _see(self, key: str) -> None:
        now = self.clock()
        self._seen[key] = now
        self._seen.move_to_end(key)
        while self._seen:
            oldest, at = next(iter(self._seen.items()))
            if now - at <= self.COMPANY_SECONDS:
                break
            del self._seen[oldest]

    async def _take(self, key: str) -> None:
        line = self._lines[key]
        if not line.waiters and line.working < self.allowed():
            line.working += 1
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        line.waiters.append(waiter)
        try:
            await waiter  # given the turn by _give_back, which counted it as working
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():  # given, then cancelled: pass it on
                self._give_back(key)
            elif waiter in line.waiters:  # (a give-back may have dropped it already)
                line.waiters.remove(waiter)
            raise

    def _give_back(self, key: str) -> None:
        line = self._lines[key]
        line.working -= 1
        allowed = self.allowed()
        while line.waiters and line.working < allowed:
            waiter = line.waiters.popleft()
            if not waiter.done():
                line.working += 1
                waiter.set_result(None)


async def take_turn(request: Request) -> AsyncIterator[None]:
    """The routers' dependency (``scope="function"``: held until the route's function
    returns, not while its response is sent). The turn is on ``request.state.memq_turn``
    for a route that steps out of it while it waits."""
    services = request.app.state.services
    key = header_key_id(request.headers.get("authorization")) if services.settings.api_auth else None
    if key is None:  # no keys: one trusted tenant, nobody to share with (a malformed key: a 401, no work)
        yield
        return
    async with services.turns.turn(key) as turn:
        request.state.memq_turn = turn
        yield


@asynccontextmanager
async def away(request: Request) -> AsyncIterator[None]:
    """Out of the request's turn while it waits (see ``Turn.away``)."""
    turn = getattr(request.state, "memq_turn", None)
    if turn is None:
        yield
        return
    async with turn.away():
        yield
