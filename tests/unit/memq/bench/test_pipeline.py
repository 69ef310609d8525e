"""The pipeline family's pure parts: which run of a shape is reported, and where a
profiled pool process' samples go."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from memq.bench.pipeline import Run, best, breakdown, throughputs


def _run(seconds: float, tenant: str = "t") -> Run:
    return Run(
        tenant=tenant,
        workers=2,
        messages=1500,
        seconds=seconds,
        redis_commands=0,
        redis_cpu_seconds=0.0,
        redis_input_bytes=0,
        cpu_seconds={},
        pg_transactions=None,
        pg_rows_written=None,
        pg_wal_bytes=None,
        episodes=0,
        profile={},
        memory={},
        idle_conversation_bytes=0.0,
        idle_overlap_bytes=0.0,
        idle_ttl_days=0.0,
        keys_without_ttl=0,
    )


@given(st.lists(st.floats(min_value=0.5, max_value=600), min_size=1, max_size=5))
def test_the_best_run_is_the_fastest_and_every_run_is_reported_in_order(seconds):
    runs = [_run(s, f"t{i}") for i, s in enumerate(seconds)]
    chosen = best(runs)
    assert chosen.seconds == min(seconds)
    assert chosen in runs
    assert throughputs(runs) == [round(1500 / s, 1) for s in seconds]


def test_a_profile_is_shared_out_by_the_innermost_known_frame():
    collapsed = "\n".join(
        [
            "main (celery);drain (memq/worker/segmentation/job.py:1);forward (torch/nn/linear.py:2) 6",
            "main (celery);store (memq/shared/db/episodes.py:3);execute (psycopg/cursor.py:4) 2",
            "main (celery);drain (memq/worker/segmentation/job.py:1);recv (redis/connection.py:5) 1",
            "main (celery);advance (memq/worker/segmentation/segmenter.py:6) 1",
            "not a sample line",
        ]
    )
    shares = breakdown(collapsed)
    assert shares == {"embedding model": 0.6, "PostgreSQL": 0.2, "waiting": 0.1, "segmentation policy": 0.1}
