"""POST/GET/DELETE /v1/webhooks: the key's tenant's endpoints; the secret shown once, a
plain-HTTP URL to another host refused clearly, another tenant's endpoint out of reach."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.integration


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
