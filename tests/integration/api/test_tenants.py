"""Tenant isolation over every endpoint, the MCP tools and the CLI: a second tenant's key
can neither read, search, list, manifest, context, flush nor delete the first's data; a
conversation id of another tenant behaves exactly like one that does not exist. And the
keys: a revoked or wrong key is a 401 that says nothing of what exists, and keys never
reach the logs."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from click.testing import CliRunner
from helpers import START, messages
from mcp.types import TextContent
from waiting import wait_until

from memq.cli import main

pytestmark = pytest.mark.integration

CONV = "shared-name"


@pytest.fixture
def stored(client, auth, worker, producer, tenant):
    """The first tenant's conversation, in episodes."""
    client.post(f"/v1/conversations/{CONV}/messages", json={"messages": messages()}, headers=auth)
    client.post(f"/v1/conversations/{CONV}/flush", headers=auth)
    producer.wait_idle(CONV, tenant=tenant, timeout=120)
    episodes = client.get(f"/v1/conversations/{CONV}/episodes", headers=auth).json()["episodes"]
    assert len(episodes) == 2
    return episodes


def test_another_tenant_sees_nothing_and_changes_nothing(client, auth, stranger, stored, producer, tenant):
    _, theirs = stranger
    url = f"/v1/conversations/{CONV}"
    unknown = "/v1/conversations/never-existed"
    now = (START + timedelta(days=1)).isoformat()
    answers: dict[str, list[tuple[int, dict]]] = {}
    for path in (url, unknown):  # another tenant's conversation looks exactly like one that does not exist
        got = answers.setdefault(path, [])
        for method, sub in (
            ("get", "episodes"),
            ("get", "manifest"),
            ("get", "context"),
            ("get", "facts"),
            ("get", "status"),
            ("post", "flush"),
        ):
            r = getattr(client, method)(f"{path}/{sub}", headers=theirs)
            got.append((r.status_code, r.json()))
        assert client.delete(path, headers=theirs).json()["forgotten"] is False
    name = CONV
    for (code, theirs_answer), (_, unknown_answer) in zip(answers[url], answers[unknown], strict=True):
        assert code == 404 and theirs_answer["error"]["type"] == "not_found"
        assert theirs_answer["error"]["field"] == "conversation_id" and repr(name) in theirs_answer["error"]["message"]
        # identical but for the id it names
        assert theirs_answer["error"]["message"].replace(repr(name), "X") == unknown_answer["error"]["message"].replace(
            repr("never-existed"), "X"
        )
    for scope in ({"conversation_id": CONV}, {"conversation_ids": [CONV, "x"]}, {}):
        raw = client.post(
            "/v1/memory/retrieve/raw", json={"query": "train to Hamburg", "now": now, **scope}, headers=theirs
        ).json()
        assert raw["memories"] == [] and raw["text"].startswith("No memories match")
    recent = client.post("/v1/memory/recent/raw", json={"conversation_id": CONV, "days": 3650}, headers=theirs).json()
    assert recent["memories"] == []

    # the first tenant still has everything
    assert [e["id"] for e in client.get(f"{url}/episodes", headers=auth).json()["episodes"]] == [
        e["id"] for e in stored
    ]
    mine = client.post("/v1/memory/retrieve/raw", json={"query": "train to Hamburg", "now": now}, headers=auth).json()
    assert {m["id"] for m in mine["memories"]} <= {e["id"] for e in stored} and mine["memories"]

    # the same conversation id written by the other tenant is another conversation
    client.post(
        f"{url}/messages", json={"role": "user", "content": "A different conversation, same name."}, headers=theirs
    )
    assert producer.status(CONV, tenant=tenant).inbox == 0
    assert len(client.get(f"{url}/episodes", headers=auth).json()["episodes"]) == 2


