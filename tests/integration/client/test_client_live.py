"""memq.client.Client and AsyncClient end to end against a live API and a real worker:
messages in (with and without ids; a retry after a lost answer is a duplicate, never a second
copy), a flush that waits until the conversation is idle, every read view as the API's own
models, export and import, users, webhooks, forget; and each error as its exception with the
API's type, message and field."""

from __future__ import annotations

import asyncio
import io
import json
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from memq.client import (
    AsyncClient,
    AuthError,
    BadRequest,
    Client,
    Conflict,
    NotFound,
    RequestTooLarge,
    Retries,
)
from memq.client.models import (
    ContextOut,
    ConversationFactsOut,
    FactSearchOut,
    ImportOut,
    ManifestChapterOut,
    ManifestOut,
    RecentOut,
    RetrieveOut,
)

pytestmark = pytest.mark.integration

START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
GARDEN = [
    ("user", "I want to plant tomatoes in the raised beds this spring."),
    ("assistant", "Tomatoes need six hours of sun; the south bed gets the most."),
    ("user", "Then the south bed it is. Should I add compost first?"),
    ("assistant", "Yes, two buckets of compost per bed, dug in a week before planting."),
]
TRAIN = [
    ("user", "Can you book the 9:40 train to Hamburg for Friday?"),
    ("assistant", "Booked: ICE 1004, coach 7, seat 54, departing 9:40."),
    ("user", "Perfect, and a window seat for the way back on Sunday?"),
    ("assistant", "Done: ICE 1011 on Sunday, coach 5, window seat 21."),
]


def conversation(prefix: str, *, ids: bool = True) -> list[dict]:
    """Garden talk, then two hours later train bookings (a time boundary between them)."""
    out = []
    for hours, talk, tag in ((0, GARDEN, "g"), (2, TRAIN, "t")):
        for i, (role, text) in enumerate(talk):
            m = {"role": role, "content": text, "timestamp": (START + timedelta(hours=hours, minutes=i)).isoformat()}
            if ids:
                m["message_id"] = f"{prefix}-{tag}{i}"
            out.append(m)
    return out


class LoseFirstAnswer(httpx.HTTPTransport):
    """Sends the request, then loses the first answer to a message batch: what a dropped
    connection after the server stored the batch looks like to the client."""

    lost = 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = super().handle_request(request)
        if request.url.path.endswith("/messages") and not self.lost:
            response.read()
            response.close()
            self.lost += 1
            raise httpx.ReadError("the answer was lost")
        return response


class LoseFirstAnswerAsync(httpx.AsyncHTTPTransport):
    lost = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await super().handle_async_request(request)
        if request.url.path.endswith("/messages") and not self.lost:
            await response.aread()
            await response.aclose()
            self.lost += 1
            raise httpx.ReadError("the answer was lost")
        return response


def test_a_conversation_in_and_every_view_out(memq, worker, api_url, api_key, other_tenant):
    conv = "trip"
    added = memq.add_messages(conv, conversation(conv))
    assert [r.status for r in added.results] == ["accepted"] * 8
    assert [r.message_id for r in added.results] == [m["message_id"] for m in conversation(conv)]
    again = memq.add_messages(conv, conversation(conv))  # sent again by the caller, same ids
    assert {r.status for r in again.results} == {"duplicate"}

    # no id given: the client fixes one before the first attempt, so the retry after the lost answer
    # is a duplicate of what the first attempt stored
    later = (START + timedelta(hours=3)).isoformat()
    transport = LoseFirstAnswer()
    with Client(api_url, api_key, transport=transport, retries=Retries(attempts=3, backoff=0.01)) as lossy:
        result = lossy.add_message(conv, "user", "Thanks! Please also add a seat reservation.", timestamp=later)
    assert transport.lost == 1 and result.status == "duplicate" and result.message_id

    done = memq.flush(conv, wait=60)
    assert done.flushed and done.idle is True, done
    status = memq.status(conv)
    assert status.idle and status.accepted == 9 and status.inbox == 0
    episodes = memq.episodes(conv).episodes
    assert sum(e.message_count for e in episodes) == 9 and len(episodes) >= 2  # stored once each

    found = memq.retrieve("which seat on the train to Hamburg?", conversation_id=conv, detail="high", record=False)
    assert isinstance(found, RetrieveOut) and found.memories and "seat" in found.text
    assert any("54" in m.content for memory in found.memories for m in memory.messages)
    recent = memq.recent(conv, days=3650, now=later)
    assert isinstance(recent, RecentOut) and recent.memories
    manifest = memq.manifest(conv, timezone="Europe/Berlin")
    assert isinstance(manifest, ManifestOut) and manifest.total_episodes == len(episodes)
    assert manifest.chapters and all(isinstance(c, ManifestChapterOut) for c in manifest.chapters)
    assert "CONVERSATION MANIFEST" in manifest.text
    context = memq.context(conv, max_tokens=1500)
    assert isinstance(context, ContextOut) and context.summaries and context.tokens <= 1500
    assert isinstance(memq.facts(conv, include_retired=True), ConversationFactsOut)  # none without an LLM
    assert isinstance(memq.search_facts("seat", conversation_id=conv), FactSearchOut)
    assert conv in [c.conversation_id for c in memq.iter_conversations(limit=1)]

    # export, and import into another tenant; importing again changes nothing
    exported = memq.export(conversation_id=conv)
    lines = [json.loads(line) for line in exported.splitlines()]
    assert lines[0]["type"] == "header" and lines[-1]["type"] == "end"
    streamed = io.BytesIO()
    assert memq.export_to(streamed, conversation_id=conv) == len(streamed.getvalue()) > 0
    with Client(api_url, other_tenant[1]) as theirs:
        imported = theirs.import_(exported)
        assert isinstance(imported, ImportOut) and imported.complete and imported.tenant == other_tenant[0]
        assert imported.inserted.get("episode") == len(episodes)
        assert theirs.import_(io.BytesIO(exported)).inserted.get("episode", 0) == 0
        assert [e.title for e in theirs.episodes(conv).episodes] == [e.title for e in episodes]

    gone = memq.forget(conv)
    assert gone.forgotten and gone.messages == 9
    assert not memq.forget(conv).forgotten  # idempotent
    with pytest.raises(NotFound) as unknown:
        memq.episodes(conv)
    assert unknown.value.field == "conversation_id" and unknown.value.status == 404


