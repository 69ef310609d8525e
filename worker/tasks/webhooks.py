"""``webhook_delivery`` and ``webhook_sweep``, on their own queue (``memq.webhooks``) so a
slow or dead endpoint never holds up segmentation or episodes (docs/webhooks.md).

``webhook_delivery`` makes one attempt of a pending delivery under its row lock: a 2xx
delivers it; a 4xx other than 408 and 429 fails it for good; anything else (no answer,
5xx, 408, 429) is tried again after an exponential backoff
(``MEMQ_WEBHOOK_RETRY_BACKOFF_SECONDS`` doubling, at most ``..._MAX_SECONDS``) until
``MEMQ_WEBHOOK_MAX_ATTEMPTS``, after which it is kept as failed with its last error.
``webhook_sweep`` publishes the pending deliveries never published, or whose task is
overdue (lost with a broker restart), after recording the events PostgreSQL could not take
when they happened (``deferred.py``): run by the emitters after a change and by the beat.
"""

from __future__ import annotations

from typing import Any

import structlog

from memq.shared import publisher, tasks
from memq.shared.webhooks import deferred, deliveries
from memq.shared.webhooks.destinations import DestinationRefused, Destinations, HostUnresolved
from memq.shared.webhooks.sending import Attempt, classify, send
from memq.worker import resources
from memq.worker.app import app
from memq.worker.failures import backoff_seconds, describe, is_transient

log = structlog.get_logger("memq.webhooks")


@app.task(name=tasks.WEBHOOK_DELIVERY, acks_late=True)
def webhook_delivery(delivery_id: str) -> dict[str, Any]:
    settings = resources.settings()
    try:
        with resources.owner_database() as conn, conn.transaction():
            sending = deliveries.claim(conn, str(delivery_id))
            if sending is None:  # delivered, failed, gone, or another attempt holds it
                return {"status": "skipped"}
            destinations = Destinations(settings.webhook_allowance)
            attempt, outcome = _attempt(sending, destinations, settings.webhook_timeout_seconds)
            error = attempt.error or ""
            delay = 0.0
            if outcome == "refused":
                deliveries.mark_failed(conn, sending.id, error, None)
            elif outcome == "delivered":
                deliveries.mark_delivered(conn, sending.id, attempt.status or 200)
            elif outcome == "permanent" or sending.attempts + 1 >= settings.webhook_max_attempts:
                deliveries.mark_failed(conn, sending.id, error, attempt.status)
                outcome = "failed"
            else:
                delay = backoff_seconds(
                    sending.attempts, settings.webhook_retry_backoff_seconds, settings.webhook_retry_backoff_max_seconds
                )
                deliveries.mark_retry(conn, sending.id, error, attempt.status, delay)
    except Exception as exc:
        if not is_transient(exc):
            raise
        log.warning("webhook_delivery_postponed", delivery_id=delivery_id, error=describe(exc))
        return {"status": "postponed"}  # still pending: the sweep publishes it again
    if outcome == "retry":
        publisher.webhook_delivery(app, sending.id, countdown=delay)
    (log.warning if outcome == "refused" else log.info)(
        "webhook_" + outcome,
        delivery_id=sending.id,
        webhook_event=sending.event,
        status=attempt.status,
        error=attempt.error,
        attempt=sending.attempts + 1,
    )
    return {"status": outcome, "http_status": attempt.status}


def _attempt(sending: deliveries.Sending, destinations: Destinations, timeout: float) -> tuple[Attempt, str]:
    """One attempt and its outcome. The URL is checked again first (its host may resolve
    elsewhere since it was registered) and the request goes to the addresses checked: a
    destination that is no longer public is ``refused`` (failed at once, never retried); a
    host that does not resolve now is tried again like an endpoint that does not answer."""
    try:
        target = destinations.check(sending.url)
    except DestinationRefused as exc:
        return Attempt(None, f"refused: {exc.reason}"[:500]), "refused"
    except HostUnresolved as exc:
        return Attempt(None, str(exc)[:500]), "retry"
    attempt = send(target, sending.secret, sending.event, sending.event_id, sending.payload, timeout)
    return attempt, classify(attempt)


@app.task(name=tasks.WEBHOOK_SWEEP, acks_late=True)
def webhook_sweep() -> dict[str, Any]:
    settings = resources.settings()
    client, scripts = resources.mailbox()
    with resources.owner_database() as conn:
        recorded = deferred.record_deferred(client, scripts, conn, settings)
        due = deliveries.take_due(conn, settings.webhook_republish_after_seconds)
    for delivery_id in due:
        publisher.webhook_delivery(app, delivery_id)
    return {"status": "swept", "published": len(due), "deferred_recorded": recorded}
