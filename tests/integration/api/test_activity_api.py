"""GET /v1/activity and the entries the API's actions write: each webhook registration and
removal, export, import and forget (of a conversation, of a user) is one entry whose actor
is the calling key's id; a refused action writes none; a tenant sees its own entries only;
once forgotten, a conversation's or user's id is in no entry, its salted hash is; the list
pages and filters like GET /v1/conversations."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

import pytest
from test_activity import store

from memq.shared import activity
from memq.shared.auth.api_keys import bearer, key_id

pytestmark = pytest.mark.integration

JSONL = {"content-type": "application/x-ndjson"}


def key_of(headers: dict[str, str]) -> str:
    found = key_id(bearer(headers["Authorization"]) or "")
    assert found is not None
    return found


def entries(client, headers, **params) -> list[dict]:
    answer = client.get("/v1/activity", params=params, headers=headers)
    assert answer.status_code == 200, answer.text
    return answer.json()["entries"]


def rows(db, tenant: str) -> list[tuple]:
    return db.execute("SELECT * FROM activity WHERE tenant_id = %s ORDER BY id", (tenant,)).fetchall()


@pytest.mark.usefixtures("resolver")
def test_each_action_writes_one_entry_naming_the_callers_key(client, auth, stranger, tenant, settings, db):
    from memq.shared.db.activity import hash_of

    run = uuid.uuid4().hex[:6].translate(str.maketrans("0123456789abcdef", "ghijklmnopqrstuv"))  # no hex digit
    trip, bike, ana = f"trip-{run}", f"bike-{run}", f"ana-{run}"
    store(db, settings, tenant, trip, 0)
    store(db, settings, tenant, bike, 1)
    db.execute(
        "UPDATE conversation SET user_id = %s WHERE tenant_id = %s AND conversation_id = %s", (ana, tenant, bike)
    )
    me = key_of(auth)
    other, theirs = stranger

    hook = client.post("/v1/webhooks", json={"url": "https://example.com/hook?token=s3cret"}, headers=auth)
    assert hook.status_code == 201, hook.text
    webhook = hook.json()["id"]
    assert client.delete(f"/v1/webhooks/{webhook}", headers=auth).status_code == 200
    exported = client.get("/v1/export", params={"conversation_id": trip}, headers=auth)
    assert exported.status_code == 200
    by_user = client.get("/v1/export", params={"user_id": ana}, headers=auth)
    assert by_user.status_code == 200
    imported = client.post("/v1/import", content=exported.content, headers={**theirs, **JSONL})
    assert imported.status_code == 200, imported.text
    assert client.delete(f"/v1/conversations/{trip}", headers=auth).json()["messages"] == 2
    assert client.delete(f"/v1/users/{ana}", headers=auth).json()["conversations"] == [bike]

    mine = entries(client, auth)
    assert [e["action"] for e in mine] == [
        "user.forget",
        "conversation.forget",  # the user's one conversation
        "conversation.forget",
        "export",
        "export",
        "webhook.delete",
        "webhook.create",
    ]
    assert {(e["actor"], e["actor_detail"]) for e in mine} == {(me, None)}
    user_forget, forget_bike, forget, by_user_export, export, deleted, created = mine
    assert created["webhook_id"] == deleted["webhook_id"] == webhook
    assert "s3cret" not in str(mine) and "example.com" not in str(mine)  # never a webhook's URL
    hashed_trip, hashed_ana = hash_of(db, trip), hash_of(db, ana)
    assert export["conversation_id"] == forget["conversation_id"] == hashed_trip  # the earlier entry too
    assert export["counts"]["lines"] == len(exported.text.splitlines())
    assert by_user_export["user_id"] == user_forget["user_id"] == hashed_ana
    assert forget["counts"] == forget_bike["counts"] == {"episodes": 1, "messages": 2}
    assert forget_bike["conversation_id"] == hash_of(db, bike)
    assert user_forget["counts"] == {"conversations": 1, "episodes": 1, "messages": 2, "audit_rows": 0}
    # asked for again after the forget (to see that nothing is left), an export names the hash too
    assert client.get("/v1/export", params={"conversation_id": trip}, headers=auth).status_code == 200
    assert client.get("/v1/export", params={"conversation_id": bike}, headers=auth).status_code == 200
    assert client.get("/v1/export", params={"user_id": ana}, headers=auth).status_code == 200
    again_ana, again_bike, again_trip = entries(client, auth, action="export")[:3]
    assert again_trip["conversation_id"] == hashed_trip and again_ana["user_id"] == hashed_ana
    assert again_bike["conversation_id"] == hash_of(db, bike)  # forgotten with its user
    stored = str(rows(db, tenant))
    for forgotten in (trip, bike, ana):
        assert forgotten not in stored  # in no entry, in no column

    (theirs_import,) = entries(client, theirs)  # the import landed in the caller's tenant, and so did its entry
    assert (theirs_import["action"], theirs_import["actor"]) == ("import", key_of(theirs))
    assert theirs_import["counts"]["episode"] == 1 and theirs_import["counts"]["message"] == 2
    assert imported.json()["tenant"] == other
    # an import stopped at a broken record wrote what came before it: logged, saying where it stopped
    cut = b"".join(exported.content.splitlines(keepends=True)[:-1])
    assert client.post("/v1/import", content=cut, headers={**theirs, **JSONL}).status_code == 400
    stopped = entries(client, theirs)[0]
    assert stopped["action"] == "import" and stopped["counts"]["stopped_at_line"] == len(cut.splitlines()) + 1


@pytest.mark.usefixtures("resolver")
def test_a_refused_action_writes_no_entry(client, auth, tenant, db):
    assert client.delete(f"/v1/webhooks/{uuid.uuid4()}", headers=auth).status_code == 404
    assert client.post("/v1/webhooks", json={"url": "https://10.0.0.1/hook"}, headers=auth).status_code == 400
    assert client.post("/v1/import", content=b"not an export\n", headers={**auth, **JSONL}).status_code == 400
    assert client.get("/v1/export", params={"conversation_id": "../x"}, headers=auth).status_code == 400
    assert entries(client, auth) == [] and rows(db, tenant) == []
    assert client.get("/v1/activity").status_code == 401


def test_a_tenant_sees_only_its_own_entries(client, auth, stranger, tenant, db):
    from memq.shared.db.activity import record

    other, theirs = stranger
    record(db, tenant, activity.key_created(activity.cli_actor("ana"), "mine000001"))
    record(db, other, activity.key_created(activity.cli_actor("bo"), "theirs0001"))
    assert [e["key_id"] for e in entries(client, auth)] == ["mine000001"]
    (seen,) = entries(client, theirs)
    assert seen["key_id"] == "theirs0001"
    # a cursor past another tenant's entry pages through one's own entries only
    assert entries(client, theirs, after=str(int(seen["id"]) + 1000)) == [seen]


def test_the_log_pages_newest_first_and_filters(client, auth, tenant, db):
    from memq.shared.db.activity import record

    who = activity.cli_actor("ana")
    for n in range(5):
        record(db, tenant, activity.webhook_created(who, f"w{n}") if n % 2 else activity.key_created(who, f"k{n}"))
    seen, after, pages = [], None, 0
    while True:
        answer = client.get("/v1/activity", params={"limit": 2, **({"after": after} if after else {})}, headers=auth)
        assert answer.status_code == 200, answer.text
        page = answer.json()
        assert len(page["entries"]) <= 2
        seen += page["entries"]
        pages += 1
        if page["next"] is None:
            break
        after = page["next"]
    assert pages == 3
    assert [e.get("key_id") or e["webhook_id"] for e in seen] == ["k4", "w3", "k2", "w1", "k0"]
    assert [int(e["id"]) for e in seen] == sorted((int(e["id"]) for e in seen), reverse=True)

    assert [e["webhook_id"] for e in entries(client, auth, action="webhook.create")] == ["w3", "w1"]
    first = datetime.fromisoformat(seen[-1]["at"])
    assert len(entries(client, auth, since=first.isoformat())) == 5
    assert entries(client, auth, since=(first + timedelta(days=1)).isoformat()) == []

    for params, field in (
        ({"after": "abc"}, "after"),
        ({"action": "key.rotate"}, "action"),
        ({"since": "2026-03-02T09:00:00"}, "since"),  # no offset
        ({"limit": 501}, "limit"),
    ):
        refused = client.get("/v1/activity", params=params, headers=auth)
        assert refused.status_code == 400, (params, refused.text)
        assert refused.json()["error"]["field"] == field, refused.text
