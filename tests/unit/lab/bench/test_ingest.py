"""The ingest benchmark's pure parts: the messages it sends, how they are spread over
conversations and clients, the scratch database's URL, and which queued tasks are the
run's to remove."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime, timedelta

import pytest

from memq.producer.validation import validate_message
from memq.shared.settings import Settings
from memq_lab.bench.ingest import (
    MAX_REPEATS,
    REPEATS,
    for_clients,
    on_database,
    percentile,
    plan_batches,
    repeats,
    request_body,
    task_tenant,
)

START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
TEXTS = ("hello there", "how are you?", "fine, thanks")


def test_batches_go_round_robin_over_the_conversations_each_in_order():
    plan = plan_batches(TEXTS, 25, 10, 2, "t", START)
    assert [(conv, len(messages)) for conv, messages in plan] == [("t-0", 10), ("t-1", 10), ("t-0", 5)]
    first = [m for conv, messages in plan if conv == "t-0" for m in messages]
    assert [m["message_id"] for m in first] == [f"t-0-{i}" for i in range(15)]
    assert [m["role"] for m in first[:4]] == ["user", "assistant", "user", "assistant"]
    stamps = [m["timestamp"] for m in first]
    assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps)
    assert [m["content"] for _, messages in plan for m in messages][:4] == [*TEXTS, TEXTS[0]]
    assert plan[1][1][0]["timestamp"] == START + timedelta(seconds=10)


def test_every_message_is_valid_for_the_producer():
    settings = Settings()
    for conv, messages in plan_batches(TEXTS, 30, 7, 3, "bench-1", START):
        for m in messages:
            validate_message({**m, "conversation_id": conv}, settings, datetime.now(UTC))


def test_a_batch_of_one_and_bad_arguments():
    plan = plan_batches(TEXTS, 3, 1, 20, "t", START)
    assert [conv for conv, _ in plan] == ["t-0", "t-1", "t-2"]
    with pytest.raises(ValueError):
        plan_batches((), 3, 1, 1, "t", START)
    with pytest.raises(ValueError):
        plan_batches(TEXTS, 3, 0, 1, "t", START)


def test_each_client_sends_its_own_conversation():
    plan = plan_batches(TEXTS, 70, 10, 3, "h", START)
    parts = for_clients(plan, 3)
    assert [len(p) for p in parts] == [3, 2, 2]
    assert all({conv for conv, _ in part} == {f"h-{c}"} for c, part in enumerate(parts))
    assert sum(len(m) for part in parts for _, m in part) == 70


def test_request_body_is_the_apis_json():
    messages = plan_batches(TEXTS, 2, 2, 1, "c", START)[0][1]
    body = json.loads(request_body(messages))
    assert body["messages"][0] == {
        "role": "user",
        "content": "hello there",
        "timestamp": "2026-01-05T09:00:00+00:00",
        "message_id": "c-0-0",
    }
    assert len(body["messages"]) == 2


def test_small_runs_are_repeated_more():
    assert repeats(50_000) == REPEATS
    assert repeats(20_000) == 3
    assert repeats(7_000) == 8
    assert repeats(300) == MAX_REPEATS


def test_percentile_is_nearest_rank():
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 50) == 50.0
    assert percentile(values, 99) == 99.0
    assert percentile([3.0], 99) == 3.0
    with pytest.raises(ValueError):
        percentile([], 50)


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("redis://127.0.0.1:6399/0", "redis://127.0.0.1:6399/14"),
        ("redis://127.0.0.1:6399", "redis://127.0.0.1:6399/14"),
        ("rediss://u:p@host:6380/3?ssl_cert_reqs=none", "rediss://u:p@host:6380/14?ssl_cert_reqs=none"),
        ("unix:///tmp/redis.sock?db=2", "unix:///tmp/redis.sock?db=14"),
    ],
)
def test_the_scratch_database_url(url, expected):
    assert on_database(url, 14) == expected


def _queued(task: str, args: list[str]) -> str:
    """A task as kombu's Redis transport keeps it in a queue list."""
    body = base64.b64encode(json.dumps([args, {}, {"callbacks": None}]).encode()).decode()
    return json.dumps(
        {
            "body": body,
            "content-encoding": "utf-8",
            "content-type": "application/json",
            "headers": {"lang": "py", "task": task, "argsrepr": repr(args)},
            "properties": {"body_encoding": "base64", "delivery_info": {"routing_key": "memq.segmentation"}},
        }
    )


def test_the_tenant_of_a_queued_task():
    assert task_tenant(_queued("memq.event_segmentation", ["bench-1-ingest", "c-1"])) == "bench-1-ingest"
    assert task_tenant(_queued("memq.event_segmentation", ["bench-1-ingest", "c-1"]).encode()) == "bench-1-ingest"
    assert task_tenant(_queued("other.task", ["bench-1-ingest"])) is None
    assert task_tenant(_queued("memq.sweep_stalled", [])) is None
    assert task_tenant("not json") is None
    assert task_tenant(json.dumps({"body": "x"})) is None
