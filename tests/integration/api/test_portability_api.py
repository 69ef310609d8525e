"""GET /v1/export and POST /v1/import: the key's tenant is the only one exported, and an
import always lands in the key's tenant; importing again changes nothing; a cut body
imports what came before the broken line and says which line; a newer version is refused."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from test_retrieval import axis, write_episode

pytestmark = pytest.mark.integration

T0 = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)
JSONL = {"content-type": "application/x-ndjson"}


@pytest.fixture
def stored(db, settings, tenant) -> list[str]:
    return [
        write_episode(
            db,
            settings,
            tenant,
            conversation,
            title=title,
            summary=title + ".",
            vector=axis(i),
            start=T0 + timedelta(days=i),
            messages=[("user", title, axis(i), "Ana"), ("assistant", "Noted.", axis(i))],
        )
        for i, (conversation, title) in enumerate(
            [("trip", "Booking the Alfama apartment"), ("trip", "Train seats to Porto"), ("bike", "Derailleur fix")]
        )
    ]


def records(response) -> list[dict]:
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/x-ndjson")
    return [json.loads(line) for line in response.text.splitlines()]


def titles(found: list[dict]) -> list[str]:
    return [r["title"] for r in found if r["type"] == "episode"]


def test_export_streams_the_keys_tenant_and_import_lands_in_the_callers(client, auth, stranger, tenant, stored, db):
    mine = client.get("/v1/export", headers=auth)
    found = records(mine)
    assert found[0]["type"] == "header" and found[0]["tenant"] == tenant and found[-1]["type"] == "end"
    assert titles(found) == ["Derailleur fix", "Booking the Alfama apartment", "Train seats to Porto"]
    assert [r["type"] for r in found].count("message") == 6
    one = records(client.get("/v1/export", params={"conversation_id": "trip"}, headers=auth))
    assert titles(one) == ["Booking the Alfama apartment", "Train seats to Porto"]
    db.execute("UPDATE conversation SET user_id = 'ana' WHERE tenant_id = %s AND conversation_id = 'bike'", (tenant,))
    anas = records(client.get("/v1/export", params={"user_id": "ana"}, headers=auth))
    assert anas[0]["user_id"] == "ana" and titles(anas) == ["Derailleur fix"]
    both = client.get("/v1/export", params={"user_id": "ana", "conversation_id": "trip"}, headers=auth)
    assert both.status_code == 400 and "not both" in both.text
    db.execute("UPDATE conversation SET user_id = NULL WHERE tenant_id = %s AND conversation_id = 'bike'", (tenant,))

    other, theirs = stranger
    nothing = records(client.get("/v1/export", params={"conversation_id": "trip"}, headers=theirs))
    assert [r["type"] for r in nothing] == ["header", "end"] and nothing[0]["tenant"] == other
    assert [r["type"] for r in records(client.get("/v1/export", headers=theirs))] == ["header", "end"]
    assert client.get("/v1/export").status_code == 401
    assert client.get("/v1/export", params={"conversation_id": "../x"}, headers=auth).status_code == 400

    imported = client.post("/v1/import", content=mine.content, headers={**theirs, **JSONL})
    assert imported.status_code == 200, imported.text
    report = imported.json()
    assert report["tenant"] == other and report["source_tenant"] == tenant and report["complete"]
    assert report["inserted"]["episode"] == 3 and report["inserted"]["message"] == 6 and not report["reembedded"]
    copied = records(client.get("/v1/export", headers=theirs))
    assert titles(copied) == titles(found) and copied[0]["tenant"] == other
    assert {r["id"] for r in copied if r["type"] == "episode"}.isdisjoint(stored)  # ids mapped into the tenant

    again = client.post("/v1/import", content=mine.content, headers={**theirs, **JSONL}).json()
    assert sum(again["inserted"].values()) == 0 and again["skipped"]["episode"] == 3
    assert titles(records(client.get("/v1/export", headers=auth))) == titles(found)  # the source is untouched


def test_a_cut_or_newer_body_is_refused_where_it_breaks(client, auth, stranger, stored):
    lines = client.get("/v1/export", headers=auth).text.splitlines(keepends=True)
    second = [i for i, line in enumerate(lines) if json.loads(line)["type"] == "episode"][1]
    _, theirs = stranger
    cut = "".join(lines[:second]) + lines[second][:40]
    answer = client.post("/v1/import", content=cut.encode(), headers={**theirs, **JSONL})
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert error["field"] == "body" and f"line {second + 1}: not valid JSON" in error["message"]
    assert "1 episodes" in error["message"]
    assert titles(records(client.get("/v1/export", headers=theirs))) == ["Derailleur fix"]

    newer = json.dumps({**json.loads(lines[0]), "version": 99}) + "\n" + "".join(lines[1:])
    refused = client.post("/v1/import", content=newer.encode(), headers={**theirs, **JSONL})
    assert refused.status_code == 400 and "version 99" in refused.json()["error"]["message"]
    empty = client.post("/v1/import", content=b"", headers={**theirs, **JSONL})
    assert empty.status_code == 400 and "empty" in empty.json()["error"]["message"]
    junk = client.post("/v1/import", content=b"\xff\xfe", headers={**theirs, **JSONL})
    assert junk.status_code == 400 and "line 1" in junk.json()["error"]["message"]
