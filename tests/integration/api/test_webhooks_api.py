"""POST/GET/DELETE /v1/webhooks: the key's tenant's endpoints; the secret shown once, a
plain-HTTP URL to another host refused clearly, another tenant's endpoint out of reach;
GET /v1/webhooks/deliveries and a failed delivery sent again, the tenant's only."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("resolver")]


def test_register_list_and_remove_a_webhook(client, auth, stranger):
    created = client.post(
        "/v1/webhooks", json={"url": "https://example.com/hook", "events": ["episode.created"]}, headers=auth
    )
    assert created.status_code == 201, created.text
    hook = created.json()
    assert hook["secret"].startswith("whsec_") and hook["events"] == ["episode.created"] and not hook["content"]

    listed = client.get("/v1/webhooks", headers=auth).json()["webhooks"]
    assert [h["id"] for h in listed] == [hook["id"]] and "secret" not in listed[0]
    assert client.get("/v1/webhooks", headers=stranger[1]).json()["webhooks"] == []
    assert client.delete(f"/v1/webhooks/{hook['id']}", headers=stranger[1]).status_code == 404

    assert client.delete(f"/v1/webhooks/{hook['id']}", headers=auth).json() == {"id": hook["id"], "deleted": True}
    assert client.get("/v1/webhooks", headers=auth).json()["webhooks"] == []


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"url": "http://example.com/hook"}, "must use https://"),
        ({"url": "https://example.com", "events": ["episode.deleted"]}, "unknown events"),
    ],
)
def test_a_bad_url_or_event_is_refused_clearly(client, auth, body, message):
    refused = client.post("/v1/webhooks", json=body, headers=auth)
    assert 400 <= refused.status_code < 500 and message in refused.json()["error"]["message"], refused.text


@pytest.mark.parametrize(
    ("url", "rule"),
    [
        ("https://metadata.internal.test/latest", "link-local"),  # resolves to 169.254.169.254
        ("https://db.internal.test:5432/", "private"),  # resolves to 10.0.0.5 and a public address
        # loopback but 127.0.0.1 (which the suite opens for its receivers)
        ("https://[::ffff:7f00:2]:6379/", "loopback"),
        ("https://2130706434/", "loopback"),
        ("https://[fd00::1]/", "private"),
        ("https://0.0.0.0:8765/v1/keys", "unspecified"),
    ],
)
def test_a_webhook_to_a_non_public_address_is_refused_naming_the_rule(client, auth, resolver, db, tenant, url, rule):
    resolver["metadata.internal.test"] = ["169.254.169.254"]
    resolver["db.internal.test"] = ["93.184.215.14", "10.0.0.5"]
    refused = client.post("/v1/webhooks", json={"url": url}, headers=auth)
    assert refused.status_code == 400, refused.text
    error = refused.json()["error"]
    assert (error["type"], error["field"], error["rule"]) == ("destination_refused", "url", rule)
    assert "MEMQ_WEBHOOK_ALLOW_DESTINATIONS" in error["message"]
    assert db.execute("SELECT count(*) FROM webhook_endpoint WHERE tenant_id = %s", (tenant,)).fetchone()[0] == 0


def test_a_webhook_host_that_does_not_resolve_is_refused(client, auth):
    refused = client.post("/v1/webhooks", json={"url": "https://nowhere.invalid/hook"}, headers=auth)
    assert refused.status_code == 400 and "does not resolve" in refused.json()["error"]["message"], refused.text


def test_deliveries_are_listed_and_a_failed_one_sent_again(client, auth, stranger, db, tenant):
    from memq.shared.webhooks.deliveries import insert_deliveries, mark_failed
    from memq.shared.webhooks.destinations import Destinations
    from memq.shared.webhooks.endpoints import add_endpoint
    from memq.shared.webhooks.events import payload

    add_endpoint(db, tenant, "https://example.com/hook", Destinations(), ["episode.created"], False)
    for conv in ("a", "b"):
        insert_deliveries(db, tenant, "episode.created", conv, payload("episode.created", tenant, {"x": conv}), None)
    rows = db.execute(
        "SELECT id::text, conversation_id FROM webhook_delivery WHERE tenant_id = %s ORDER BY conversation_id",
        (tenant,),
    ).fetchall()
    mark_failed(db, rows[0][0], "connection refused", None)

    everything = client.get("/v1/webhooks/deliveries", headers=auth)
    assert everything.status_code == 200, everything.text
    assert {d["id"] for d in everything.json()["deliveries"]} == {r[0] for r in rows}
    failed = client.get("/v1/webhooks/deliveries", params={"failed": True}, headers=auth).json()["deliveries"]
    assert [(d["id"], d["status"], d["last_error"]) for d in failed] == [(rows[0][0], "failed", "connection refused")]
    assert client.get("/v1/webhooks/deliveries", headers=stranger[1]).json()["deliveries"] == []

    assert client.post(f"/v1/webhooks/deliveries/{rows[0][0]}/retry", headers=stranger[1]).status_code == 404
    retried = client.post(f"/v1/webhooks/deliveries/{rows[0][0]}/retry", headers=auth)
    assert retried.status_code == 202 and retried.json() == {"id": rows[0][0], "status": "pending"}
    status = db.execute("SELECT status, attempts FROM webhook_delivery WHERE id = %s", (rows[0][0],)).fetchone()
    assert status == ("pending", 0)
    assert client.post("/v1/webhooks/deliveries/not-a-uuid/retry", headers=auth).status_code == 404
