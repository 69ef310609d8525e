"""The pipeline family's pure parts: which run of a shape is reported, which runs a worker
shape gets and at what rate a paced one goes, and where a profiled pool process' samples go."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memq_lab.bench.pipeline import (
    BACKLOG,
    LIVE,
    PROFILED,
    Run,
    best,
    breakdown,
    floor_drift,
    pace_rate,
    shape_kinds,
    throughputs,
)


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
            "main (celery);drain (memq/worker/segmentation/job.py:1);forward (torch/nn/linear.py:2) 4",
            # the model's own forward pass calls torch's C operators: no torch frame under it
            "main (celery);embed (memq/shared/embeddings.py:7);_forward (memq/shared/minilm.py:8) 2",
            "main (celery);store (memq/shared/db/episodes.py:3);execute (psycopg/cursor.py:4) 2",
            "main (celery);drain (memq/worker/segmentation/job.py:1);recv (redis/connection.py:5) 1",
            "main (celery);advance (memq/worker/segmentation/segmenter.py:6) 1",
            "not a sample line",
        ]
    )
    shares = breakdown(collapsed)
    assert shares == {"embedding model": 0.6, "PostgreSQL": 0.2, "waiting": 0.1, "segmentation policy": 0.1}


@given(st.integers(min_value=1, max_value=5), st.booleans())
def test_a_shape_ends_on_its_timed_runs_and_only_the_default_one_is_profiled_and_paced(repeats, default):
    kinds = shape_kinds(repeats, default=default)
    assert [k for k in kinds if k.timed] == [BACKLOG] * repeats
    # the last run reads PostgreSQL's counters once the worker stops: a timed backlog's
    assert kinds[-repeats:] == [BACKLOG] * repeats
    assert (PROFILED in kinds, LIVE in kinds) == (default, default)
    if default:  # live traffic is paced on a run before it on the same worker
        assert kinds.index(PROFILED) < kinds.index(LIVE)


@given(st.lists(st.floats(min_value=0.5, max_value=600), min_size=1, max_size=5))
def test_live_traffic_goes_at_half_the_fastest_run_before_it(seconds):
    before = [_run(s) for s in seconds]
    assert pace_rate(LIVE, before) == pytest.approx(0.5 * 1500 / min(seconds))
    assert pace_rate(BACKLOG, before) is None
    assert pace_rate(PROFILED, before) is None


def test_a_paced_run_first_on_its_worker_is_refused():
    with pytest.raises(ValueError, match="follows a run"):
        pace_rate(LIVE, [])


@given(st.floats(min_value=1, max_value=1e4), st.floats(min_value=1, max_value=1e4))
def test_the_floors_drift_is_symmetric_and_a_share_of_the_higher(before, after):
    drift = floor_drift(before, after)
    assert 0 <= drift < 1
    assert drift == floor_drift(after, before)
    assert drift == pytest.approx(1 - min(before, after) / max(before, after))


def test_a_floor_measured_at_203_then_123_moved_by_two_fifths():
    assert floor_drift(203.0, 123.0) == pytest.approx(0.394, abs=1e-3)
    assert floor_drift(150.0, 150.0) == 0
