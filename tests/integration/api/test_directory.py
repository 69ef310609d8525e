"""What the API says of what it does not know, and what it knows: a conversation or user
this tenant never saw is a 404 naming it with a hint; the tenant's conversations a page at
a time; whether a conversation is idle, and a flush that waits for it."""

from __future__ import annotations

import pytest
from helpers import messages

pytestmark = pytest.mark.integration


def test_an_unknown_conversation_is_a_404_that_names_it_and_says_what_to_do(client, auth):
    for method, sub in (
        ("get", "episodes"),
        ("get", "manifest"),
        ("get", "context"),
        ("get", "facts"),
        ("get", "status"),
        ("post", "flush"),
    ):
        r = getattr(client, method)(f"/v1/conversations/never-seen/{sub}", headers=auth)
        assert r.status_code == 404, (sub, r.text)
        error = r.json()["error"]
        assert error["type"] == "not_found" and error["field"] == "conversation_id"
        assert "'never-seen'" in error["message"] and "add its messages first" in error["message"]


def test_an_unknown_user_is_a_404_not_the_tenants_episodes(client, auth, worker, producer, tenant):
    client.post("/v1/conversations/dir-owned/messages", json={"messages": messages(), "user_id": "ada"}, headers=auth)
    client.post("/v1/conversations/dir-free/messages", json={"messages": messages("f")}, headers=auth)
    for conversation in ("dir-free", "dir-unknown"):
        for sub in ("manifest", "context"):
            r = client.get(f"/v1/conversations/{conversation}/{sub}", params={"user_id": "nobody"}, headers=auth)
            assert r.status_code == 404 and r.json()["error"]["field"] == "user_id", r.text
            assert "'nobody'" in r.json()["error"]["message"]
    for sub in ("manifest", "context"):  # a known user's view of a conversation not yet theirs
        assert (
            client.get(f"/v1/conversations/dir-new/{sub}", params={"user_id": "ada"}, headers=auth).status_code == 200
        )


def test_accepted_is_known_before_any_episode_and_a_flush_can_wait_until_idle(client, auth, worker, tenant):
    url = "/v1/conversations/dir-wait"
    assert client.post(f"{url}/messages", json={"messages": messages()}, headers=auth).status_code == 202
    status = client.get(f"{url}/status", headers=auth)
    assert status.status_code == 200 and status.json()["accepted"] == len(messages())
    done = client.post(f"{url}/flush", params={"wait": 60}, headers=auth).json()
    assert done["flushed"] is True and done["idle"] is True
    after = client.get(f"{url}/status", headers=auth).json()
    assert after["idle"] is True and after["inbox"] == after["open_event"] == after["waiting_segments"] == 0
    assert client.get(f"{url}/episodes", headers=auth).json()["episodes"]
    assert client.post(f"{url}/flush", headers=auth).json()["idle"] is None  # no wait asked: not looked at
    refused = client.post(f"{url}/flush", params={"wait": 61}, headers=auth)
    assert refused.status_code == 400 and refused.json()["error"]["field"] == "wait"


def test_the_tenants_conversations_a_page_at_a_time(client, auth, stranger, worker, producer, tenant):
    ids = [f"dir-page-{i}" for i in range(5)]
    for cid in ids:
        client.post(f"/v1/conversations/{cid}/messages", json={"messages": messages()[:2]}, headers=auth)
    client.post(f"/v1/conversations/{ids[0]}/flush", params={"wait": 60}, headers=auth)
    seen, cursor, pages = [], None, 0
    while True:
        page = client.get(
            "/v1/conversations", params={"limit": 2, **({"after": cursor} if cursor else {})}, headers=auth
        ).json()
        seen += page["conversations"]
        pages += 1
        if (cursor := page["next"]) is None:
            break
    mine = [c for c in seen if c["conversation_id"] in ids]
    assert [c["conversation_id"] for c in mine] == ids and pages >= 3
    assert [c["conversation_id"] for c in seen] == sorted(c["conversation_id"] for c in seen)  # no repeats, in order
    first = mine[0]
    assert first["stored"] is True and first["episodes"] >= 1 and first["messages"] == 2
    assert all(c["episodes"] == 0 for c in mine[1:])  # accepted, not flushed: listed all the same
    _, theirs = stranger
    assert not [
        c
        for c in client.get("/v1/conversations", headers=theirs).json()["conversations"]
        if c["conversation_id"] in ids
    ]
    bad = client.get("/v1/conversations", params={"limit": 0}, headers=auth)
    assert bad.status_code == 400 and bad.json()["error"]["field"] == "limit"


@pytest.mark.parametrize(
    "path", ["/v1/conversations/a/b/episodes", "/v1/conversations/a/b", "/v1/conversations/a%2Fb/manifest"]
)
def test_a_conversation_id_with_a_slash_is_told_the_id_rule_not_a_bare_not_found(client, auth, path):
    r = client.get(path, headers=auth)
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert error["field"] == "conversation_id" and "'a/b' is not a conversation id" in error["message"]


@pytest.mark.parametrize(
    ("method", "path", "body", "field", "says"),
    [
        ("post", "/v1/conversations/c/messages", {"messages": "hello"}, "messages", "must be an array"),
        (
            "post",
            "/v1/conversations/c/messages",
            {"role": "user", "content": 5},
            "messages[0].content",
            "must be a string",
        ),
        ("get", "/v1/conversations/c/manifest?depth=lots", None, "depth", "must be a whole number"),
        ("get", "/v1/conversations?limit=501", None, "limit", "must be at most 500"),
        ("post", "/v1/conversations/c/flush?wait=-1", None, "wait", "must be at least 0"),
    ],
)
def test_wrong_types_get_memqs_own_words(client, auth, method, path, body, field, says):
    r = getattr(client, method)(path, headers=auth, **({"json": body} if body is not None else {}))
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert (error["field"], error["message"]) == (field, says)
