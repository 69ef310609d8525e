"""A fair share of one API process: each key has at most ``MEMQ_API_CONCURRENCY_PER_KEY``
requests worked on at once; its further requests wait their turn, in arrival order. They are
not refused (the rate limit does that, across processes): they queue at no CPU cost.

Why: the routes' work runs in the process' thread pool, under one interpreter lock. A key
sending many requests at once would hold as many threads, and every other key's request
would share the lock with all of them: its latency grows with the busiest neighbour's
concurrency. With turns, another key's request shares the process with at most this many
of the busy key's. One key alone loses nothing that matters: past two threads, one process'
work does not go faster (the lock), it only queues inside the interpreter instead of here.

A turn is held while the route works (its dependencies, its body's validation, its
function), not while a body is uploaded or a response streamed, and a route that waits
(``flush`` with ``wait``) steps out of its turn while it sleeps (``Turn.away``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from fastapi import Request

from memq.shared.auth.api_keys import header_key_id


class Turn:
    """One request's place among its key's: held or given back (while it waits)."""

    def __init__(self, slots: asyncio.Semaphore) -> None:
        self._slots = slots
        self.holding = False

    async def take(self) -> None:
        await self._slots.acquire()
        self.holding = True

    def give_back(self) -> None:
        if self.holding:
            self.holding = False
            self._slots.release()

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
    slots: asyncio.Semaphore
    users: int = 0


@dataclass
class Turns:
    """The lines of one process, one per key that has a request in it (0: no limit)."""

    per_key: int
    _lines: dict[str, _Line] = field(default_factory=dict)

    @asynccontextmanager
    async def turn(self, key: str) -> AsyncIterator[Turn | None]:
        if self.per_key <= 0:
            yield None
            return
        line = self._lines.get(key)
        if line is None:
            line = self._lines[key] = _Line(asyncio.Semaphore(self.per_key))
        line.users += 1
        turn = Turn(line.slots)
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