def test_mcp_over_http_is_scoped_by_the_key(served, auth, stranger, stored):
    import anyio
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async def call(headers, tool, args):
        async with Client(
            streamable_http_client(f"{served}/mcp", http_client=httpx2.AsyncClient(headers=headers))
        ) as c:
            result = await c.call_tool(tool, args)
            content = result.content[0]
            assert isinstance(content, TextContent)
            return content.text

    mine = anyio.run(call, auth, "retrieve_memory", {"query": "seat on the train", "conversation_id": CONV})
    assert "seat 54" in mine
    theirs = anyio.run(call, stranger[1], "retrieve_memory", {"query": "seat on the train", "conversation_id": CONV})
    assert theirs.startswith("No memories match")
    assert "is not known in this tenant" in anyio.run(call, stranger[1], "manifest", {"conversation_id": CONV})


def test_cli_commands_are_scoped_by_tenant(stored, stranger, tenant):
    other, _ = stranger
    runner = CliRunner()

    def run(*args, code=0):
        out = runner.invoke(main, [*args])
        assert out.exit_code == code, out.output
        return out.stdout if code == 0 else out.stderr

    assert "seat 54" in run("retrieve", CONV, "seat on the train", "--tenant", tenant, "--no-record")
    assert run("retrieve", CONV, "seat on the train", "--tenant", other, "--no-record").startswith("No memories match")
    assert json.loads(run("recent", CONV, "--days", "3650", "--json", "--tenant", other))["memories"] == []
    for command in (["episodes", CONV], ["manifest", CONV], ["context", CONV, "--json"]):  # as if it never existed
        assert f"conversation {CONV!r} is not known in this tenant" in run(*command, "--tenant", other, code=1)
    assert "nothing to forget" in run("forget", CONV, "--yes", "--tenant", other)
    assert json.loads(run("manifest", CONV, "--json", "--tenant", tenant))["total_episodes"] == 2


def test_wrong_missing_and_revoked_keys_get_the_same_401(client, db, tenant, settings):
    from memq.shared.db.api_keys import create_key

    new, row = create_key(db, tenant, "to revoke")
    headers = {"Authorization": f"Bearer {new.key}"}
    assert client.get("/v1/conversations", headers=headers).status_code == 200
    revoked = CliRunner().invoke(main, ["keys", "revoke", row.id])
    assert revoked.exit_code == 0 and "revoked" in revoked.output
    wait_until(
        lambda: client.get("/v1/conversations", headers=headers).status_code == 401,
        settings.api_keys_refresh_seconds + 3,
        interval=0.2,
        message="a revoked key still works after the refresh interval",
    )
    bodies = set()
    for h in (
        {},
        {"Authorization": "Bearer nope"},
        {"Authorization": f"Bearer {new.key[:-2]}xx"},
        {"Authorization": "Basic dXNlcjpwYXNz"},
        headers,
    ):
        r = client.post("/v1/memory/retrieve", json={"query": "anything"}, headers=h)
        assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
        bodies.add(r.text)
    assert len(bodies) == 1  # nothing tells a revoked key from a made-up one


def test_keys_are_listed_never_shown_and_never_logged(client, tenant, capsys, caplog):
    runner = CliRunner()
    created = runner.invoke(main, ["keys", "create", "--tenant", tenant, "--name", "ci"])
    assert created.exit_code == 0
    key = created.stdout.strip()
    assert key.startswith("memq_")
    listed = runner.invoke(main, ["keys", "list", "--tenant", tenant, "--json"])
    rows = json.loads(listed.stdout)
    assert [r["name"] for r in rows] == ["ci"] and key not in listed.stdout and rows[0]["revoked_at"] is None
    caplog.set_level("DEBUG")
    client.post("/v1/memory/retrieve", json={"query": "q"}, headers={"Authorization": f"Bearer {key}"})
    client.post("/v1/memory/retrieve", json={"query": "q"}, headers={"Authorization": f"Bearer {key}x"})
    captured = capsys.readouterr()
    assert key not in captured.out + captured.err + caplog.text