def test_the_async_client_end_to_end(worker, api_url, api_key):
    conv = "trip-async"

    async def main() -> None:
        transport = LoseFirstAnswerAsync()
        retries = Retries(attempts=3, backoff=0.01)
        async with AsyncClient(api_url, api_key, transport=transport, retries=retries) as memq:
            added = await memq.add_messages(conv, conversation(conv, ids=False))
            assert transport.lost == 1 and {r.status for r in added.results} == {"duplicate"}  # the retry's answer
            assert len({r.message_id for r in added.results}) == 8
            done = await memq.flush(conv, wait=60)
            assert done.idle is True
            episodes = (await memq.episodes(conv)).episodes
            assert sum(e.message_count for e in episodes) == 8
            found = await memq.retrieve("compost for the raised beds", conversation_id=conv, record=False)
            assert found.memories and isinstance(found, RetrieveOut)
            assert (await memq.manifest(conv)).chapters
            assert (await memq.context(conv)).summaries
            assert conv in [c.conversation_id async for c in memq.iter_conversations()]
            assert (await memq.forget(conv)).messages == 8
            with pytest.raises(NotFound):
                await memq.status(conv)

    asyncio.run(main())


def test_errors_carry_the_apis_type_message_and_field(memq, api_url, settings):
    with Client(api_url, "memq_not-a-key") as stranger, pytest.raises(AuthError) as refused:
        stranger.list_webhooks()
    assert (refused.value.status, refused.value.type) == (401, "unauthorized") and "API key" in refused.value.message

    with pytest.raises(BadRequest) as invalid:
        memq.add_messages(
            "errs", [{"role": "user", "content": "hi"}, {"role": "user", "content": "x", "timestamp": "?"}]
        )
    error = invalid.value
    assert (error.status, error.type, error.field) == (400, "validation", "messages[1].timestamp")

    with pytest.raises(NotFound) as unknown:
        memq.manifest("never-seen")
    assert unknown.value.type == "not_found" and unknown.value.field == "conversation_id"
    with pytest.raises(NotFound):
        memq.fact_history("00000000-0000-0000-0000-000000000000")

    memq.add_message("owned", "user", "Hello", user_id="ana")
    with pytest.raises(Conflict) as other_user:
        memq.add_message("owned", "user", "Hello again", user_id="bo")
    assert (other_user.value.status, other_user.value.field) == (409, "messages[0].user_id")
    assert other_user.value.results is not None  # per message, with the refused batch

    with pytest.raises(RequestTooLarge) as too_large:
        memq.import_(b"x" * (settings.api_max_body_bytes + 1))
    assert too_large.value.status == 413 and too_large.value.type == "request_too_large"


