"""The enqueue script queues a conversation's drain task itself (memq.shared.task_message):
the message is what the installed Celery and kombu publish for the same task, a worker
runs it, and where the broker is another Redis the producer publishes through Celery."""

from __future__ import annotations

import base64
import json

import cluster_mode
import pytest
import redis
from stored import stored_message_ids

from memq.shared import publisher, task_message, tasks

_IDS = (("headers", "id"), ("headers", "root_id"), ("properties", "correlation_id"), ("properties", "delivery_tag"))


def _comparable(raw: str | bytes) -> dict:
    """The message with its per-message ids blanked and its body decoded."""
    message = json.loads(raw)
    for part, name in _IDS:
        assert message[part][name], f"{part}.{name} is empty"
        message[part][name] = "<id>"
    message["body"] = json.loads(base64.b64decode(message["body"]))
    return message


@pytest.mark.parametrize("conversation", ["conv-1", "séance.2:b_c-d", "x" * 128])
def test_the_scripts_drain_message_is_what_celery_publishes(own_redis, settings, conversation):
    local = settings.model_copy(update={"redis_url": own_redis.url})
    app = publisher.publishing_app(local)
    publisher.drain(app, "acme", conversation)
    published = redis.Redis.from_url(own_redis.url).lpop(tasks.SEGMENTATION_QUEUE)
    assert isinstance(published, bytes)
    ours = task_message.drain_message("acme", conversation, reply_to=app.thread_oid, sender=task_message.origin())
    assert _comparable(ours) == _comparable(published)


def _accepted(producer, conv: str, n: int) -> list:
    return producer.add_messages(
        [{"role": "user", "content": f"message {i} of a drain the script queued"} for i in range(n)],
        conversation_id=conv,
    )


def _counting(producer, published: list[str]) -> None:
    """Count the drains ``producer`` publishes through Celery (still publishing them)."""
    real = producer._publish_drain

    def publish(tenant: str, conversation_id: str) -> bool:
        published.append(conversation_id)
        return real(tenant, conversation_id)

    producer._publish_drain = publish


def test_a_drain_the_script_queued_is_run_by_a_worker(worker, producer, db, tenant):
    """On a Redis Cluster mailbox (the suite's cluster mode) the broker is another Redis:
    there the producer publishes through Celery, and the drain runs all the same."""
    published: list[str] = []
    _counting(producer, published)
    results = _accepted(producer, "script-drain", 6)
    assert {r.status for r in results} == {"accepted"}
    assert published == (["script-drain"] if cluster_mode.enabled() else [])  # else the script queued it
    producer.flush("script-drain")
    producer.wait_idle("script-drain", timeout=60)
    assert stored_message_ids(db, tenant, "script-drain") == [r.message_id for r in results]


def test_with_the_mailbox_on_another_redis_the_producer_publishes_through_celery(settings, tenant):
    from memq.producer.client import Producer
    from memq.shared.connections import redis_url

    # a mailbox URL naming the broker's Redis, or (cluster mode) the cluster the suite runs on
    other = {} if settings.mailbox_redis_url else {"mailbox_redis_url": redis_url(settings)}
    elsewhere = settings.model_copy(update={"tenant": tenant, **other})
    producer = Producer(elsewhere)
    published: list[str] = []
    _counting(producer, published)
    _accepted(producer, "celery-drain", 2)
    assert published == ["celery-drain"]
