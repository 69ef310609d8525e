"""Push LoCoMo conversations through the real producer to real Celery workers and wait
until every turn is in an episode. Speaker A is sent as ``user``, speaker B as
``assistant``, each with its name in ``metadata.name`` (memq shows names, not roles);
message ids are ``<sample>-<dia id>`` so a repeated replay adds nothing."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass

from memq.evaluation.locomo.data import LocomoConversation


@dataclass
class ReplayTimes:
    enqueue_s: float
    process_s: float  # segmentation and episode creation, until every conversation is idle


def messages_of(conv: LocomoConversation) -> list[dict]:
    a, _ = conv.speakers
    return [
        {
            "conversation_id": conv.sample_id,
            "role": "user" if t.speaker == a else "assistant",
            "content": t.text,
            "timestamp": t.at.isoformat(),
            "message_id": f"{conv.sample_id}-{t.dia_id}",
            "metadata": {"name": t.speaker, "dia_id": t.dia_id},
        }
        for t in conv.turns
    ]


def start_workers(concurrency: int, log_path) -> subprocess.Popen:
    from memq.cli.worker_commands import worker_argv

    env = {**os.environ, "MEMQ_LOG_LEVEL": os.environ.get("MEMQ_LOG_LEVEL", "WARNING"), "PYTHONWARNINGS": "ignore"}
    out = open(log_path, "ab")  # noqa: SIM115 - the worker owns it for its lifetime
    return subprocess.Popen(worker_argv(concurrency=concurrency, hostname="eval@%h", loglevel="WARNING"), env=env,
                            stdout=out, stderr=subprocess.STDOUT, start_new_session=True)


def wait_for_worker(producer, process: subprocess.Popen, timeout: float = 180.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the evaluation worker exited with code {process.returncode}")
        if producer.celery.control.ping(timeout=1.0):
            return
    raise RuntimeError(f"no worker answered a ping within {timeout:.0f} s")


def stop_workers(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()


def replay(producer, tenant: str, conversations: list[LocomoConversation], on_progress: Callable[[str, int, int], None],
           timeout: float = 1800.0) -> ReplayTimes:
    started = time.monotonic()
    for conv in conversations:
        batch = messages_of(conv)
        for i in range(0, len(batch), 100):
            producer.add_messages(batch[i:i + 100], tenant=tenant)
        producer.flush(conv.sample_id, tenant=tenant)
    enqueued = time.monotonic()
    for conv in conversations:
        total = len(conv.turns)

        def show(status, conv=conv, total=total):
            on_progress(conv.sample_id, max(0, total - status.inbox - status.buffer - status.segments), total)

        producer.wait_idle(conv.sample_id, tenant=tenant, timeout=timeout, on_progress=show)
        on_progress(conv.sample_id, total, total)
    return ReplayTimes(enqueued - started, time.monotonic() - enqueued)
