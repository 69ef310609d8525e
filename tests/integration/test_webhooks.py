"""Webhooks against a real HTTP receiver on 127.0.0.1 (a threaded ``http.server``): signed
deliveries of episodes made by the real in-process worker, ids only unless the endpoint
opted in to content, a 500 retried until it succeeds, a dead endpoint failing after its
attempts while episodes keep being created, ``memq webhooks retry`` sending again, and a
forgotten conversation's pending deliveries sent without content."""

from __future__ import annotations

import json
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from click.testing import CliRunner
from waiting import wait_until

from memq.shared.webhooks import events
from memq.shared.webhooks.destinations import Allowance, Destinations
from memq.shared.webhooks.endpoints import add_endpoint
from memq.shared.webhooks.signing import verify

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("resolver")]

# The suite's allowance (MEMQ_WEBHOOK_ALLOW_DESTINATIONS): its receivers listen on 127.0.0.1.
OPEN = Destinations(Allowance.parse("127.0.0.1"))
WAIT = 60.0  # seconds a delivery (its retries included) may take


class Receiver:
    """Answers each request with the next scripted status (200 once the script is used up)."""

    def __init__(self, *statuses: int) -> None:
        self.statuses = list(statuses)
        self.requests: list[tuple[dict[str, str], bytes]] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["content-length"]))
                receiver.requests.append(({k.lower(): v for k, v in self.headers.items()}, body))
                status = receiver.statuses.pop(0) if receiver.statuses else 200
                self.send_response(status)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def bodies(self) -> list[dict]:
        return [json.loads(body) for _, body in self.requests]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(autouse=True)
def no_pending_left(db, tenant) -> Iterator[None]:
    """The test's endpoints and deliveries go with it: no later sweep retries them."""
    yield
    db.execute("DELETE FROM webhook_endpoint WHERE tenant_id = %s", (tenant,))


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


@pytest.fixture
def fast_retries(settings):
    saved = settings.model_dump(include={"webhook_retry_backoff_seconds", "webhook_retry_backoff_max_seconds"})
    saved["webhook_max_attempts"] = settings.webhook_max_attempts
    settings.webhook_retry_backoff_seconds = 0.05
    settings.webhook_retry_backoff_max_seconds = 0.2
    settings.webhook_max_attempts = 3
    yield settings
    for name, value in saved.items():
        setattr(settings, name, value)


def dead_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/hook"  # nothing listens: connection refused


def statuses(db, tenant: str) -> list[tuple[str, str, int, str | None]]:
    return db.execute(
        "SELECT id::text, status, attempts, last_error FROM webhook_delivery WHERE tenant_id = %s ORDER BY created_at",
        (tenant,),
    ).fetchall()


def talk(producer, conv: str, n: int = 4) -> None:
    producer.add_messages(
        [
            {"role": "user" if i % 2 else "assistant", "content": f"{conv} planning the hike, step {i}"}
            for i in range(n)
        ],
        conversation_id=conv,
    )
    producer.flush(conv)


def test_an_episode_is_delivered_signed_with_content_only_when_opted_in(worker, producer, db, tenant, receiver):
    _, plain_secret = add_endpoint(db, tenant, receiver.url + "?plain", OPEN, ["episode.created"])
    _, content_secret = add_endpoint(db, tenant, receiver.url + "?content", OPEN, ["episode.created"], content=True)
    talk(producer, "hike")
    producer.wait_idle("hike", timeout=60)
    wait_until(lambda: len(receiver.requests) >= 2 and receiver.requests, WAIT)
    episode_id = db.execute("SELECT id::text FROM episodic_memory WHERE tenant_id = %s", (tenant,)).fetchone()[0]
    bodies = {}
    for headers, body in receiver.requests:
        secret = content_secret if "content" in (b := json.loads(body)) else plain_secret
        assert verify(secret, headers["memq-signature"], body, now=time.time())
        assert headers["memq-event"] == "episode.created" and headers["memq-event-id"] == b["id"]
        bodies["content" in b] = b
    assert bodies[False]["id"] == bodies[True]["id"]  # one event, one id for de-duplication
    assert bodies[False]["data"] == {
        "conversation_id": "hike",
        "episode_id": episode_id,
        "message_count": 4,
        "first_seq": 1,
        "last_seq": 4,
    }
    assert bodies[False]["tenant"] == tenant and "content" not in bodies[False]
    assert set(bodies[True]["content"]) == {"title", "summary"} and bodies[True]["content"]["summary"]
    wait_until(lambda: [s for _, s, _, _ in statuses(db, tenant)] == ["delivered", "delivered"], WAIT)


