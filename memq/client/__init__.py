"""A typed Python client of memq's HTTP API, in the thin install (``pip install memq``):
:class:`Client` (blocking) and :class:`AsyncClient` (asyncio), one method per operation,
the API's own pydantic models as results, errors as :class:`MemqError` subclasses, retries
where a retry is safe. docs/client.md says how to use it.

::

    from memq.client import Client

    with Client() as memq:  # MEMQ_URL and MEMQ_KEY
        memq.add_messages("conv-7", [{"role": "user", "content": "My sister's name is Lena."}])
        memq.flush("conv-7", wait=30)
        print(memq.retrieve("sister's name", conversation_id="conv-7").text)
"""

from memq.client._async import AsyncClient
from memq.client._base import DEFAULT_TIMEOUT, DEFAULT_URL
from memq.client._calls import FLUSH_WAIT_MAX, Message, Moment, new_message_id
from memq.client._sync import Client
from memq.client.errors import (
    AuthError,
    BadRequest,
    ClientError,
    Conflict,
    MemqError,
    NetworkError,
    NotFound,
    QuotaExceeded,
    RateLimited,
    RequestTimeout,
    RequestTooLarge,
    ServerError,
    ServiceUnavailable,
    UnexpectedResponse,
)
from memq.client.models import MessageIn
from memq.client.retry import Retries

__all__ = [
    "DEFAULT_TIMEOUT",
    "DEFAULT_URL",
    "FLUSH_WAIT_MAX",
    "AsyncClient",
    "AuthError",
    "BadRequest",
    "Client",
    "ClientError",
    "Conflict",
    "MemqError",
    "Message",
    "MessageIn",
    "Moment",
    "NetworkError",
    "NotFound",
    "QuotaExceeded",
    "RateLimited",
    "RequestTimeout",
    "RequestTooLarge",
    "Retries",
    "ServerError",
    "ServiceUnavailable",
    "UnexpectedResponse",
    "new_message_id",
]
