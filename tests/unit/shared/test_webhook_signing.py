"""Webhook signing and the meaning of an attempt's outcome (pure). Where a webhook may go:
test_webhook_destinations.py."""

from __future__ import annotations

import hashlib
import hmac

import pytest

from memq.shared.errors import ValidationError
from memq.shared.webhooks.endpoints import EVENTS, check_events
from memq.shared.webhooks.sending import Attempt, body_of, classify, headers
from memq.shared.webhooks.signing import new_secret, signature_header, verify


def test_the_signature_is_hmac_sha256_of_timestamp_dot_body_and_verifies():
    secret, body = new_secret(), b'{"id":"e1"}'
    header = signature_header(secret, 1_700_000_000, body)
    expected = hmac.new(secret.encode(), b"1700000000." + body, hashlib.sha256).hexdigest()
    assert header == f"t=1700000000,v1={expected}"
    assert verify(secret, header, body, now=1_700_000_010)
    assert not verify(secret, header, body + b" ", now=1_700_000_010)  # another body
    assert not verify(new_secret(), header, body, now=1_700_000_010)  # another secret
    assert not verify(secret, header, body, now=1_700_000_000 + 301)  # outside the 5-minute replay window
    assert not verify(secret, "v1=" + expected, body, now=1_700_000_000)  # no timestamp


def test_headers_carry_the_signature_event_and_event_id():
    body = body_of({"b": 1, "a": 2})
    assert body == b'{"a":2,"b":1}'
    sent = headers("s", "episode.created", "ev-1", body, 1_700_000_000.5)
    assert sent["memq-event"] == "episode.created" and sent["memq-event-id"] == "ev-1"
    assert verify("s", sent["memq-signature"], body, now=1_700_000_001)


@pytest.mark.parametrize(
    ("status", "outcome"),
    [
        *[(200, "delivered"), (204, "delivered"), (400, "permanent"), (404, "permanent"), (410, "permanent")],
        *[(408, "retry"), (429, "retry"), (500, "retry"), (503, "retry"), (None, "retry"), (302, "retry")],
    ],
)
def test_2xx_delivers_4xx_but_408_and_429_is_permanent_the_rest_is_retried(status, outcome):
    assert classify(Attempt(status, None if outcome == "delivered" else "x")) == outcome


def test_events_default_to_all_and_unknown_ones_are_refused():
    assert check_events(None) == EVENTS and check_events(["fact.created"]) == ("fact.created",)
    with pytest.raises(ValidationError, match="unknown events"):
        check_events(["episode.deleted"])
