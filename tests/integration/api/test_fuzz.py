"""Hostile input at every endpoint: generated from the OpenAPI document by schemathesis
(valid and invalid shapes, types and values), and by hypothesis directly (arbitrary JSON,
unicode, control characters, huge strings, hostile ids in paths and queries). Every
answer is a 4xx with a JSON error or a correct answer, never a 5xx, and the service keeps
serving afterwards."""

from __future__ import annotations

from urllib.parse import quote

import pytest
import schemathesis
from hypothesis import HealthCheck, given
from hypothesis import settings as examples
from hypothesis import strategies as st

pytestmark = pytest.mark.integration


def test_requests_generated_from_the_openapi_document_never_get_a_server_error(api_services, settings, auth):
    """Each operation of the OpenAPI document, with requests schemathesis generates from it
    (positive and negative: wrong types, missing fields, out-of-range values). An app of
    its own: schemathesis' client runs the app's lifespan, which may run once per app."""
    from memq.api.app import create_app

    spec = schemathesis.openapi.from_asgi("/openapi.json", create_app(settings, services=api_services))
    operations = [result.ok() for result in spec.get_all_operations()]  # type: ignore[union-attr]  # a valid schema
    assert len(operations) >= 12
    operations = [
        op for op in operations if op.path not in ("/healthz", "/readyz")
    ]  # no input; readiness wants a worker

    def check(operation) -> None:
        @examples(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck), database=None)
        @given(case=operation.as_strategy())
        def call(case):
            response = case.call(headers=auth)
            assert response.status_code < 500, (operation.label, case.body, case.query, response.text)
            if response.status_code >= 400:
                body = response.json()
                assert set(body) == {"error"} and body["error"]["message"], body

        call()

    for operation in operations:
        check(operation)


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=300),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=20), inner, max_size=6),
    max_leaves=25,
)
hostile_text = st.text(st.characters(codec="utf-8"), max_size=400) | st.sampled_from(
    [
        "",
        " ",
        "\x00",
        "..",
        "../../etc/passwd",
        "%00",
        "a" * 5000,
        "🙂" * 200,
        "\ud800".encode("utf-8", "surrogatepass").decode("utf-8", "replace"),
        "DROP TABLE episodic_memory;--",
        "{s1}",
        "t/../x",
        "*",
    ]
)
POSTS = [
    "/v1/memory/retrieve",
    "/v1/memory/retrieve?format=json",
    "/v1/memory/retrieve/raw",
    "/v1/memory/recent",
    "/v1/memory/recent?format=json",
    "/v1/memory/recent/raw",
    "/v1/conversations/fuzz/messages",
]


@examples(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
@given(path=st.sampled_from(POSTS), body=json_values)
def test_arbitrary_json_bodies(client, auth, path, body):
    r = client.post(path, json=body, headers=auth)
    assert r.status_code < 500, (path, body, r.text)
    if r.status_code >= 400:
        assert r.json()["error"]["type"]


@examples(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    conversation=hostile_text,
    suffix=st.sampled_from(["/episodes", "/manifest", "/context", "/flush", "/messages", ""]),
    query=st.dictionaries(
        st.sampled_from(["depth", "timezone", "format", "max_tokens", "summaries", "continuity"]),
        hostile_text,
        max_size=3,
    ),
)
def test_hostile_ids_and_query_parameters(client, auth, conversation, suffix, query):
    path = f"/v1/conversations/{quote(conversation, safe='')}{suffix}"
    if suffix in ("/flush", "/messages"):
        r = client.post(
            path, params=query, json={"role": "user", "content": "hi"} if suffix == "/messages" else None, headers=auth
        )
    elif suffix == "":
        r = client.delete(path, params=query, headers=auth)
    else:
        r = client.get(path, params=query, headers=auth)
    assert r.status_code < 500, (path, query, r.text)


@examples(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(raw=st.binary(max_size=2000))
def test_bytes_that_are_not_json(client, auth, raw):
    r = client.post("/v1/memory/retrieve", content=raw, headers={**auth, "content-type": "application/json"})
    assert r.status_code < 500


@pytest.mark.parametrize(
    "raw",
    [
        b'{"query": NaN}',
        b'{"conversation_id": "c", "days": Infinity}',
        b'{"conversation_id": "c", "days": NaN}',
        b'{"query": "q", "max_tokens": 1e400}',
        b'{"role": "user", "content": "x", "metadata": {"v": NaN}}',
    ],
)
def test_what_json_allows_python_and_nothing_else(client, auth, raw):
    path = (
        "/v1/conversations/c/messages"
        if b"role" in raw
        else ("/v1/memory/recent" if b"days" in raw else "/v1/memory/retrieve")
    )
    r = client.post(path, content=raw, headers={**auth, "content-type": "application/json"})
    assert r.status_code == 400, r.text


def test_the_service_keeps_serving_after_the_fuzz(client, auth):
    assert client.get("/healthz").json() == {"status": "ok"}
    r = client.post("/v1/memory/retrieve/raw", json={"query": "anything at all"}, headers=auth)
    assert r.status_code == 200 and "memories" in r.json()
