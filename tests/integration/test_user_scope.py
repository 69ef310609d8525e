"""User scope (``shared/users.py``): the first message naming a user gives the
conversation to that user, another user is refused with nothing written, moves are
audited, and every read (retrieval, recent memory, facts, the manifest, the session
context; library, HTTP API, MCP) scoped to a user sees that user's conversations only.
A user's new conversation starts with what is known of the user. Forgetting the user
leaves no row or Redis value naming the user or its conversations.

Two users, three conversations, through the real pipeline (the in-process worker)."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest
from test_forget_no_trace import pg_traces, redis_traces

from memq.shared.errors import NotFound, UserConflict, ValidationError

pytestmark = pytest.mark.integration

TALKS = {
    "trip": [
        ("user", "I am planning a hiking week in the Dolomites and want to sleep at the Rifugio Lagazuoi hut."),
        ("assistant", "The Rifugio Lagazuoi is above Passo Falzarego; book early, it fills up in July and August."),
        ("user", "Then I will book the Lagazuoi hut for the second week of July and take the cable car up."),
        ("assistant", "Good plan: the cable car runs from Falzarego every fifteen minutes in summer."),
    ],
    "garden": [
        ("user", "My balcony garden has cherry tomatoes and basil, but the basil leaves turn yellow every week."),
        ("assistant", "Yellow basil leaves usually mean overwatering; let the soil dry between waterings."),
        ("user", "I water the basil every morning, so I will water it only twice a week from now on."),
        ("assistant", "That should help the basil; the cherry tomatoes like more water in the heat."),
    ],
    "bank": [
        ("user", "I want to refinance my mortgage with the credit union, the rate there is lower than my bank's."),
        ("assistant", "A credit union refinance can save a lot; compare the closing costs of the mortgage too."),
        ("user", "The credit union quoted closing costs of two thousand, and my mortgage has twenty years left."),
        ("assistant", "Then the mortgage refinance pays off within about three years at the lower rate."),
    ],
}


@dataclass
class World:
    tenant: str
    alice: str
    bob: str
    convs: dict[str, str]  # topic -> conversation id
    producer: object

    @property
    def alice_convs(self) -> set[str]:
        return {self.convs["trip"], self.convs["garden"]}


def _messages(topic: str, start: datetime) -> list[dict]:
    return [
        {"role": role, "content": text, "timestamp": (start + timedelta(minutes=i)).isoformat()}
        for i, (role, text) in enumerate(TALKS[topic])
    ]


@pytest.fixture(scope="module")
def world(settings, worker):
    from memq.producer.client import Producer

    tenant = f"t{uuid.uuid4().hex[:12]}"
    run = uuid.uuid4().hex[:8]
    producer = Producer(settings)
    producer.settings = settings.model_copy(update={"tenant": tenant})
    alice, bob = f"alice-{run}", f"bob-{run}"
    convs = {topic: f"{topic}-{run}" for topic in TALKS}
    start = datetime.now(UTC) - timedelta(hours=5)
    owners = {"trip": alice, "garden": alice, "bank": bob}
    for i, topic in enumerate(TALKS):
        batch = _messages(topic, start + timedelta(hours=i))
        if topic == "trip":  # the user named per message
            producer.add_messages([{**m, "user_id": alice} for m in batch], conversation_id=convs[topic])
        else:  # or for the whole batch
            producer.add_messages(batch, conversation_id=convs[topic], user_id=owners[topic])
        producer.flush(convs[topic])
    for conv in convs.values():
        producer.wait_idle(conv, timeout=240)
    return World(tenant, alice, bob, convs, producer)


def _add_fact(db, settings, tenant: str, conv: str, text: str) -> str:
    from memq.shared.db.facts import add_fact
    from memq.shared.embeddings import get_embedder

    with db.transaction():
        return add_fact(
            db,
            tenant=tenant,
            conversation_id=conv,
            category="interest",
            content=text,
            embedding=get_embedder(settings).embed([text])[0],
            valid_at=None,
            episode_ids=[],
            at=datetime.now(UTC),
            run_id=str(uuid.uuid4()),
            model="test",
        )


@pytest.fixture(scope="module")
def facts(world, settings):
    from memq.shared.connections import pg_connect

    with pg_connect(settings, tenant=world.tenant, autocommit=True) as conn:
        _add_fact(conn, settings, world.tenant, world.convs["trip"], "Alice loves hiking in the Dolomites mountains.")
        _add_fact(conn, settings, world.tenant, world.convs["bank"], "Bob is refinancing his mortgage at a union.")
    return True


def test_the_first_message_sets_the_user(world, db, settings):
    from memq.shared.users import owner, state_owner, user_conversations

    for topic, conv in world.convs.items():
        expected = world.bob if topic == "bank" else world.alice
        assert owner(db, world.tenant, conv) == expected
        assert state_owner(world.producer.redis, settings, world.tenant, conv) == expected
    assert set(user_conversations(db, world.tenant, world.alice)) == world.alice_convs
    assert user_conversations(db, world.tenant, world.bob) == [world.convs["bank"]]


def test_another_user_is_refused_and_nothing_is_written(world, settings):
    producer = world.producer
    conv = world.convs["trip"]
    keys = producer.keys(conv)
    before = (producer.redis.llen(keys.inbox), producer.redis.zcard(keys.ids), producer.redis.hget(keys.state, "seq"))
    with pytest.raises(UserConflict) as refused:
        producer.add_messages(
            [{"role": "user", "content": "sneaking in", "message_id": "intruder-1"}],
            conversation_id=conv,
            user_id=world.bob,
        )
    text = str(refused.value)
    assert world.alice in text and world.bob in text and "move" in text
    assert refused.value.field == "user_id" and [r.status for r in refused.value.results] == ["rejected"]
    after = (producer.redis.llen(keys.inbox), producer.redis.zcard(keys.ids), producer.redis.hget(keys.state, "seq"))
    assert after == before
    assert producer.redis.zscore(keys.ids, "intruder-1") is None
    # two users for one conversation in one batch: refused before anything is sent
    with pytest.raises(ValidationError, match="one user"):
        producer.add_messages(
            [
                {"role": "user", "content": "a", "user_id": "u1"},
                {"role": "user", "content": "b", "user_id": "u2"},
            ],
            conversation_id=f"fresh-{uuid.uuid4().hex[:6]}",
        )
    with pytest.raises(ValidationError, match="user_id"):
        producer.add_messages([{"role": "user", "content": "a"}], conversation_id="x", user_id="no spaces")


def test_a_move_is_audited_and_decides_who_may_write(world, db, settings):
    from memq.shared.users import move_conversation, state_owner, user_changes

    producer = world.producer
    conv = f"moving-{uuid.uuid4().hex[:8]}"
    carol, dave = f"carol-{uuid.uuid4().hex[:6]}", f"dave-{uuid.uuid4().hex[:6]}"
    producer.add_messages([{"role": "user", "content": "hello there"}], conversation_id=conv, user_id=carol)
    moved = move_conversation(
        producer.redis, db, settings, tenant=world.tenant, conversation_id=conv, user_id=dave, actor="test"
    )
    assert (moved.from_user_id, moved.to_user_id, moved.changed) == (carol, dave, True)
    assert state_owner(producer.redis, settings, world.tenant, conv) == dave
    with pytest.raises(UserConflict, match=dave):
        producer.add_messages([{"role": "user", "content": "carol again"}], conversation_id=conv, user_id=carol)
    assert producer.add_messages([{"role": "user", "content": "dave here"}], conversation_id=conv, user_id=dave)[
        0
    ].accepted
    again = move_conversation(producer.redis, db, settings, tenant=world.tenant, conversation_id=conv, user_id=dave)
    assert not again.changed  # nothing audited
    changes = user_changes(db, world.tenant, conversation_id=conv)
    assert [(c["from_user_id"], c["user_id"], c["actor"]) for c in changes] == [(carol, dave, "test")]
    assert user_changes(db, world.tenant, user_id=carol) == changes
    with pytest.raises(NotFound):
        move_conversation(producer.redis, db, settings, tenant=world.tenant, conversation_id="never-seen", user_id=dave)
    producer.flush(conv)
    producer.wait_idle(conv, timeout=240)
    from memq.shared.users import owner

    assert owner(db, world.tenant, conv) == dave  # the worker kept the moved owner


def test_a_returning_conversation_keeps_its_user(world, db, settings):
    """Its Redis state expired (deleted here): the next drain's sync gives it PostgreSQL's user back."""
    from memq.shared.users import owner, state_owner

    producer = world.producer
    conv, ivy = f"returning-{uuid.uuid4().hex[:8]}", f"ivy-{uuid.uuid4().hex[:6]}"
    talk = [{"role": "user", "content": f"message number {i} about the weather"} for i in range(3)]
    producer.add_messages(talk, conversation_id=conv, user_id=ivy)
    producer.flush(conv)
    producer.wait_idle(conv, timeout=240)
    assert owner(db, world.tenant, conv) == ivy
    producer.redis.delete(producer.keys(conv).state)
    producer.add_messages([{"role": "user", "content": "back again after a long while"}], conversation_id=conv)
    producer.flush(conv)
    producer.wait_idle(conv, timeout=240)
    assert state_owner(producer.redis, settings, world.tenant, conv) == ivy
    with pytest.raises(UserConflict):
        producer.add_messages([{"role": "user", "content": "not ivy"}], conversation_id=conv, user_id="jack")


def test_retrieval_recent_and_facts_scoped_to_a_user(world, facts, db, settings):
    from memq.memory.retrieval.facts import find_facts
    from memq.memory.retrieval.service import recent_memory, retrieve_memory

    for query in ("Lagazuoi hut in the Dolomites", "mortgage refinance credit union", "basil watering"):
        got = retrieve_memory(query, tenant=world.tenant, user_id=world.alice, settings=settings, conn=db, record=False)
        assert {m["conversation_id"] for m in got.to_json()["memories"]} <= world.alice_convs
        assert "mortgage" not in got.text and "credit union" not in got.text
    trip = retrieve_memory(
        "Lagazuoi hut", tenant=world.tenant, user_id=world.alice, settings=settings, conn=db, record=False
    )
    assert "Lagazuoi" in trip.text
    bobs = retrieve_memory(
        "Lagazuoi hut Dolomites", tenant=world.tenant, user_id=world.bob, settings=settings, conn=db, record=False
    )
    assert "Lagazuoi" not in bobs.text and "Dolomites" not in bobs.text
    # a conversation of another user named explicitly is not searched either
    narrowed = retrieve_memory(
        "mortgage",
        tenant=world.tenant,
        user_id=world.alice,
        conversation_ids=[world.convs["bank"]],
        settings=settings,
        conn=db,
        record=False,
    )
    assert narrowed.to_json()["memories"] == []
    # tenant-wide stays available
    wide = retrieve_memory("mortgage refinance", tenant=world.tenant, settings=settings, conn=db, record=False)
    assert world.convs["bank"] in {m["conversation_id"] for m in wide.to_json()["memories"]}

    recent = recent_memory(user_id=world.alice, tenant=world.tenant, settings=settings, conn=db)
    assert {r["conversation_id"] for r in recent.records} == world.alice_convs
    assert "mortgage" not in recent.text

    _, found = find_facts(
        "hiking mountains mortgage", tenant=world.tenant, settings=settings, conn=db, user_id=world.bob
    )
    assert [f.conversation_id for f, _, _ in found] == [world.convs["bank"]]
    _, found = find_facts("hiking mountains", tenant=world.tenant, settings=settings, conn=db, user_id=world.alice)
    assert [f.conversation_id for f, _, _ in found] == [world.convs["trip"]]


def test_manifest_and_context_scoped_to_a_user_and_a_new_session_starts_with_the_user(world, facts, db, settings):
    from memq.memory.context.service import manifest, session_context
    from memq.shared.db.episodes import list_episodes

    titles = {c: [e.title for e in list_episodes(db, world.tenant, c)] for c in world.convs.values()}
    bob_titles = titles[world.convs["bank"]]
    alice_titles = [t for c in world.alice_convs for t in titles[c]]
    assert alice_titles and bob_titles

    new = f"new-{uuid.uuid4().hex[:8]}"
    world.producer.add_messages(
        [{"role": "user", "content": "Any tips on boots for hiking in the mountains?"}],
        conversation_id=new,
        user_id=world.alice,
    )  # no episode yet: a new session
    tree = manifest(
        new, user_id=world.alice, tenant=world.tenant, settings=settings, conn=db, client=world.producer.redis
    )
    assert all(t[:15] in tree.text for t in alice_titles), tree.text
    assert not any(t[:15] in tree.text for t in bob_titles), tree.text

    embed_calls: list[str] = []

    def embed(text):
        from memq.shared.embeddings import get_embedder

        embed_calls.append(text)
        return get_embedder(settings).embed([text])[0]

    context = session_context(
        new, tenant=world.tenant, settings=settings, conn=db, client=world.producer.redis, embed=embed
    )  # no user given: the conversation's (from its Redis state) is used, it has no episode yet
    assert "Lagazuoi" in context.text or "basil" in context.text
    assert "mortgage" not in context.text and "Bob" not in context.text
    assert "Alice loves hiking" in context.text
    with pytest.raises(ValidationError, match="belongs to user"):
        session_context(
            world.convs["bank"],
            user_id=world.alice,
            tenant=world.tenant,
            settings=settings,
            conn=db,
            client=world.producer.redis,
        )
    explicit = session_context(
        world.convs["garden"],
        user_id=world.alice,
        tenant=world.tenant,
        settings=settings,
        conn=db,
        client=world.producer.redis,
        embed=embed,
    )
    assert "Lagazuoi" in explicit.text and "mortgage" not in explicit.text
    plain = session_context(
        world.convs["garden"], tenant=world.tenant, settings=settings, conn=db, client=world.producer.redis
    )
    assert "Lagazuoi" not in plain.text  # an existing conversation without a user scope: itself only


@pytest.fixture(scope="module")
def api(settings):
    from fastapi.testclient import TestClient

    from memq.api.app import create_app
    from memq.api.services import Services

    svc = Services.start(settings)
    with TestClient(create_app(settings, services=svc), base_url="http://127.0.0.1") as c:
        yield c
    svc.close()


def test_the_api_takes_the_user_scope(world, facts, db, settings, api):
    from memq.shared.db.api_keys import create_key

    key, _ = create_key(db, world.tenant, "user-scope")
    auth = {"Authorization": f"Bearer {key.key}"}
    got = api.post(
        "/v1/memory/retrieve?format=json",
        headers=auth,
        json={"query": "mortgage refinance Lagazuoi", "user_id": world.alice, "record": False},
    )
    assert got.status_code == 200, got.text
    assert {m["conversation_id"] for m in got.json()["memories"]} <= world.alice_convs
    recent = api.post("/v1/memory/recent?format=json", headers=auth, json={"user_id": world.bob})
    assert recent.status_code == 200 and {m["conversation_id"] for m in recent.json()["memories"]} == {
        world.convs["bank"]
    }
    found = api.post("/v1/facts/search", headers=auth, json={"query": "hiking", "user_id": world.alice})
    assert found.status_code == 200 and [f["conversation_id"] for f in found.json()["facts"]] == [world.convs["trip"]]
    ctx = api.get(f"/v1/conversations/{world.convs['garden']}/context", headers=auth, params={"user_id": world.alice})
    assert ctx.status_code == 200 and "Lagazuoi" in ctx.json()["text"] and "mortgage" not in ctx.json()["text"]
    tree = api.get(f"/v1/conversations/{world.convs['garden']}/manifest", headers=auth, params={"user_id": world.bob})
    assert tree.status_code == 400 and "belongs to user" in tree.text

    conv = f"api-{uuid.uuid4().hex[:8]}"
    first = api.post(
        f"/v1/conversations/{conv}/messages",
        headers=auth,
        json={"messages": [{"role": "user", "content": "hi"}], "user_id": "erin"},
    )
    assert first.status_code == 202, first.text
    refused = api.post(
        f"/v1/conversations/{conv}/messages", headers=auth, json={"role": "user", "content": "me", "user_id": "frank"}
    )
    assert refused.status_code == 409 and "erin" in refused.text and "user_id" in refused.text
    moved = api.post(f"/v1/conversations/{conv}/user", headers=auth, json={"user_id": "frank"})
    assert moved.status_code == 200 and moved.json() == {
        "conversation_id": conv,
        "from_user_id": "erin",
        "user_id": "frank",
        "changed": True,
    }
    listed = api.get("/v1/users/frank/conversations", headers=auth, params={"changes": "true"})
    assert listed.json()["conversations"] == [conv] and listed.json()["changes"][0]["from_user_id"] == "erin"
    gone = api.delete("/v1/users/frank", headers=auth)
    assert gone.status_code == 200 and gone.json()["conversations"] == [conv]
    assert api.get("/v1/users/frank/conversations", headers=auth).json()["conversations"] == []
    schema = api.get("/openapi.json").json()
    assert "user_id" in schema["components"]["schemas"]["RetrieveIn"]["properties"]
    assert "/v1/users/{user_id}" in schema["paths"]


def test_the_mcp_tools_take_the_user_scope(world, facts, db, settings):
    from memq import mcp_server
    from memq.memory import Memory

    call = Memory.open(settings, world.tenant)
    found = mcp_server.retrieve_memory(call, "mortgage refinance credit union", user_id=world.alice)
    assert "mortgage" not in found and "credit union" not in found
    assert "Lagazuoi" in mcp_server.retrieve_memory(call, "Lagazuoi hut", user_id=world.alice)
    assert "Bob is refinancing" in mcp_server.search_facts(call, "mortgage", user_id=world.bob)
    assert "Bob" not in mcp_server.search_facts(call, "mortgage", user_id=world.alice)
    recent = mcp_server.recent_memory(call, user_id=world.bob)
    assert "mortgage" in recent and "Lagazuoi" not in recent
    context = mcp_server.session_context(call, world.convs["garden"], user_id=world.alice)
    assert "Lagazuoi" in context and "mortgage" not in context
    assert "Lagazuoi" not in mcp_server.manifest(call, world.convs["bank"], user_id=world.bob)
    call.close()


def test_the_cli_takes_the_user(world, db, settings):
    from click.testing import CliRunner

    from memq.cli import main
    from memq.shared.users import owner, user_conversations

    run = CliRunner()
    t = ["--tenant", world.tenant]
    conv, gina, hal = f"cli-{uuid.uuid4().hex[:8]}", f"gina-{uuid.uuid4().hex[:6]}", f"hal-{uuid.uuid4().hex[:6]}"
    sent = run.invoke(main, ["send", conv, "user", "hello from the shell", "--user", gina, *t])
    assert sent.exit_code == 0 and sent.output.startswith("accepted"), sent.output
    refused = run.invoke(main, ["send", conv, "user", "me too", "--user", hal, *t])
    assert refused.exit_code != 0 and gina in refused.output, refused.output
    moved = run.invoke(main, ["conversations", "move", conv, "--user", hal, *t])
    assert moved.exit_code == 0 and f"{gina} -> {hal}" in moved.output, moved.output
    assert owner(db, world.tenant, conv) == hal
    listed = run.invoke(main, ["conversations", "list", "--user", gina, "--changes", "--json", *t])
    assert listed.exit_code == 0 and json.loads(listed.output)["changes"][0]["user_id"] == hal, listed.output
    recent = run.invoke(main, ["recent", "--user", world.bob, "--json", *t])
    assert recent.exit_code == 0 and {m["conversation_id"] for m in json.loads(recent.output)["memories"]} == {
        world.convs["bank"]
    }, recent.output
    found = run.invoke(
        main, ["retrieve", world.convs["garden"], "Lagazuoi hut", "--user", world.alice, "--no-record", *t]
    )
    assert found.exit_code == 0 and "Lagazuoi" in found.output, found.output
    context = run.invoke(main, ["context", world.convs["garden"], "--user", world.alice, *t])
    assert context.exit_code == 0 and "Lagazuoi" in context.output, context.output
    forgot = run.invoke(main, ["forget", "--user", hal, "--yes", *t])
    assert forgot.exit_code == 0 and "1 conversations" in forgot.output, forgot.output
    assert user_conversations(db, world.tenant, hal) == []
    assert run.invoke(main, ["forget", *t, "--yes"]).exit_code == 2  # a conversation or --user


def test_a_user_whose_messages_no_worker_drained_yet_is_forgotten_too(world, db, settings, monkeypatch):
    """PostgreSQL learns a conversation's user when a worker drains it; until then only
    the Redis state says whose it is, and forgetting the user must find it there."""
    from memq.shared import publisher
    from memq.shared.users import forget_user, mailbox_user_conversations, user_conversations

    monkeypatch.setattr(publisher, "drain", lambda *args, **kwargs: None)  # no worker hears of it
    hal, conv = f"hal-{uuid.uuid4().hex[:8]}", f"undrained-{uuid.uuid4().hex[:8]}"
    world.producer.add_messages(
        [{"role": "user", "content": "The Kestrel prototype flies on Tuesday."}], conversation_id=conv, user_id=hal
    )
    assert user_conversations(db, world.tenant, hal) == []
    assert mailbox_user_conversations(world.producer.redis, settings, world.tenant, hal) == [conv]
    done = forget_user(world.producer.redis, db, settings, tenant=world.tenant, user_id=hal)
    assert done.conversations == [conv]
    assert redis_traces(world.producer.redis, [conv, hal, "Kestrel"]) == []
    assert pg_traces(db, [conv, hal]) == []


def test_forgetting_a_user_leaves_no_trace(world, facts, db, settings):
    """Last: forgets Alice."""
    from memq.shared.users import forget_user, move_conversation

    # an audit row naming Alice for a conversation that is Bob's now
    extra = f"handed-{uuid.uuid4().hex[:8]}"
    world.producer.add_messages([{"role": "user", "content": "x"}], conversation_id=extra, user_id=world.alice)
    move_conversation(world.producer.redis, db, settings, tenant=world.tenant, conversation_id=extra, user_id=world.bob)
    needles = [world.alice, world.convs["trip"], world.convs["garden"]]
    assert pg_traces(db, needles) and redis_traces(world.producer.redis, needles)
    done = forget_user(world.producer.redis, db, settings, tenant=world.tenant, user_id=world.alice)
    assert world.alice_convs <= set(done.conversations) and done.episodes >= 2 and done.audit_rows >= 1
    assert pg_traces(db, needles) == []
    assert redis_traces(world.producer.redis, needles) == []
    # Bob's conversation is untouched
    from memq.shared.users import user_conversations

    assert world.convs["bank"] in user_conversations(db, world.tenant, world.bob)
