"""``memq up``: the whole fleet on one machine (API, two workers, beat, Flower) does the work
and one Ctrl-C stops every process it started."""

from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import sys
import threading
import urllib.request

import cluster_mode
import pytest
from invariants import assert_every_message_in_exactly_one_episode
from processes import wait_for_workers

from memq_lab.testing.tcp_proxy import free_port

pytestmark = [
    pytest.mark.integration,
    pytest.mark.timeout(600),
    pytest.mark.skipif(
        cluster_mode.enabled(), reason="the fleet's supervision does not depend on the mailbox topology"
    ),
]


def _lines(stream) -> queue.Queue[str | None]:
    q: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:
        for line in stream:
            q.put(line.rstrip("\n"))
        q.put(None)

    threading.Thread(target=pump, daemon=True).start()
    return q


def _until(q: queue.Queue[str | None], pattern: str, seen: list[str], timeout: float) -> str:
    while True:
        line = q.get(timeout=timeout)
        assert line is not None, "memq up ended early:\n" + "\n".join(seen[-40:])
        seen.append(line)
        if re.search(pattern, line):
            return line


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_the_fleet_works_and_one_ctrl_c_stops_it_all(service_env, celery_app, producer, db, settings, tenant):
    api_port, flower_port = free_port(), free_port()
    env = {**os.environ, **service_env, "MEMQ_API_AUTH": "false", "PYTHONUNBUFFERED": "1"}
    ports = ["--api-port", str(api_port), "--flower-port", str(flower_port)]
    up = subprocess.Popen(
        [sys.executable, "-m", "memq", "up", "--workers", "2", "--grace", "60", *ports],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    seen: list[str] = []
    try:
        q = _lines(up.stdout)
        ready = _until(q, r"^ready:", seen, timeout=300)
        assert f"api http://127.0.0.1:{api_port}" in ready and f"flower http://127.0.0.1:{flower_port}" in ready
        pids = [int(m.group(1)) for line in seen if (m := re.search(r"^started .* pid (\d+)", line))]
        assert len(pids) == 5  # api, two workers, beat, flower

        wait_for_workers(celery_app, {"w1", "w2"})
        with urllib.request.urlopen(f"http://127.0.0.1:{api_port}/readyz", timeout=10) as r:
            assert r.status == 200
        with urllib.request.urlopen(f"http://127.0.0.1:{flower_port}/healthcheck", timeout=10) as r:
            assert r.read() == b"OK"

        # The fleet's own workers do the work (this test runs no worker of its own).
        texts = ["Can you book the 9:40 train to Lyon?", "Booked: coach 7, seat 42.", "Thanks, and a taxi at 8?"]
        producer.add_messages(
            [
                {"conversation_id": "fleet", "role": "user" if i % 2 == 0 else "assistant", "content": t}
                for i, t in enumerate(texts)
            ]
        )
        assert producer.flush("fleet")
        producer.wait_idle("fleet", timeout=180)
        assert_every_message_in_exactly_one_episode(db, producer.redis, settings, tenant, "fleet", len(texts))

        up.send_signal(signal.SIGINT)  # what one Ctrl-C in the terminal sends memq up
        assert up.wait(timeout=120) == 0, "\n".join(seen[-40:])
        _until(q, r"^stopped$", seen, timeout=10)
        assert not [pid for pid in pids if _alive(pid)], "a child of memq up outlived it"
    finally:
        if up.poll() is None:
            up.kill()
            up.wait()
