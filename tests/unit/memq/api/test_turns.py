"""Turns (memq.api.fair_share): at most ``per_key`` requests of one key at once, the rest in
arrival order; other keys never wait on it; with other keys about, ``per_key`` is shared
among them; a request out of its turn (waiting) gives it to the next; nothing is left
behind by a request that ends, however it ends."""

from __future__ import annotations

import asyncio

import pytest

from memq.api.fair_share import Turns


async def _hold(turns: Turns, key: str, log: list[str], name: str, release: asyncio.Event) -> None:
    async with turns.turn(key):
        log.append(name)
        await release.wait()


def test_a_key_works_at_most_per_key_requests_at_once_and_the_rest_in_order():
    async def main() -> None:
        turns, release = Turns(per_key=2), asyncio.Event()
        log: list[str] = []
        tasks = [asyncio.create_task(_hold(turns, "a", log, f"a{i}", release)) for i in range(5)]
        other = asyncio.create_task(_hold(turns, "b", log, "b0", release))
        await asyncio.sleep(0)  # every task has run up to its turn or its wait
        await asyncio.sleep(0)
        assert log == ["a0", "a1", "b0"]  # key a's third waits; key b does not wait on a
        assert turns.waiting("a") == 5 and turns.waiting("b") == 1
        release.set()
        await asyncio.gather(*tasks, other)
        assert log == ["a0", "a1", "b0", "a2", "a3", "a4"]  # arrival order
        assert turns.waiting("a") == 0 and not turns._lines  # a line lives only while used

    asyncio.run(main())


def test_a_request_away_from_its_turn_lets_the_next_in_and_rejoins_the_line():
    async def main() -> None:
        turns, release = Turns(per_key=1), asyncio.Event()
        log: list[str] = []
        back = asyncio.Event()

        async def waiter() -> None:
            async with turns.turn("a") as turn:
                assert turn is not None
                log.append("w in")
                async with turn.away():
                    await back.wait()
                log.append("w back")

        first = asyncio.create_task(waiter())
        await asyncio.sleep(0)
        second = asyncio.create_task(_hold(turns, "a", log, "next", release))
        await asyncio.sleep(0)
        assert log == ["w in", "next"]  # the waiter stepped out: the next one works
        back.set()
        await asyncio.sleep(0)
        assert log == ["w in", "next"]  # back in line behind the one working
        release.set()
        await asyncio.gather(first, second)
        assert log == ["w in", "next", "w back"] and not turns._lines

    asyncio.run(main())


def test_a_request_cancelled_in_line_or_in_its_turn_leaves_no_turn_taken():
    async def main() -> None:
        turns, release = Turns(per_key=1), asyncio.Event()
        log: list[str] = []
        holder = asyncio.create_task(_hold(turns, "a", log, "holder", release))
        await asyncio.sleep(0)
        queued = asyncio.create_task(_hold(turns, "a", log, "queued", release))
        await asyncio.sleep(0)
        queued.cancel()  # a client gone while in line
        holder.cancel()  # and one gone while working
        for task in (queued, holder):
            with pytest.raises(asyncio.CancelledError):
                await task
        assert not turns._lines
        release.set()
        await asyncio.wait_for(_hold(turns, "a", log, "after", release), 1)  # the turn is free
        assert log == ["holder", "after"]

    asyncio.run(main())


def test_no_limit_when_zero():
    async def main() -> None:
        turns, release = Turns(per_key=0), asyncio.Event()
        log: list[str] = []
        tasks = [asyncio.create_task(_hold(turns, "a", log, f"a{i}", release)) for i in range(20)]
        await asyncio.sleep(0)
        assert len(log) == 20
        release.set()
        await asyncio.gather(*tasks)

    asyncio.run(main())


def test_with_another_key_about_a_busy_key_shares_its_turns():
    """Alone, a key works ``per_key`` at once; once another key has come within
    COMPANY_SECONDS, the keys present share them (one each of two here), and when the
    other has not come for longer, the busy key has them all again."""

    async def main() -> None:
        now = [0.0]
        turns, release = Turns(per_key=2, clock=lambda: now[0]), asyncio.Event()
        log: list[str] = []
        a0 = asyncio.create_task(_hold(turns, "a", log, "a0", release))
        await asyncio.sleep(0)
        b_release = asyncio.Event()
        b0 = asyncio.create_task(_hold(turns, "b", log, "b0", b_release))  # b comes
        await asyncio.sleep(0)
        b_release.set()
        await b0  # and goes; it was about less than a second ago
        more = [asyncio.create_task(_hold(turns, "a", log, f"a{i}", release)) for i in (1, 2)]
        await asyncio.sleep(0)
        assert log == ["a0", "b0"] and turns.allowed() == 1  # a's second waits: b is about
        now[0] = 1.5  # b has not come for longer than COMPANY_SECONDS
        c = asyncio.create_task(_hold(turns, "a", log, "a3", release))  # a's next request sees it
        await asyncio.sleep(0)
        assert turns.allowed() == 2
        release.set()
        await asyncio.gather(a0, *more, c)
        assert log == ["a0", "b0", "a1", "a2", "a3"] and not turns._lines

    asyncio.run(main())


def test_a_waiter_cancelled_as_its_turn_came_passes_the_turn_on():
    async def main() -> None:
        turns, release = Turns(per_key=1), asyncio.Event()
        log: list[str] = []
        holding = turns.turn("a")
        await holding.__aenter__()
        unlucky = asyncio.create_task(_hold(turns, "a", log, "unlucky", release))
        last = asyncio.create_task(_hold(turns, "a", log, "last", release))
        await asyncio.sleep(0)  # both in line
        await holding.__aexit__(None, None, None)  # the turn goes to the unlucky one (no yield here)
        unlucky.cancel()  # which is cancelled before it ever runs
        with pytest.raises(asyncio.CancelledError):
            await unlucky
        release.set()
        await asyncio.wait_for(last, 1)
        assert log == ["last"] and not turns._lines

    asyncio.run(main())
