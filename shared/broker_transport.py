"""kombu's Redis transport, made safe for the worker's event loop across Redis restarts.

Celery runs a worker's consumer, its task time limits, acknowledgements and kombu's own
health checks on one event loop in the worker's main process. Celery uses this module's
``Transport`` for the broker (``broker_transport`` in ``memq.shared.celery_config``); it mends
four things in how kombu 5.7 and redis-py 8 meet, which stalled or stopped workers
for minutes after a routine Redis restart (docs/broker-restarts.md tells the whole story):

1. **Subscriptions lost on reconnect.** kombu attaches a connection to its pub/sub client
   (the worker's remote-control channel, ``celery.pidbox``) by assigning
   ``pubsub.connection`` directly, bypassing the one place where redis-py registers the
   callback that subscribes again after a reconnect. When redis-py reconnected that
   connection by itself, it came back subscribed to nothing. ``ResubscribingPubSub``
   registers the callback whenever a connection is attached, however it is attached.
2. **A read that waits forever.** kombu reads a pub/sub message only when the event loop
   says the socket is readable, but asks redis-py for a *blocking* read, which redis-py
   8.1 performs with no timeout at all (the socket timeout is lifted for it). After the
   silent reconnect of (1), that read waited for a message that could never come, inside
   the event loop: no task finished, no soft time limit fired, nothing was logged, until
   something closed the socket again. Reads here wait at most ``socket_timeout``.
3. **A retry hidden inside the event loop.** memq's broker options used to set
   ``retry_on_timeout``, which makes redis-py give every broker connection a retry
   policy: a read that fails is retried once, right after reconnecting. That silent
   reconnect is what (1) and (2) turned into a stall; whether it happened depended on
   whether Redis already accepted connections again when the event loop noticed the
   closed socket, so the stall came and went with timing. Broker connections here never
   retry inside redis-py: a lost connection surfaces at once to Celery, whose consumer
   reconnects (and says so in the log) and whose publishers retry by their own policy.

4. **An acknowledgement that stopped the worker.** After a lost connection Celery
   collects the kombu connection, which detaches it from its transport, and then closes
   it. A message delivered on it whose task was still running is acknowledged through
   its old channel when the task ends, and closing that channel restores what is not
   acknowledged. Both need a Redis client, whose parameters kombu reads from the
   detached transport: an AttributeError, which Celery takes for an unrecoverable error,
   and the worker stopped. The channel here keeps the parameters it used.

5. **A full Redis that stopped the worker.** kombu records each message it takes off a
   queue (a hash and an index of unacknowledged messages in Redis) right after taking it,
   and removes the record when the task is acknowledged. Redis refuses those writes when it
   has no room (``OOM`` at its maxmemory, ``MISCONF`` when it cannot write its append-only
   file): Celery took the error for an unrecoverable one and the worker stopped, the message
   taken and recorded nowhere. ``QoS`` here delivers the message all the same, recorded in
   the worker's memory only, and keeps the worker running when the record cannot be removed;
   each such refusal is counted and logged as ``storage_full`` (``memq.shared.storage_alarm``).

The channel also sets the order in which a worker asks its queues for the next task:
the episodes queue first (``memq.shared.queue_order``).

``tests/integration/test_broker_restarts.py`` reproduces the stall on kombu's stock
transport and shows this one recover; ``test_broker_acks_after_reconnect.py`` does the
same for (4), ``test_broker_storage_full.py`` for (5).
"""

from __future__ import annotations

from typing import Any

import redis
from kombu.transport import redis as kombu_redis
from kombu.transport import virtual
from redis.backoff import NoBackoff
from redis.retry import Retry

from memq.shared.queue_order import CYCLE_PATH
from memq.shared.storage_alarm import report_storage_full

#: Longest wait for a pub/sub reply once the event loop saw its socket readable (seconds),
#: when the broker sets no socket timeout.
DEFAULT_READ_WAIT = 10.0


class ResubscribingPubSub(redis.client.PubSub):
    """A pub/sub client whose connection always re-subscribes after a reconnect, and
    whose blocking reads are bounded by the connection's socket timeout."""

    _connection: Any = None

    @property
    def connection(self) -> Any:
        return self._connection

    @connection.setter
    def connection(self, conn: Any) -> None:
        self._connection = conn
        if conn is not None:
            # redis-py does this only in execute_command, when it picks the connection
            # itself; kombu assigns it. Registering twice is a no-op (weak-method set).
            conn.register_connect_callback(self.on_connect)

    def parse_response(self, block: bool = True, timeout: float = 0) -> Any:
        if block:
            wait = getattr(self._connection, "socket_timeout", None) or DEFAULT_READ_WAIT
            return super().parse_response(block=False, timeout=wait)  # type: ignore[no-untyped-call]  # unannotated in redis-py
        return super().parse_response(block=block, timeout=timeout)  # type: ignore[no-untyped-call]  # unannotated in redis-py