def test_a_500_is_retried_until_delivered(worker, db, tenant, fast_retries):
    receiver = Receiver(500, 503)
    try:
        add_endpoint(db, tenant, receiver.url, OPEN, ["fact.created"])
        with db.transaction():
            events.emit(db, "fact.created", tenant, {"fact_id": "f1"}, conversation_id="c")
        wait_until(lambda: [(s, n) for _, s, n, _ in statuses(db, tenant)] == [("delivered", 3)], WAIT)
        assert len(receiver.requests) == 3
        assert len({h["memq-event-id"] for h, _ in receiver.requests}) == 1  # the same event each time
    finally:
        receiver.close()


def test_a_delivery_goes_to_the_address_checked_with_the_host_named(worker, db, tenant, receiver, resolver):
    """The name resolves only through the test's table (the system resolver knows nothing of
    it): the delivery arriving proves it connected to the checked address."""
    resolver["hooks.pinned.test"] = ["127.0.0.1"]
    port = receiver.server.server_address[1]
    add_endpoint(db, tenant, f"http://hooks.pinned.test:{port}/hook", OPEN, ["fact.created"])
    with db.transaction():
        events.emit(db, "fact.created", tenant, {"fact_id": "f1"}, conversation_id="c")
    wait_until(lambda: [s for _, s, _, _ in statuses(db, tenant)] == ["delivered"], WAIT)
    assert [h["host"] for h, _ in receiver.requests] == [f"hooks.pinned.test:{port}"]


@pytest.mark.parametrize(
    ("address", "rule"),
    [
        ("10.0.0.7", "private"),
        ("169.254.169.254", "link-local"),
        ("::ffff:127.0.0.2", "loopback"),
        ("fd00::5", "private"),
    ],
)
def test_a_name_that_starts_resolving_to_a_forbidden_address_is_refused_at_delivery(
    worker, db, tenant, receiver, resolver, address, rule
):
    resolver["hooks.rebind.test"] = ["127.0.0.1"]  # opened for the suite when registered
    url = f"http://hooks.rebind.test:{receiver.server.server_address[1]}/hook"
    add_endpoint(db, tenant, url, OPEN, ["fact.created"])
    resolver["hooks.rebind.test"] = [address]  # then the name moves
    with db.transaction():
        events.emit(db, "fact.created", tenant, {"fact_id": "f1"}, conversation_id="c")
    ((_, status, attempts, error),) = wait_until(
        lambda: (rows := statuses(db, tenant)) and rows[0][1] != "pending" and rows, WAIT
    )
    assert (status, attempts) == ("failed", 1)  # refused at once, never retried
    assert error is not None  # a failed delivery says why
    assert error.startswith("refused: hooks.rebind.test resolves to") and rule in error, error
    assert receiver.requests == []


def test_a_dead_endpoint_fails_after_its_retries_without_slowing_episodes_and_can_be_retried(
    worker, producer, db, tenant, fast_retries, receiver
):
    from memq.cli import main

    add_endpoint(db, tenant, dead_url(), OPEN, ["episode.created"])
    for conv in ("dead-1", "dead-2", "dead-3"):
        talk(producer, conv)
    for conv in ("dead-1", "dead-2", "dead-3"):
        producer.wait_idle(conv, timeout=60)
    assert db.execute("SELECT count(*) FROM episodic_memory WHERE tenant_id = %s", (tenant,)).fetchone()[0] == 3
    failed = wait_until(lambda: (rows := statuses(db, tenant)) and all(r[1] == "failed" for r in rows) and rows, WAIT)
    assert len(failed) == 3 and all(n == 3 and "refused" in (error or "").lower() for _, _, n, error in failed)

    runner = CliRunner()
    listed = runner.invoke(main, ["webhooks", "deliveries", "--failed", "--tenant", tenant])
    assert listed.exit_code == 0, listed.output
    assert {json.loads(line)["id"] for line in listed.output.splitlines()} == {r[0] for r in failed}

    db.execute("UPDATE webhook_endpoint SET url = %s WHERE tenant_id = %s", (receiver.url, tenant))  # back up
    retried = runner.invoke(main, ["webhooks", "retry", failed[0][0], "--tenant", tenant])
    assert retried.exit_code == 0, retried.output
    wait_until(lambda: [s for i, s, _, _ in statuses(db, tenant) if i == failed[0][0]] == ["delivered"], WAIT)
    assert len(receiver.requests) == 1


