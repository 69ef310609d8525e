"""The drain task message the enqueue script queues (memq.shared.task_message): well formed,
fresh ids each time. That it is what Celery itself publishes is checked against the
installed Celery in tests/integration/test_drains_queued_by_script.py."""

from __future__ import annotations

import base64
import json
import uuid

from memq.shared import task_message, tasks


def _message(tenant: str = "acme", conversation: str = "conv-1") -> dict:
    return json.loads(task_message.drain_message(tenant, conversation, reply_to="r-1", sender="gen7@host"))


def test_the_message_names_the_drain_task_its_queue_and_arguments():
    message = _message("acme", "séance.2:b_c-d")
    assert message["headers"]["task"] == tasks.EVENT_SEGMENTATION
    assert message["properties"]["delivery_info"] == {"exchange": "", "routing_key": tasks.SEGMENTATION_QUEUE}
    body = json.loads(base64.b64decode(message["body"]))
    assert body[0] == ["acme", "séance.2:b_c-d"] and body[1] == {}
    assert message["headers"]["argsrepr"] == repr(["acme", "séance.2:b_c-d"])
    assert (message["headers"]["origin"], message["properties"]["reply_to"]) == ("gen7@host", "r-1")


def test_every_message_has_its_own_task_id_and_delivery_tag_in_uuid_form():
    messages = [_message() for _ in range(1000)]
    task_ids = [m["headers"]["id"] for m in messages]
    tags = [m["properties"]["delivery_tag"] for m in messages]
    assert len(set(task_ids + tags)) == 2000
    for m in messages[:50]:
        assert str(uuid.UUID(m["headers"]["id"])) == m["headers"]["id"]
        assert m["headers"]["root_id"] == m["properties"]["correlation_id"] == m["headers"]["id"]


def test_a_forked_process_draws_a_prefix_of_its_own(monkeypatch):
    before = _message()["headers"]["id"]
    monkeypatch.setattr("os.getpid", lambda: -7)  # as in a child after fork
    after = _message()["headers"]["id"]
    assert before[:24] != after[:24]
    assert task_message.origin().startswith("gen-7@")
