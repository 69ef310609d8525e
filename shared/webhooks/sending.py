"""One delivery attempt over HTTP, and what its outcome means (``classify``, pure).

The attempt connects to the addresses ``Destinations.check`` returned for the URL (the
first that accepts a connection), never resolving the host again, so what was checked is
what is reached; the Host header and TLS (server name and certificate) still name the
host. A redirect is an answer, not followed: only the checked URL is ever called. No
proxy from the environment is used (a proxy would connect where memq did not check).
"""

from __future__ import annotations

import http.client
import json
import socket
import ssl
import time
from dataclasses import dataclass
from typing import Any

from memq.shared.webhooks.destinations import Address, Target
from memq.shared.webhooks.signing import EVENT_HEADER, EVENT_ID_HEADER, SIGNATURE_HEADER, signature_header


@dataclass(frozen=True)
class Attempt:
    status: int | None  # the HTTP status, None when no response came
    error: str | None  # None on a 2xx


def body_of(payload: dict[str, Any]) -> bytes:
    return json.dumps(payload, separators=(",", ":"), sort_keys=True).encode()


def headers(secret: str, event: str, event_id: str, body: bytes, now: float) -> dict[str, str]:
    return {
        "content-type": "application/json",
        "user-agent": "memq-webhooks",
        SIGNATURE_HEADER: signature_header(secret, int(now), body),
        EVENT_ID_HEADER: event_id,
        EVENT_HEADER: event,
    }


def _connect(addresses: tuple[Address, ...], port: int, timeout: float | None) -> socket.socket:
    """A TCP connection to the first of the checked addresses that accepts one."""
    failure: OSError = OSError("no address to connect to")
    for address in addresses:
        sock = socket.socket(socket.AF_INET6 if address.version == 6 else socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.settimeout(timeout)
            sock.connect((str(address), port))  # an address, not a name: nothing is looked up
            return sock
        except OSError as exc:
            sock.close()
            failure = exc
    raise failure


class _PinnedHTTP(http.client.HTTPConnection):
    def __init__(self, target: Target, timeout: float) -> None:
        super().__init__(target.host, target.port, timeout=timeout)
        self._addresses = target.addresses

    def connect(self) -> None:
        self.sock = _connect(self._addresses, self.port, self.timeout)


class _PinnedHTTPS(http.client.HTTPSConnection):
    def __init__(self, target: Target, timeout: float) -> None:
        super().__init__(target.host, target.port, timeout=timeout, context=ssl.create_default_context())
        self._addresses = target.addresses

    def connect(self) -> None:
        sock = _connect(self._addresses, self.port, self.timeout)
        self.sock = self._context.wrap_socket(sock, server_hostname=self.host)  # type: ignore[attr-defined]


def send(target: Target, secret: str, event: str, event_id: str, payload: dict[str, Any], timeout: float) -> Attempt:
    body = body_of(payload)
    connection = (_PinnedHTTPS if target.scheme == "https" else _PinnedHTTP)(target, timeout)
    try:
        connection.request("POST", target.path, body=body, headers=headers(secret, event, event_id, body, time.time()))
        response = connection.getresponse()
        status, reason = response.status, response.reason
    except (OSError, http.client.HTTPException, ValueError) as exc:  # refused, unreachable, timed out, TLS
        return Attempt(None, f"{type(exc).__name__}: {exc}"[:500])
    finally:
        connection.close()
    if 200 <= status < 300:
        return Attempt(status, None)
    return Attempt(status, f"HTTP {status} {reason}"[:500])


def classify(attempt: Attempt) -> str:
    """``delivered`` (2xx), ``permanent`` (a 4xx other than 408 and 429: retrying cannot
    help) or ``retry`` (no response, 408, 429, 5xx, anything else)."""
    status = attempt.status
    if status is not None and 200 <= status < 300:
        return "delivered"
    if status is not None and 400 <= status < 500 and status not in (408, 429):
        return "permanent"
    return "retry"