class BrokerRedis(redis.Redis):
    """The client kombu builds for the broker, handing out ``ResubscribingPubSub``."""

    def pubsub(self, **kwargs: Any) -> ResubscribingPubSub:
        return ResubscribingPubSub(self.connection_pool, event_dispatcher=self._event_dispatcher, **kwargs)


def no_retries() -> Retry:
    """A redis-py retry policy that never retries: errors reach kombu and Celery at once."""
    return Retry(NoBackoff(), 0)


# What becomes of a task whose record Redis refused to write, or to remove.
UNRECORDED = (
    "the task runs without its record in Redis: if this worker dies before it ends, the stalled-work sweep "
    "re-publishes its work"
)
RECORD_KEPT = "the task's record stays in Redis: it is delivered again after the visibility timeout, a harmless repeat"


class QoS(kombu_redis.QoS):
    """kombu's record of unacknowledged messages, which a Redis without room does not turn
    into a stopped worker (5. above)."""

    def append(self, message: Any, delivery_tag: Any) -> None:
        try:
            super().append(message, delivery_tag)  # type: ignore[no-untyped-call]  # unannotated in kombu
        except redis.ResponseError as exc:
            if not report_storage_full(exc, stage="broker", then=UNRECORDED):
                raise
            virtual.QoS.append(self, message, delivery_tag)  # in memory only

    def ack(self, delivery_tag: Any) -> None:
        try:
            super().ack(delivery_tag)  # type: ignore[no-untyped-call]  # unannotated in kombu
        except redis.ResponseError as exc:
            if not report_storage_full(exc, stage="broker", then=RECORD_KEPT):
                raise
            virtual.QoS.ack(self, delivery_tag)  # forgotten in memory

    def reject(self, delivery_tag: Any, requeue: bool = False) -> None:
        try:
            super().reject(delivery_tag, requeue=requeue)  # type: ignore[no-untyped-call]  # unannotated in kombu
        except redis.ResponseError as exc:
            if not report_storage_full(exc, stage="broker", then=RECORD_KEPT):
                raise
            virtual.QoS.ack(self, delivery_tag)  # forgotten in memory


class Channel(kombu_redis.Channel):
    QoS = QoS
    queue_order_strategy = CYCLE_PATH  # the episodes queue asked first (memq.shared.queue_order)

    def _get_client(self) -> Any:
        if self.global_keyprefix:  # memq never sets one; kombu's prefixed client keeps its own pub/sub
            raise ValueError("memq's broker transport does not support global_keyprefix")
        return BrokerRedis

    def _create_client(self, asynchronous: bool = False) -> Any:
        """kombu builds a new client for every publish (``conn_or_acquire``); redis-py's
        client builds its table of ~170 response callbacks in its constructor, a third of
        a drain's publishing time. A client is only its pool and that table, so one is
        kept per pool (a new pool after a reconnect gets a new client)."""
        pool = self.async_pool if asynchronous else self.pool
        kept: dict[bool, tuple[Any, Any]] = self.__dict__.setdefault("_memq_clients", {})
        if asynchronous not in kept or kept[asynchronous][0] is not pool:
            kept[asynchronous] = (pool, super()._create_client(asynchronous=asynchronous))  # type: ignore[no-untyped-call]  # unannotated in kombu
        return kept[asynchronous][1]

    def _connparams(self, asynchronous: bool = False) -> dict[str, Any]:
        known: dict[bool, dict[str, Any]] = self.__dict__.setdefault("_memq_connparams", {})
        if getattr(self.connection, "client", None) is None:
            # The kombu connection was closed under this channel: Celery, after a lost
            # connection, collects the connection (which detaches the transport) and then
            # closes it, which closes this channel and restores its unacknowledged
            # messages; a task still running acknowledges through it when it ends. Both
            # need a Redis client; kombu would fail with an AttributeError, which Celery
            # takes for an unrecoverable error and stops the worker. The parameters are
            # the ones this channel used; the messages' Redis structures are global.
            if asynchronous not in known:
                raise redis.ConnectionError("the broker connection of this channel was closed")
            return dict(known[asynchronous])
        params: dict[str, Any] = super()._connparams(asynchronous=asynchronous)  # type: ignore[no-untyped-call]  # unannotated in kombu
        params["retry"] = no_retries()
        known[asynchronous] = dict(params)
        return params


class Transport(kombu_redis.Transport):
    Channel = Channel


#: What ``broker_transport`` names (kombu resolves "module:Class").
TRANSPORT_PATH = f"{__name__}:Transport"