def test_a_forgotten_conversations_pending_deliveries_carry_no_content(worker, producer, db, settings, tenant):
    from memq.shared.forget import forget_conversation
    from memq.worker.tasks.webhooks import webhook_delivery

    receiver = Receiver(500)  # the first attempt fails: the delivery waits for its retry
    saved = settings.webhook_retry_backoff_seconds
    settings.webhook_retry_backoff_seconds = 60.0
    try:
        add_endpoint(db, tenant, receiver.url, OPEN, ["episode.created", "conversation.forgotten"], content=True)
        talk(producer, "secret-plans")
        producer.wait_idle("secret-plans", timeout=60)
        pending = wait_until(lambda: [r for r in statuses(db, tenant) if r[2] == 1], WAIT)
        assert "content" in receiver.bodies()[0]  # sent before the forget, with content

        forget_conversation(producer.redis, db, producer.keys("secret-plans"))
        payloads = [
            row[0] for row in db.execute("SELECT payload FROM webhook_delivery WHERE tenant_id = %s", (tenant,))
        ]
        assert payloads and all("content" not in p for p in payloads)
        forgotten = [p for p in payloads if p["event"] == "conversation.forgotten"]
        assert forgotten and forgotten[0]["data"] == {"conversation_id": "secret-plans", "episodes": 1, "messages": 4}

        assert webhook_delivery(pending[0][0])["status"] == "delivered"  # the retry, now
        assert "content" not in receiver.bodies()[-1] and receiver.bodies()[-1]["event"] == "episode.created"
        wait_until(lambda: any(b["event"] == "conversation.forgotten" for b in receiver.bodies()), WAIT)
    finally:
        settings.webhook_retry_backoff_seconds = saved
        receiver.close()


def test_fact_events_carry_the_text_only_when_opted_in(worker, db, tenant, receiver):
    import numpy as np

    from memq.shared.db.facts import add_fact, reinforce_fact, retire_fact

    wanted = ["fact.created", "fact.updated", "fact.invalidated"]
    add_endpoint(db, tenant, receiver.url + "?content", OPEN, wanted, True)
    add_endpoint(db, tenant, receiver.url + "?plain", OPEN, ["fact.created"])
    at, vector = datetime.now(UTC), np.ones(384, dtype=np.float32) / np.sqrt(384)
    common = {"tenant": tenant, "conversation_id": "facts", "at": at, "run_id": str(uuid.uuid4())}
    with db.transaction():
        fact_id = add_fact(
            db, **common, category="preference", content="prefers window seats", embedding=vector,
            valid_at=None, episode_ids=[], model=None,
        )  # fmt: skip
        reinforce_fact(db, fact_id, **common, episode_ids=[])
        retire_fact(db, fact_id, **common, invalid_at=at, episode_ids=[])
    wait_until(lambda: len(receiver.requests) == 4, WAIT)
    sent = {(b["event"], "content" in b): b for b in receiver.bodies()}
    assert set(sent) == {
        ("fact.created", True),
        ("fact.created", False),
        ("fact.updated", True),
        ("fact.invalidated", True),
    }
    assert all(b["data"]["fact_id"] == fact_id and b["data"]["conversation_id"] == "facts" for b in sent.values())
    assert sent["fact.invalidated", True]["content"] == {"text": "prefers window seats"}


def test_the_cli_adds_lists_and_removes_endpoints(db, tenant):
    from memq.cli import main

    runner = CliRunner()
    added = runner.invoke(
        main,
        ["webhooks", "add", "--tenant", tenant, "https://example.com/h", "--events", "episode.created,fact.created"],
    )
    assert added.exit_code == 0, added.output
    hook = json.loads(added.stdout)
    assert hook["secret"].startswith("whsec_") and hook["events"] == ["episode.created", "fact.created"]
    listed = runner.invoke(main, ["webhooks", "list", "--tenant", tenant])
    assert [json.loads(line)["id"] for line in listed.output.splitlines()] == [hook["id"]]
    refused = runner.invoke(main, ["webhooks", "add", "--tenant", tenant, "http://example.com/h"])
    assert refused.exit_code != 0 and "must use https://" in refused.output
    assert runner.invoke(main, ["webhooks", "remove", "--tenant", tenant, hook["id"]]).exit_code == 0
    assert runner.invoke(main, ["webhooks", "list", "--tenant", tenant]).output == ""


