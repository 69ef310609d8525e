"""The Celery application Flower loads (``memq flower``): the workers' configuration, on
kombu's own Redis transport.

The workers' broker transport (``memq.shared.broker_transport``) is named by a module path,
and the broker URL Celery reports then carries that path as its scheme; Flower's Broker page
knows brokers by scheme ("redis", "amqp", ...) and answered "'redis' broker is not
supported". A monitor needs none of what that transport mends (a worker's event loop held
across Redis restarts), so Flower reads the same Redis, the same queues and the same events
through kombu's own transport, and its Broker page shows memq's queues.

    celery -A memq.worker.monitor_app flower      # or: memq flower
"""

from __future__ import annotations

from kombu import Queue

from memq.shared import tasks
from memq.worker.app import create_app

app = create_app()
app.conf.broker_transport = None  # the URL's scheme (redis://) picks kombu's Redis transport
# the queues the Broker page lists until Flower has learned the workers' own (it asks them)
app.conf.task_queues = [Queue(name) for name in tasks.ALL_QUEUES]
