"""Several real workers, one conversation: messages are still processed strictly in
order, one drainer at a time, and each lands in exactly one episode."""

from __future__ import annotations

import random
import time
from datetime import UTC, datetime, timedelta

from invariants import assert_every_message_in_exactly_one_episode
from processes import spawn_worker, stop_process, wait_for_workers

from memq.shared import tasks


def test_two_more_workers_on_one_conversation_keep_order(
    worker, producer, db, settings, tenant, service_env, celery_app
):
    # Small drain budgets make drains hand over to each other constantly.
    extra = {"MEMQ_DRAIN_MAX_MESSAGES": "7", "MEMQ_EMBED_PREFETCH": "3"}
    procs = [spawn_worker(service_env, name, extra) for name in ("wa", "wb")]
    try:
        wait_for_workers(celery_app, {"wa", "wb"})
        conv = "busy"
        t0 = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)
        rng = random.Random(7)
        n = 0

        def drains() -> dict[str, int]:
            stats = celery_app.control.inspect(timeout=2).stats() or {}
            return {name: s.get("total", {}).get(tasks.EVENT_SEGMENTATION, 0) for name, s in stats.items()}

        before = drains()  # the session's worker has drained for earlier tests

        def drainers() -> list[str]:
            return [name for name, count in drains().items() if count > before.get(name, 0)]

        # At least 420 messages, and on until drains have run on two workers or more (what
        # the test is about), whatever the scheduling of a loaded machine: checked, not hoped.
        while n < 420 or n % 60 or len(drainers()) < 2:  # checked at each 60th message
            assert n < 3000, f"drains ran on {drainers()} only"
            size = rng.randint(1, 6)
            batch = []
            for _ in range(min(size, 60 - n % 60)):
                # a 20-minute gap every 60 messages forces time boundaries as well
                ts = t0 + timedelta(seconds=20 * n + 1200 * (n // 60))
                batch.append(
                    {
                        "role": "user" if n % 2 == 0 else "assistant",
                        "content": f"message {n + 1}: ordering check text",
                        "timestamp": ts,
                    }
                )
                n += 1
            producer.add_messages(batch, conversation_id=conv)
            time.sleep(rng.random() * 0.01)  # batches arrive while drains run, not all at once
        total = n
        producer.flush(conv)
        producer.wait_idle(conv, timeout=180)

        assert_every_message_in_exactly_one_episode(db, producer.redis, settings, tenant, conv, total)
        rows = db.execute(
            "SELECT m->>'content', (m->>'seq')::int FROM episodic_memory e, jsonb_array_elements(e.messages) m "
            "WHERE tenant_id = %s ORDER BY e.first_seq, (m->>'seq')::int",
            (tenant,),
        ).fetchall()
        assert [c for c, _ in rows] == [f"message {i}: ordering check text" for i in range(1, total + 1)]

        assert len(drainers()) >= 2
    finally:
        errors = [stop_process(p) for p in procs]
    for err in errors:
        assert "Traceback" not in err, err[-3000:]