def test_a_quarantined_message_is_announced_with_ids_only(worker, producer, db, tenant, receiver, monkeypatch):
    from test_quarantine import Allergic

    from memq.worker import resources

    monkeypatch.setattr(resources, "detector", lambda: Allergic())
    monkeypatch.setattr(resources.settings(), "retry_backoff_seconds", 0.1)
    monkeypatch.setattr(resources.settings(), "retry_backoff_max_seconds", 0.5)
    add_endpoint(db, tenant, receiver.url, OPEN, ["conversation.quarantined"], content=True)
    texts = ["hello there, a first message", "POISON pill here", "a third message"]
    producer.add_messages(
        [{"role": "user", "content": t, "message_id": f"q{i}"} for i, t in enumerate(texts)], conversation_id="q"
    )
    producer.flush("q")
    producer.wait_idle("q", timeout=60)
    (body,) = wait_until(lambda: receiver.bodies(), WAIT)
    assert body["event"] == "conversation.quarantined" and "content" not in body
    assert body["data"] == {"conversation_id": "q", "kind": "message", "item": "q1", "failures": 3}


def test_forgetting_a_user_is_announced(producer, db, settings, tenant):
    from memq.shared.users import forget_user

    add_endpoint(db, tenant, "https://example.com/hook", OPEN, ["user.forgotten"])
    forget_user(producer.redis, db, settings, tenant=tenant, user_id="zed")
    (row,) = db.execute("SELECT event, payload FROM webhook_delivery WHERE tenant_id = %s", (tenant,)).fetchall()
    assert row[0] == "user.forgotten"
    assert row[1]["data"] == {"user_id": "zed", "conversations": 0, "episodes": 0}


def test_a_quarantine_while_postgresql_is_down_is_announced_once_it_answers(producer, db, settings, tenant):
    """The quarantine lives in Redis and often comes of a PostgreSQL outage: its event waits
    in Redis, the sweep records it (same event id) when PostgreSQL answers, and forgetting
    the conversation takes what still waits."""
    from memq.shared.forget import forget_conversation
    from memq.shared.mailbox.scripts import Scripts
    from memq.shared.webhooks import deferred

    add_endpoint(db, tenant, "https://example.com/hook", OPEN, ["conversation.quarantined"])
    with socket.socket() as s:  # a port nothing listens on: PostgreSQL refuses at once
        s.bind(("127.0.0.1", 0))
        dead_port = s.getsockname()[1]
    down = settings.model_copy(update={"database_url": f"postgresql://memq@127.0.0.1:{dead_port}/memq"})
    scripts = Scripts.register(producer.redis)
    keys = producer.keys("qdown", tenant)
    events.record_quarantined(down, tenant, "qdown", kind="message", item="m1", failures=3, deferred_to=(scripts, keys))
    (waiting,) = producer.redis.hvals(keys.webhooks)
    assert producer.redis.zscore(keys.shard.webhooks, keys.member) is not None
    assert db.execute("SELECT count(*) FROM webhook_delivery WHERE tenant_id = %s", (tenant,)).fetchone() == (0,)

    assert deferred.record_deferred(producer.redis, scripts, db, settings) >= 1
    (row,) = db.execute("SELECT event_id, payload FROM webhook_delivery WHERE tenant_id = %s", (tenant,)).fetchall()
    assert str(row[0]) == json.loads(waiting)["body"]["id"] == row[1]["id"]
    assert row[1]["data"] == {"conversation_id": "qdown", "kind": "message", "item": "m1", "failures": 3}
    assert not producer.redis.exists(keys.webhooks)
    assert producer.redis.zscore(keys.shard.webhooks, keys.member) is None

    events.record_quarantined(down, tenant, "qdown", kind="message", item="m2", failures=3, deferred_to=(scripts, keys))
    assert producer.redis.hlen(keys.webhooks) == 1
    forget_conversation(producer.redis, db, keys)
    assert not producer.redis.exists(keys.webhooks)
    assert producer.redis.zscore(keys.shard.webhooks, keys.member) is None
