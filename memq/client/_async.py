"""The asyncio client: ``_sync.py``'s, method for method, with ``await``."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from types import TracebackType
from typing import IO, Any, TypeVar

import anyio
import httpx

from memq.api.models import Detail
from memq.client import _calls as calls
from memq.client._base import Config, network_error
from memq.client._calls import FLUSH_WAIT_MAX, Call, Message, Moment
from memq.client.errors import BadRequest, MemqError, error_from_response
from memq.client.models import (
    ActivityEntryOut,
    ActivityOut,
    AddResultOut,
    ContextOut,
    ConversationFactsOut,
    ConversationOut,
    ConversationsOut,
    ConversationStatusOut,
    DeliveryListOut,
    DeliveryRetriedOut,
    EpisodesOut,
    FactHistoryOut,
    FactSearchOut,
    FlushOut,
    ForgetOut,
    HealthOut,
    ImportOut,
    ManifestOut,
    MessagesOut,
    MoveOut,
    QuotaOut,
    ReadyOut,
    RecentOut,
    RetrieveOut,
    UserConversationsOut,
    UserForgetOut,
    WebhookCreatedOut,
    WebhookDeletedOut,
    WebhookListOut,
)
from memq.client.retry import Retries

T = TypeVar("T")


class AsyncClient:
    """memq's HTTP API from Python, for asyncio (or trio): :class:`Client`'s methods, awaited.
    Every answer is the API's own pydantic model; every error a :class:`memq.client.MemqError`.

    ``base_url`` defaults to ``MEMQ_URL`` (else ``http://127.0.0.1:8765``), ``api_key`` to
    ``MEMQ_KEY`` (sent as ``Authorization: Bearer <key>``; none is sent without one).
    ``timeout``: seconds, or an ``httpx.Timeout`` (default: 5 to connect, 30 to read).
    ``retries``: a :class:`Retries` policy, or how many times to retry (0: never); only
    calls that are safe to repeat are retried. ``transport``: an httpx transport (a custom
    TLS context, a proxy, ``httpx.MockTransport`` in tests).

    Use it as an async context manager, or await :meth:`aclose`; share one per event loop.
    """

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float | httpx.Timeout | None = None,
        retries: Retries | int | None = None,
        headers: Mapping[str, str] | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._config = Config(base_url, api_key, timeout, retries, headers)
        self._http = httpx.AsyncClient(
            base_url=self._config.base_url,
            headers=self._config.headers,
            timeout=self._config.timeout,
            transport=transport,
        )
        self._sleep: Callable[[float], Awaitable[None]] = anyio.sleep

    @property
    def base_url(self) -> str:
        return self._config.base_url

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"AsyncClient({self.base_url!r})"

    # --- sending ----------------------------------------------------------------------------

    async def _call(self, call: Call[T]) -> T:
        attempt = 0
        while True:
            attempt += 1
            cause: Exception | None = None
            try:
                response = await self._http.request(
                    call.operation.method,
                    call.path,
                    params=call.params,
                    json=call.json,
                    content=call.content,
                    headers=call.headers,
                    timeout=self._config.timeout_for(call),
                )
            except httpx.TransportError as exc:
                error, cause = network_error(exc, call, self.base_url), exc
            else:
                if response.is_success or response.status_code in call.answers:
                    return call.parse(response)
                error = error_from_response(response)
            wait = self._config.next_wait(call, attempt, error)
            if wait is None:
                raise error from cause
            await self._sleep(wait)

    # --- ingest -------------------------------------------------------------------------------

    async def add_messages(
        self, conversation_id: str, messages: Sequence[Message], *, user_id: str | None = None
    ) -> MessagesOut:
        """Add a batch of messages to the conversation, in order, all or nothing.

        Each message is a mapping with ``role`` and ``content`` (and optionally
        ``timestamp``, ``message_id``, ``metadata``, ``user_id``) or a ``MessageIn``. A
        message without a ``message_id`` gets one here, before the first attempt, so a
        retry (the client's or yours, with the same ids) is answered ``duplicate`` for what
        was stored, never stored twice; the answer has each message's id. ``user_id``: the
        user of every message. Raises ``BadRequest`` (``field`` names the message, e.g.
        ``messages[2].timestamp``), ``Conflict`` (refused, nothing written)."""
        return await self._call(calls.add_messages(conversation_id, messages, user_id=user_id))

    async def add_message(
        self,
        conversation_id: str,
        role: str,
        content: str,
        *,
        timestamp: Moment | None = None,
        message_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        user_id: str | None = None,
    ) -> AddResultOut:
        """Add one message (see :meth:`add_messages`); its result (``status``, ``message_id``)."""
        return await self._call(
            calls.add_message(
                conversation_id,
                role,
                content,
                timestamp=timestamp,
                message_id=message_id,
                metadata=metadata,
                user_id=user_id,
            )
        )

    async def flush(self, conversation_id: str, *, wait: float | None = None) -> FlushOut:
        """Close the conversation's open event into an episode once its queue is drained (a
        worker does it after this returns). With ``wait`` (seconds), return once every
        accepted message is in an episode (``idle`` true) or the wait is over (``idle``
        false: nothing is lost; ask :meth:`status` later). Raises ``NotFound`` for a
        conversation no message was ever accepted for."""
        if wait is None or wait == 0:
            return await self._call(calls.flush(conversation_id))
        if wait < 0:
            raise BadRequest("must not be negative", type="validation", field="wait")
        deadline = time.monotonic() + wait
        out = await self._call(calls.flush(conversation_id, wait=min(wait, FLUSH_WAIT_MAX)))
        while out.idle is False and (left := deadline - time.monotonic()) > 0.05:  # the API waits 60 s at most
            again = await self._call(calls.flush(conversation_id, wait=min(left, FLUSH_WAIT_MAX)))
            update = {"flushed": out.flushed or again.flushed, "warning": out.warning or again.warning}
            out = again.model_copy(update=update)
        return out

    async def status(self, conversation_id: str) -> ConversationStatusOut:
        """Whether the conversation is idle (every accepted message in an episode), and what
        waits: the inbox, the open event, closed events waiting for their episode."""
        return await self._call(calls.status(conversation_id))

    # --- conversations ------------------------------------------------------------------------

    async def list_conversations(self, *, after: str | None = None, limit: int | None = None) -> ConversationsOut:
        """One page of the tenant's conversations in id order, after the cursor ``after``
        (the previous page's ``next``), at most ``limit`` (default 100, at most 500)."""
        return await self._call(calls.list_conversations(after=after, limit=limit))

    async def iter_conversations(self, *, limit: int | None = None) -> AsyncIterator[ConversationOut]:
        """Every conversation of the tenant, in id order, a page (``limit``) per request."""
        after: str | None = None
        while True:
            page = await self.list_conversations(after=after, limit=limit)
            for conversation in page.conversations:
                yield conversation
            if page.next is None:
                return
            after = page.next

    async def episodes(self, conversation_id: str) -> EpisodesOut:
        """The conversation's episodes, oldest first."""
        return await self._call(calls.episodes(conversation_id))

    async def manifest(
        self,
        conversation_id: str,
        *,
        depth: int | None = None,
        timezone: str | None = None,
        user_id: str | None = None,
    ) -> ManifestOut:
        """The manifest: the conversation's chapters (``chapters``) and episodes by day
        (``groups``), newest first, in ``timezone`` (IANA; default UTC); the markdown tree is
        ``text``."""
        return await self._call(calls.manifest(conversation_id, depth=depth, timezone=timezone, user_id=user_id))

    async def context(
        self,
        conversation_id: str,
        *,
        max_tokens: int | None = None,
        summaries: int | None = None,
        continuity: int | None = None,
        timezone: str | None = None,
        user_id: str | None = None,
    ) -> ContextOut:
        """What to put at the top of a new session (the markdown is ``text``)."""
        return await self._call(
            calls.context(
                conversation_id,
                max_tokens=max_tokens,
                summaries=summaries,
                continuity=continuity,
                timezone=timezone,
                user_id=user_id,
            )
        )

    async def forget(self, conversation_id: str) -> ForgetOut:
        """Forget the conversation: every trace, including work in flight. Idempotent."""
        return await self._call(calls.forget(conversation_id))

    # --- memory -------------------------------------------------------------------------------

    async def retrieve(
        self,
        query: str,
        *,
        conversation_id: str | None = None,
        conversation_ids: Sequence[str] | None = None,
        user_id: str | None = None,
        limit: int | None = None,
        detail: Detail = "auto",
        max_tokens: int | None = None,
        time_range: tuple[Moment | None, Moment | None] | None = None,
        now: Moment | None = None,
        record: bool = True,
        asked_in: str | None = None,
    ) -> RetrieveOut:
        """What memq remembers about ``query``: ``memories`` best first with every score,
        ``facts``, and the markdown for an LLM in ``text``. Without a conversation, every
        conversation of the tenant (or of ``user_id``)."""
        return await self._call(
            calls.retrieve(
                query,
                conversation_id=conversation_id,
                conversation_ids=conversation_ids,
                user_id=user_id,
                limit=limit,
                detail=detail,
                max_tokens=max_tokens,
                time_range=time_range,
                now=now,
                record=record,
                asked_in=asked_in,
            )
        )

    async def recent(
        self,
        conversation_id: str | None = None,
        *,
        user_id: str | None = None,
        days: float = 7.0,
        limit: int | None = None,
        max_tokens: int | None = None,
        now: Moment | None = None,
    ) -> RecentOut:
        """The latest episodes of the conversation (or of the user's conversations), newest first."""
        return await self._call(
            calls.recent(conversation_id, user_id=user_id, days=days, limit=limit, max_tokens=max_tokens, now=now)
        )

    # --- facts --------------------------------------------------------------------------------

    async def facts(self, conversation_id: str, *, include_retired: bool = False) -> ConversationFactsOut:
        """The facts distilled from the conversation's episodes (active ones, or all)."""
        return await self._call(calls.facts(conversation_id, include_retired=include_retired))

    async def search_facts(
        self,
        query: str,
        *,
        conversation_id: str | None = None,
        conversation_ids: Sequence[str] | None = None,
        user_id: str | None = None,
        limit: int | None = None,
    ) -> FactSearchOut:
        """The active facts most relevant to ``query``."""
        return await self._call(
            calls.search_facts(
                query, conversation_id=conversation_id, conversation_ids=conversation_ids, user_id=user_id, limit=limit
            )
        )

    async def fact_history(self, fact_id: str) -> FactHistoryOut:
        """A fact and every change to it, oldest first."""
        return await self._call(calls.fact_history(fact_id))

    # --- users --------------------------------------------------------------------------------

    async def move_conversation(self, conversation_id: str, user_id: str | None) -> MoveOut:
        """Give the conversation to ``user_id`` (None: to no user); audited. (After a retry
        of an attempt that was stored, ``changed`` reads false.)"""
        return await self._call(calls.move_conversation(conversation_id, user_id))

    async def user_conversations(self, user_id: str, *, changes: bool = False) -> UserConversationsOut:
        """The user's conversations (with ``changes``: also the audited moves)."""
        return await self._call(calls.user_conversations(user_id, changes=changes))

    async def forget_user(self, user_id: str) -> UserForgetOut:
        """Forget every conversation of the user, and the user's audit rows. Idempotent."""
        return await self._call(calls.forget_user(user_id))

    # --- portability --------------------------------------------------------------------------

    async def export(self, *, conversation_id: str | None = None, user_id: str | None = None) -> bytes:
        """The tenant's memory (or one conversation's, or one user's) as a ``memq-export``
        file (JSON Lines), whole in memory; :meth:`export_to` streams it to a file. Raises
        ``UnexpectedResponse`` when the file ends without its end record."""
        return await self._call(calls.export(conversation_id=conversation_id, user_id=user_id))

    async def export_to(
        self, file: IO[bytes], *, conversation_id: str | None = None, user_id: str | None = None
    ) -> int:
        """:meth:`export`, streamed into ``file`` (opened for binary writing); the bytes written.
        Retried only until the first byte is written."""
        call = calls.export(conversation_id=conversation_id, user_id=user_id)
        attempt = 0
        while True:
            attempt += 1
            written = 0
            error: MemqError
            cause: Exception | None = None
            try:
                async with self._http.stream(
                    "GET", call.path, params=call.params, timeout=self._config.timeout_for(call)
                ) as response:
                    if response.is_success:
                        tail = b""
                        async for chunk in response.aiter_bytes():
                            file.write(chunk)
                            written += len(chunk)
                            tail = (tail + chunk)[-4096:]
                        calls.check_export(tail, response)
                        return written
                    await response.aread()
                    error = error_from_response(response)
            except httpx.TransportError as exc:
                error, cause = network_error(exc, call, self.base_url), exc
            wait = None if written else self._config.next_wait(call, attempt, error)
            if wait is None:
                raise error from cause
            await self._sleep(wait)

    async def import_(self, data: bytes | str | IO[bytes]) -> ImportOut:
        """Import a ``memq-export`` file (bytes, text, or a binary file) into the key's tenant;
        at most MEMQ_API_MAX_BODY_BYTES (larger files: ``memq import``). Idempotent: what is
        already there is skipped. Raises ``BadRequest`` (field ``body``) naming the line a
        broken file stops at."""
        return await self._call(calls.import_(data))

    # --- webhooks -----------------------------------------------------------------------------

    async def create_webhook(
        self, url: str, *, events: Sequence[str] | None = None, content: bool = False
    ) -> WebhookCreatedOut:
        """Register an HTTPS endpoint for ``events`` (all when omitted); the answer has its
        ``secret``, shown this once. Never retried (a repeat would register it twice)."""
        return await self._call(calls.create_webhook(url, events=events, content=content))

    async def list_webhooks(self) -> WebhookListOut:
        """The tenant's webhook endpoints."""
        return await self._call(calls.list_webhooks())

    async def delete_webhook(self, webhook_id: str) -> WebhookDeletedOut:
        """Remove an endpoint and its deliveries."""
        return await self._call(calls.delete_webhook(webhook_id))

    async def webhook_deliveries(self, *, failed: bool = False, limit: int | None = None) -> DeliveryListOut:
        """The latest deliveries, newest first (``failed``: only those that failed)."""
        return await self._call(calls.webhook_deliveries(failed=failed, limit=limit))

    async def retry_delivery(self, delivery_id: str) -> DeliveryRetriedOut:
        """Send a delivery again. Not retried by the client."""
        return await self._call(calls.retry_delivery(delivery_id))

    # --- activity -----------------------------------------------------------------------------

    async def list_activity(
        self,
        *,
        action: str | None = None,
        since: Moment | None = None,
        after: str | None = None,
        limit: int | None = None,
    ) -> ActivityOut:
        """One page of the tenant's activity log (who created or revoked keys, forgot,
        exported, imported, changed webhooks), newest first, after the cursor ``after`` (the
        previous page's ``next``), at most ``limit`` (default 100, at most 500); ``action``:
        only that action; ``since``: only entries at or after that time."""
        return await self._call(calls.list_activity(action=action, since=since, after=after, limit=limit))

    async def iter_activity(
        self, *, action: str | None = None, since: Moment | None = None, limit: int | None = None
    ) -> AsyncIterator[ActivityEntryOut]:
        """Every entry of the tenant's activity log, newest first, a page (``limit``) per request."""
        after: str | None = None
        while True:
            page = await self.list_activity(action=action, since=since, after=after, limit=limit)
            for entry in page.entries:
                yield entry
            if page.next is None:
                return
            after = page.next

    # --- quota --------------------------------------------------------------------------------

    async def quota(self) -> QuotaOut:
        """The tenant's quotas (messages a day, stored messages; None: no limit) and what it
        has used. A batch a quota refuses raises :class:`QuotaExceeded`."""
        return await self._call(calls.quota())

    # --- health -------------------------------------------------------------------------------

    async def health(self) -> HealthOut:
        """The API process answers (``/healthz``)."""
        return await self._call(calls.health())

    async def ready(self) -> ReadyOut:
        """Whether Redis and PostgreSQL answer, and a worker (``/readyz``); ``ready`` false
        is an answer, not an error."""
        return await self._call(calls.ready())
