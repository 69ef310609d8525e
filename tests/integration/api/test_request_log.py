"""The API logs one line per request: method, route template, status, duration and
tenant; never the key, the ids in the path, the query or the message content."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class _Events(logging.Handler):
    """The structlog event dicts that reach the stdlib logger (what the renderer would print)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.events: list[dict[str, Any]] = []

    def emit(self, record: logging.LogRecord) -> None:
        if isinstance(record.msg, dict):
            self.events.append({**record.msg, "level": record.levelname.lower()})


@contextmanager
def api_log() -> Iterator[list[dict[str, Any]]]:
    logger = logging.getLogger("memq.api")
    handler, level = _Events(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        yield handler.events
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def test_one_line_per_request_without_secrets_or_content(client, auth, tenant):
    secret = "a message nobody may read in a log"
    with api_log() as events:
        r = client.post(
            "/v1/conversations/logged-conv/messages", json={"role": "user", "content": secret}, headers=auth
        )
        assert r.status_code == 202
        assert client.get("/v1/conversations/logged-conv/episodes").status_code == 401  # no key
        assert client.get("/no/such/path").status_code == 404
    lines = [e for e in events if e["event"] == "request"]
    assert [(e["method"], e["route"], e["status"], e["tenant"]) for e in lines] == [
        ("POST", "/v1/conversations/{conversation_id}/messages", 202, tenant),
        ("GET", "/v1/conversations/{conversation_id}/episodes", 401, None),
        ("GET", "(unmatched)", 404, None),
    ]
    assert all(e["level"] == "info" and e["duration_ms"] >= 0 for e in lines)
    everything = repr(events)
    assert secret not in everything and "logged-conv" not in everything
    assert auth["Authorization"].split()[1] not in everything


def test_probes_are_logged_at_debug(client):
    with api_log() as events:
        assert client.get("/healthz").status_code == 200
    (line,) = [e for e in events if e["event"] == "request"]
    assert (line["route"], line["level"]) == ("/healthz", "debug")
