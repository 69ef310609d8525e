"""A fair share: one tenant floods the HTTP API while another goes on as usual, and the
other's latency is held against its own unloaded value (target: p99 within 2x).

The API runs as ``memq api`` does, with the settings' defences: per-key rate limits
(``MEMQ_API_RATE_LIMIT_PER_SECOND`` / ``_BURST``; beyond them a 429 before any work, held
``MEMQ_API_RATE_LIMIT_HOLD_MS`` for a client that did not wait) and turns
(``MEMQ_API_CONCURRENCY_PER_KEY``, shared among the keys present: with the steady tenant
about, the flood's accepted requests are worked on one at a time). The flood comes from a process of its own
(clients that ignore Retry-After and send again at once); the steady tenant sends one small
batch at a fixed rate from this process, first alone (unloaded), then during the flood.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import time
from datetime import UTC, datetime
from typing import Any

from memq_lab.bench.context import BenchContext
from memq_lab.bench.ingest import api_server, cleanup, percentile, scratch_settings
from memq_lab.bench.measurement import Measurement

TARGET = 2.0  # the steady tenant's p99 under the flood, at most this times its unloaded p99
PATH = "/v1/conversations/{conversation_id}/messages"
STEADY_RATE = 25.0  # requests a second of the steady tenant
FLOOD_CLIENTS = 8


def _body(tag: str, i: int, size: int) -> dict[str, Any]:
    now = datetime.now(UTC).isoformat()
    return {"messages": [{"role": "user", "content": f"{tag} message {i}.{k}", "timestamp": now} for k in range(size)]}


async def _steady(url: str, key: str, seconds: float, tag: str) -> list[float]:
    """One request of 3 messages every 1/STEADY_RATE s (a fixed schedule: a slow answer does
    not delay the next one's start beyond its own), each one's latency in ms."""
    import httpx

    latencies: list[float] = []
    headers = {"authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=30) as client:
        await client.get("/healthz")

        async def one(i: int) -> None:
            t0 = time.perf_counter()
            answer = await client.post(PATH.format(conversation_id=f"{tag}-{i % 4}"), json=_body(tag, i, 3))
            latencies.append((time.perf_counter() - t0) * 1000)
            if answer.status_code != 202:
                raise RuntimeError(f"the steady tenant was refused: {answer.status_code} {answer.text[:200]}")

        pending = []
        start = time.perf_counter()
        for i in range(int(seconds * STEADY_RATE)):
            await asyncio.sleep(max(0.0, start + i / STEADY_RATE - time.perf_counter()))
            pending.append(asyncio.create_task(one(i)))
        await asyncio.gather(*pending)
    return latencies


def _flood(url: str, key: str, seconds: float, counts: Any) -> None:
    """FLOOD_CLIENTS clients sending batches of 10 as fast as answers come, Retry-After ignored.

    At the lowest CPU priority: the flood stands for clients on other machines, whose own
    CPU is theirs; on this machine's two cores its event loop would otherwise take a core
    from the server under test. It still sends each request the moment the last is
    answered, so the server sees the flood at full strength."""
    import os

    import httpx

    os.nice(19)

    async def client_loop(n: int) -> tuple[int, int]:
        accepted = refused = 0
        headers = {"authorization": f"Bearer {key}"}
        async with httpx.AsyncClient(base_url=url, headers=headers, timeout=30) as client:
            deadline = time.perf_counter() + seconds
            i = 0
            while time.perf_counter() < deadline:
                answer = await client.post(PATH.format(conversation_id=f"flood-{n}"), json=_body("flood", i, 10))
                i += 1
                if answer.status_code == 202:
                    accepted += 1
                else:
                    refused += 1
        return accepted, refused

    async def main() -> list[tuple[int, int]]:
        return await asyncio.gather(*(client_loop(n) for n in range(FLOOD_CLIENTS)))

    done = asyncio.run(main())
    counts[0], counts[1] = sum(a for a, _ in done), sum(r for _, r in done)


def run(ctx: BenchContext) -> list[Measurement]:
    from memq.shared.connections import pg_owner_connect
    from memq.shared.db.api_keys import create_key

    settings = scratch_settings(ctx)
    steady_tenant, flood_tenant = ctx.tenant("fair-steady"), ctx.tenant("fair-flood")
    seconds = 6.0 if ctx.scale.name == "quick" else 20.0
    key_ids: list[str] = []
    with pg_owner_connect(ctx.settings, autocommit=True) as conn:
        steady, _ = create_key(conn, steady_tenant, name="memq bench fair share")
        flood, _ = create_key(conn, flood_tenant, name="memq bench fair share flood")
    key_ids = [steady.id, flood.id]
    try:
        with api_server(ctx, settings, rate_limited=True) as (url, _):
            asyncio.run(_steady(url, steady.key, 1.0, "warm"))
            alone = asyncio.run(_steady(url, steady.key, seconds, "alone"))
            counts = multiprocessing.get_context("spawn").Array("q", 2)
            flooder = multiprocessing.get_context("spawn").Process(
                target=_flood, args=(url, flood.key, seconds + 2.0, counts)
            )
            flooder.start()
            time.sleep(1.0)  # the flood at full strength before the clock
            loaded = asyncio.run(_steady(url, steady.key, seconds, "flooded"))
            flooder.join(60)
            if flooder.exitcode != 0:  # a flood that never ran would make any figure look fair
                raise RuntimeError(f"the flooding process failed (exit code {flooder.exitcode}): see its traceback")
    finally:
        for tenant, key_id in ((steady_tenant, key_ids[0]), (flood_tenant, key_ids[1])):
            cleanup(ctx, settings, tenant, key_id)
    accepted, refused = counts[0], counts[1]
    p50, p99 = percentile(loaded, 50), percentile(loaded, 99)
    base50, base99 = percentile(alone, 50), percentile(alone, 99)
    ctx.console.print(
        f"  fair share: the steady tenant's p50 {base50:.1f} -> {p50:.1f} ms, p99 {base99:.1f} -> {p99:.1f} ms "
        f"while another tenant flooded ({accepted} requests taken, {refused} refused with 429)"
    )
    return [
        Measurement(
            "fair_share_p99",
            p99,
            "ms",
            floor=base99,
            higher_is_better=False,
            target=TARGET,
            params={
                "steady_rate": STEADY_RATE,
                "seconds": seconds,
                "p50_ms": round(p50, 2),
                "unloaded_p50_ms": round(base50, 2),
                "flood_clients": FLOOD_CLIENTS,
                "flood_taken": accepted,
                "flood_refused": refused,
                "rate_limit_per_second": settings.api_rate_limit_per_second,
                "rate_limit_burst": settings.api_rate_limit_burst,
                "rate_limit_hold_ms": settings.api_rate_limit_hold_ms,
                "concurrency_per_key": settings.api_concurrency_per_key,
            },
        )
    ]
