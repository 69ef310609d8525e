"""What the blocking and the asyncio client share: where the API is, the key, timeouts,
the retry policy, and turning a failed attempt into the error it raises."""

from __future__ import annotations

import os
import random
from collections.abc import Mapping
from typing import Any

import httpx

from memq import version
from memq.client._calls import Call
from memq.client.errors import MemqError, NetworkError, RequestTimeout
from memq.client.retry import Retries, retry_delay

DEFAULT_URL = "http://127.0.0.1:8765"
URL_VARIABLE = "MEMQ_URL"
KEY_VARIABLE = "MEMQ_KEY"
DEFAULT_TIMEOUT = httpx.Timeout(30.0, connect=5.0)
"""Seconds: 5 to connect, 30 for each of writing the request, the first byte of the answer
after it, and getting a pooled connection."""


class Config:
    """A client's configuration, resolved once: arguments, else the environment
    (``MEMQ_URL``, ``MEMQ_KEY``), else the defaults."""

    def __init__(
        self,
        base_url: str | None,
        api_key: str | None,
        timeout: float | httpx.Timeout | None,
        retries: Retries | int | None,
        headers: Mapping[str, str] | None,
    ) -> None:
        self.base_url = (base_url or os.environ.get(URL_VARIABLE) or DEFAULT_URL).rstrip("/")
        key = api_key if api_key is not None else os.environ.get(KEY_VARIABLE)
        if timeout is None:
            self.timeout = DEFAULT_TIMEOUT
        else:
            self.timeout = timeout if isinstance(timeout, httpx.Timeout) else httpx.Timeout(timeout)
        if retries is None:
            self.retries = Retries()
        elif isinstance(retries, int):
            self.retries = Retries(attempts=retries + 1)
        else:
            self.retries = retries
        self.headers = {"User-Agent": f"memq-client/{version()}", "Accept": "application/json"}
        if key:
            self.headers["Authorization"] = f"Bearer {key}"
        self.headers.update(headers or {})
        self.random = random.random

    def timeout_for(self, call: Call[Any]) -> httpx.Timeout:
        """The client's timeout, the read one lengthened by what the server waits on purpose."""
        if not call.extra_read_timeout or self.timeout.read is None:
            return self.timeout
        return httpx.Timeout(
            connect=self.timeout.connect,
            read=self.timeout.read + call.extra_read_timeout,
            write=self.timeout.write,
            pool=self.timeout.pool,
        )

    def next_wait(self, call: Call[Any], attempt: int, error: MemqError) -> float | None:
        """Seconds before trying ``call`` again after attempt ``attempt`` failed; None: raise."""
        if not call.operation.retry_safe:
            return None
        return retry_delay(self.retries, attempt, error, self.random())


def network_error(exc: httpx.TransportError, call: Call[Any], base_url: str) -> MemqError:
    """The error of an attempt that got no answer."""
    method, url = call.operation.method, f"{base_url}{call.path}"
    if isinstance(exc, httpx.TimeoutException):
        return RequestTimeout(
            f"no answer in time ({type(exc).__name__}: {exc})", type="timeout", method=method, url=url
        )
    if isinstance(exc, httpx.UnsupportedProtocol | httpx.LocalProtocolError):  # not cured by trying again
        return MemqError(f"{type(exc).__name__}: {exc}", type="invalid_request", method=method, url=url)
    return NetworkError(f"{type(exc).__name__}: {exc}", type="connection", method=method, url=url)
