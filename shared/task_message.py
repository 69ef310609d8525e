"""A drain task's broker message, built without Celery, for a script to queue atomically
with the messages it accepts.

``enqueue.lua`` marks a conversation "drain queued" when it accepts its messages; the
producer then had to publish the drain task itself, through Celery's ``send_task``: a
second round trip and about half a millisecond of CPU (routing, message building,
kombu's publish machinery) for every batch that starts a drain, as much as the whole
batch costs a bare client. Instead the producer hands the script the task's message,
ready to queue, and the script pushes it onto the segmentation queue in the same atomic
step as the drain mark (a mark and its task can no longer come apart).

The message is what Celery 5's ``send_task`` puts on the queue through kombu's Redis
transport (task protocol 2, JSON): the envelope ``{"body", "content-encoding",
"content-type", "headers", "properties"}`` with the body ``[args, kwargs, embed]``
base64-encoded, pushed with LPUSH onto the queue's list (priority 0: the list named
like the queue). ``tests/integration/test_drains_queued_by_script.py`` checks it field by
field against what the installed Celery and kombu make of the same task, so that an
upgrade changing the format fails there and not in production.

Only where it is sound: the mailbox and the broker are one Redis (``MEMQ_MAILBOX_REDIS_URL``
unset, not a cluster), and no task-sent event is asked for (``MEMQ_TASK_SENT_EVENTS``,
which only Celery's own publishing sends). Elsewhere the producer publishes as before.
"""

from __future__ import annotations

import base64
import functools
import itertools
import os
import socket
import uuid
from json.encoder import encode_basestring_ascii as _json_string

from memq.shared import tasks


class _Ids:
    """Unique ids in UUID 4 form, cheaply: a random prefix per process (74 random bits;
    re-drawn in a forked child) and a counter. ``uuid.uuid4()`` twice per message was half
    the cost of building it, paid on every enqueue call whether it starts a drain or not."""

    def __init__(self) -> None:
        self._pid = -1
        self._prefix = ""
        self._count = itertools.count()

    def next(self) -> str:
        if self._pid != os.getpid():
            self._pid, self._prefix, self._count = os.getpid(), str(uuid.uuid4())[:24], itertools.count()
        return f"{self._prefix}{next(self._count):012x}"


_ids = _Ids()


def origin() -> str:
    """Celery's ``origin`` header for a process that is not a worker: ``gen<pid>@<host>``."""
    return _origin(os.getpid())


@functools.lru_cache(maxsize=2)
def _origin(pid: int) -> str:
    return f"gen{pid}@{socket.gethostname()}"


def drain_message(tenant: str, conversation_id: str, *, reply_to: str, sender: str) -> str:
    """The JSON text of a ``memq.event_segmentation`` task for one conversation, as kombu's
    Redis transport queues it, with a fresh task id and delivery tag. ``reply_to`` is the
    publishing app's id (Celery's ``app.thread_oid``; no result is ever sent to it),
    ``sender`` the ``origin`` header (``origin()``)."""
    task_id = _ids.next()
    q_tenant, q_conversation = _json_string(tenant), _json_string(conversation_id)
    body = (
        f'[[{q_tenant}, {q_conversation}], {{}}, {{"callbacks": null, "errbacks": null, "chain": null, "chord": null}}]'
    )
    encoded = base64.b64encode(body.encode()).decode()
    return (
        f'{{"body": "{encoded}", "content-encoding": "utf-8", "content-type": "application/json", '
        f'"headers": {{"lang": "py", "task": "{tasks.EVENT_SEGMENTATION}", "id": "{task_id}", "shadow": null, '
        '"eta": null, "expires": null, "group": null, "group_index": null, "retries": 0, '
        f'"timelimit": [null, null], "root_id": "{task_id}", "parent_id": null, '
        f'"argsrepr": {_json_string(repr([tenant, conversation_id]))}, "kwargsrepr": "{{}}", '
        f'"origin": {_json_string(sender)}, "ignore_result": null, "replaced_task_nesting": 0, '
        '"stamped_headers": null, "stamps": {}}, '
        f'"properties": {{"correlation_id": "{task_id}", "reply_to": {_json_string(reply_to)}, '
        f'"delivery_mode": 2, "delivery_info": {{"exchange": "", "routing_key": "{tasks.SEGMENTATION_QUEUE}"}}, '
        f'"priority": 0, "body_encoding": "base64", "delivery_tag": "{_ids.next()}"}}}}'
    )
