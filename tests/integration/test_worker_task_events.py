"""``MEMQ_TASK_EVENTS``, through a real worker process and Celery's own event stream: off,
the worker sends its heartbeats but no task events, until something asks for them the way
Flower does (``enable_events``); on (the default), it sends them from the start.

The worker consumes a queue of its own, so that no other worker of the test session takes
its tasks, and runs ``sweep_stalled`` with an age nothing reaches (it changes nothing)."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

import cluster_mode
import pytest
from processes import spawn_worker, stop_process
from waiting import wait_until

from memq.shared import tasks

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(cluster_mode.enabled(), reason="broker only (the cluster pass moves the mailbox)"),
]

NOTHING_IS_THAT_OLD = 10**9  # seconds: the sweep re-publishes nothing


class EventStream:
    """Every Celery event on the broker, captured from before the worker starts."""

    def __init__(self, app: Any):
        self._seen: list[dict] = []
        self._changed = threading.Condition()
        self._connection = app.connection_for_read()
        self._receiver = app.events.Receiver(self._connection, handlers={"*": self._on})
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _on(self, event: dict) -> None:
        with self._changed:
            self._seen.append(event)
            self._changed.notify_all()

    def _run(self) -> None:
        consuming = self._receiver.on_consume_ready

        def ready(*args: Any, **kwargs: Any) -> None:
            consuming(*args, **kwargs)
            self._ready.set()

        self._receiver.on_consume_ready = ready
        self._receiver.capture(limit=None, timeout=None, wakeup=False)

    def __enter__(self) -> EventStream:
        self._thread.start()
        assert self._ready.wait(30), "the event receiver did not start consuming"
        return self

    def __exit__(self, *exc: object) -> None:
        self._receiver.should_stop = True  # its loop looks at it at least once a second
        self._thread.join(10)
        self._connection.close()

    def wait(self, found: Callable[[list[dict]], Any], timeout: float, what: str) -> Any:
        deadline = time.monotonic() + timeout
        with self._changed:
            while not (result := found(list(self._seen))):
                left = deadline - time.monotonic()
                if left <= 0:
                    kinds = sorted({e.get("type", "?") for e in self._seen})
                    raise AssertionError(f"no {what} within {timeout} s; event types seen: {kinds}")
                self._changed.wait(left)
            return result

    def snapshot(self) -> list[dict]:
        with self._changed:
            return list(self._seen)


def _of(host: str, kind: str, after: int = 0) -> Callable[[list[dict]], list[dict]]:
    def found(seen: list[dict]) -> list[dict]:
        return [e for e in seen[after:] if e.get("hostname") == host and e.get("type", "").startswith(kind)]

    return found


def _publish_sweep(celery_app: Any, queue: str) -> str:
    """Publish one harmless task to ``queue``; its id."""
    sent = celery_app.send_task(tasks.SWEEP_STALLED, kwargs={"age": NOTHING_IS_THAT_OLD}, queue=queue)
    return str(sent.id)


def _after_a_heartbeat(events: EventStream, host: str, celery_app: Any) -> None:
    """Wait until everything the worker sent before now has arrived: it answers a ping only
    from its event loop, after its task returned, and a heartbeat it sends after that comes
    through the same dispatcher as any task event, so behind it."""
    # its first task may wait for the model to load; the ping itself waits 2 s for a reply
    wait_until(
        lambda: celery_app.control.ping(destination=[host], timeout=2.0),
        120,
        interval=0,
        message=f"{host} did not answer a ping",
    )
    mark = len(events.snapshot())
    events.wait(_of(host, "worker-heartbeat", mark), 30, f"a heartbeat of {host} after its ping")


@pytest.mark.parametrize("task_events", [False, True], ids=["off", "on"])
def test_task_events_setting_and_enable_events(service_env, celery_app, task_events):
    name = f"events{uuid.uuid4().hex[:6]}"
    host = f"{name}@memq-test"
    queue = f"memq.test-events-{name}"
    with EventStream(celery_app) as events:
        worker = spawn_worker(
            service_env, name, {"MEMQ_TASK_EVENTS": str(task_events).lower()}, host="memq-test", queue=queue
        )
        try:
            # Online: its heartbeats (the "worker" group of events) flow whatever the setting.
            events.wait(_of(host, "worker-"), 120, f"an event of worker {host}")
            first = _publish_sweep(celery_app, queue)
            _after_a_heartbeat(events, host, celery_app)
            theirs = _of(host, "task-")(events.snapshot())
            if task_events:
                succeeded = events.wait(_of(host, "task-succeeded"), 60, f"task-succeeded from {host}")
                assert [e["uuid"] for e in succeeded] == [first]
                assert {"task-received", "task-started", "task-succeeded"} <= {e["type"] for e in theirs}
            else:
                assert theirs == [], theirs
                # What Flower does every few seconds: ask for them.
                replies = celery_app.control.enable_events(destination=[host], reply=True, timeout=10.0)
                assert replies and "enabled" in str(replies[0][host]).lower(), replies
                second = _publish_sweep(celery_app, queue)
                succeeded = events.wait(_of(host, "task-succeeded"), 60, f"task-succeeded from {host}")
                assert [e["uuid"] for e in succeeded] == [second]
        finally:
            err = stop_process(worker)
    assert "Traceback" not in err, err[-3000:]