def test_users(memq):
    memq.add_messages("u-a", [{"role": "user", "content": "I like hiking."}], user_id="ana")
    memq.add_message("u-b", "user", "And climbing.")
    moved = memq.move_conversation("u-b", "ana")
    assert moved.changed and moved.user_id == "ana" and moved.from_user_id is None
    assert not memq.move_conversation("u-b", "ana").changed  # what a retry of it answers
    mine = memq.user_conversations("ana", changes=True)
    assert sorted(mine.conversations) == ["u-a", "u-b"] and mine.changes and mine.changes[0].conversation_id == "u-b"
    forgotten = memq.forget_user("ana")
    assert sorted(forgotten.conversations) == ["u-a", "u-b"]


@pytest.mark.usefixtures("resolver")
def test_webhooks(memq):
    created = memq.create_webhook("https://example.com/hook", events=["episode.created"])
    assert created.secret.startswith("whsec_") and created.events == ["episode.created"]
    assert [h.id for h in memq.list_webhooks().webhooks] == [created.id]
    assert memq.webhook_deliveries(failed=True).deliveries == []
    with pytest.raises(NotFound):
        memq.retry_delivery("00000000-0000-0000-0000-000000000000")
    assert memq.delete_webhook(created.id).deleted
    with pytest.raises(NotFound):
        memq.delete_webhook(created.id)
    with pytest.raises(BadRequest) as plain:
        memq.create_webhook("http://example.com/hook")
    assert "https://" in plain.value.message
    with pytest.raises(BadRequest) as private:
        memq.create_webhook("https://[fd00::1]/")
    assert (private.value.type, private.value.field, private.value.detail["rule"]) == (
        "destination_refused",
        "url",
        "private",
    )


@pytest.mark.usefixtures("resolver")
def test_the_activity_log(memq, api_url, api_key):
    hooks = [memq.create_webhook("https://example.com/hook").id for _ in range(3)]
    page = memq.list_activity(limit=2)
    assert [e.webhook_id for e in page.entries] == hooks[:0:-1] and page.next is not None
    assert {(e.action, e.actor) for e in page.entries} == {("webhook.create", api_key.split("_")[1])}
    assert [e.webhook_id for e in memq.iter_activity(action="webhook.create", limit=1)] == hooks[::-1]
    assert list(memq.iter_activity(since=datetime.now(UTC) + timedelta(hours=1))) == []

    async def newest() -> list[str | None]:
        async with AsyncClient(api_url, api_key) as client:
            return [e.webhook_id async for e in client.iter_activity(limit=2)]

    assert asyncio.run(newest()) == hooks[::-1]


def test_a_quota_refusal_is_quota_exceeded_and_never_retried(memq, producer, tenant):
    """A tenant quota refuses a batch: QuotaExceeded naming the limit and its setting, sent
    once (retrying it cannot help), and quota() shows the limit and its use."""
    from memq.client import QuotaExceeded
    from memq.shared.mailbox import quota

    quota.set_limits(producer.redis, producer.scripts, producer.settings, tenant, {"messages_per_day": 3})
    memq.add_messages("quota-c", [{"role": "user", "content": f"message {i}"} for i in range(3)])
    sent: list[object] = []
    memq._http.event_hooks["request"].append(sent.append)
    with pytest.raises(QuotaExceeded) as refused:
        memq.add_message("quota-c", "user", "a fourth")
    assert len(sent) == 1  # not retried (the client retries 429 rate_limited, never a quota)
    assert (refused.value.limit, refused.value.setting) == ("messages_per_day", "MEMQ_QUOTA_MESSAGES_PER_DAY")
    assert refused.value.status == 429 and refused.value.retry_after is None
    shown = memq.quota()
    assert (shown.messages_per_day, shown.used_today, shown.stored_messages) == (3, 3, None)


def test_health(memq):
    assert memq.health().status == "ok"
    ready = memq.ready()
    assert ready.ready and ready.checks["redis"].ok and ready.checks["postgres"].ok


def test_the_readmes_python_example_runs(worker, api_url, api_key):
    """The README's example of the client, run as a user runs it, with a worker: the message is
    in the session context's open segment first, then an episode retrieval finds."""
    import os
    import re
    import subprocess
    import sys
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text()
    (block,) = [b for b in re.findall(r"```python agent-example\n(.*?)```", readme, flags=re.S) if "memq.client" in b]
    env = {**os.environ, "MEMQ_URL": api_url, "MEMQ_KEY": api_key}
    out = subprocess.run([sys.executable, "-c", block], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "## Open segment (not yet in an episode)" in out.stdout and "Lena" in out.stdout
    titles = out.stdout.strip().splitlines()[-1]
    assert titles.startswith("[") and titles != "[]", out.stdout  # found once a worker made it an episode
