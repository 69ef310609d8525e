"""The pipeline family's pure parts: which run of a shape is reported, how long a profiled
run is sampled, and where a profiled pool process' samples go."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from memq.bench.pipeline import PROFILE_SECONDS, Run, best, breakdown, profile_seconds, throughputs


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


@given(st.integers(min_value=1, max_value=100_000), st.floats(min_value=0.01, max_value=10_000))
def test_a_profile_covers_the_expected_run_within_its_bounds(messages, throughput):
    seconds = profile_seconds(messages, throughput)
    assert isinstance(seconds, int)
    assert 1 <= seconds <= PROFILE_SECONDS
    # the whole expected run is sampled, unless it is longer than the window
    assert seconds >= min(PROFILE_SECONDS, messages / throughput)
    # and no more than a second beyond it
    assert seconds < max(1, messages / throughput) + 1


def test_a_quick_run_is_sampled_for_its_length_and_a_long_one_for_the_window():
    assert profile_seconds(120, 110.0) == 2  # the quick scale's stream: ~1.1 s
    assert profile_seconds(1500, 110.0) == PROFILE_SECONDS  # the default scale's: ~14 s
