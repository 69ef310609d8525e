"""The API's conventions: one ``format`` query parameter (markdown | json) for every route
that answers in both, ``/retrieve/raw`` and ``/recent/raw`` as deprecated aliases of
``?format=json``; a typed schema in the OpenAPI document for every JSON answer; a body that
is not a JSON object told what to send; and the interactive docs served without a CDN."""

from __future__ import annotations

import re
from datetime import timedelta
from urllib.parse import urljoin, urlsplit

import httpx
import pytest
from helpers import START, messages

pytestmark = pytest.mark.integration

CONV = "conventions"
NOW = (START + timedelta(days=1)).isoformat()
DUAL = {  # route -> (method, the default format, a request)
    "/v1/memory/retrieve": ("post", "markdown", {"json": {"query": "which seat on the train?", "now": NOW}}),
    "/v1/memory/recent": ("post", "markdown", {"json": {"conversation_id": CONV, "days": 30, "now": NOW}}),
    f"/v1/conversations/{CONV}/manifest": ("get", "json", {}),
    f"/v1/conversations/{CONV}/context": ("get", "json", {}),
}
ALIASES = {"/v1/memory/retrieve/raw": "/v1/memory/retrieve", "/v1/memory/recent/raw": "/v1/memory/recent"}


def resolve(spec: dict, schema: dict) -> dict:
    while "$ref" in schema:
        schema = spec["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    return schema


def test_every_json_answer_has_a_typed_schema_and_the_aliases_are_deprecated(app):
    spec = app.openapi()
    operations = [
        (path, method, op)
        for path, ops in spec["paths"].items()
        for method, op in ops.items()
        if path.startswith("/v1/")
    ]
    assert len(operations) >= 13
    for path, method, op in operations:
        ok = [code for code in op["responses"] if code.startswith("2")]
        assert ok, (path, method)
        for code in ok:
            content = op["responses"][code].get("content", {})
            assert "application/json" in content, (path, method, code)
            schema = resolve(spec, content["application/json"].get("schema", {}))
            assert schema.get("properties"), f"{method.upper()} {path} answers {code} JSON with an untyped schema"
        for code in [c for c in op["responses"] if c.startswith(("4", "5"))]:  # errors too
            schema = resolve(spec, op["responses"][code]["content"]["application/json"]["schema"])
            assert set(schema["properties"]) == {"error"}, (path, method, code)
        assert op.get("deprecated", False) is (path in ALIASES), (path, method)
    for path, (method, default, _) in DUAL.items():
        template = re.sub(rf"/{CONV}/", "/{conversation_id}/", path)
        op = spec["paths"][template][method]
        (fmt,) = [p for p in op["parameters"] if p["name"] == "format"]
        assert fmt["in"] == "query" and set(fmt["schema"]["enum"]) == {"markdown", "json"}, fmt
        assert fmt["schema"]["default"] == default
        assert set(op["responses"]["200"]["content"]) == {"application/json", "text/markdown"}
    for alias, successor in ALIASES.items():
        assert "format" not in {p["name"] for p in spec["paths"][alias]["post"].get("parameters", [])}
        assert (  # the same model
            spec["paths"][alias]["post"]["responses"]["200"]["content"]["application/json"]
            == spec["paths"][successor]["post"]["responses"]["200"]["content"]["application/json"]
        )


@pytest.fixture
def stored(client, auth, worker, producer, tenant):
    """A conversation in two episodes, and a message of an open segment after them."""
    url = f"/v1/conversations/{CONV}"
    client.post(f"{url}/messages", json={"messages": messages()}, headers=auth)
    client.post(f"{url}/flush", headers=auth)
    producer.wait_idle(CONV, tenant=tenant, timeout=120)
    later = {
        "role": "user",
        "content": "And a taxi to the station?",
        "timestamp": (START + timedelta(hours=5)).isoformat(),
    }
    assert client.post(f"{url}/messages", json=later, headers=auth).status_code == 202
    assert len(client.get(f"{url}/episodes", headers=auth).json()["episodes"]) == 2


def call(client, auth, path: str, fmt: str | None = None):
    method, _, request = DUAL[path] if path in DUAL else ("post", None, DUAL[ALIASES[path]][2])
    params = {} if fmt is None else {"format": fmt}
    return getattr(client, method)(path, params=params, headers=auth, **request)


def without_timings(answer: dict) -> dict:
    return {k: v for k, v in answer.items() if k not in ("timings_ms", "generated_at", "cached")}


def test_one_format_parameter_for_every_route_that_answers_in_both(client, auth, stored):
    for path, (_, default, _) in DUAL.items():
        as_default = call(client, auth, path)
        markdown = call(client, auth, path, "markdown")
        as_json = call(client, auth, path, "json")
        assert markdown.status_code == as_json.status_code == 200, (markdown.text, as_json.text)
        assert markdown.headers["content-type"] == "text/markdown; charset=utf-8"
        assert as_json.headers["content-type"] == "application/json"
        assert markdown.text == as_json.json()["text"] and markdown.text.strip(), path
        expected = markdown if default == "markdown" else as_json
        assert as_default.headers["content-type"] == expected.headers["content-type"], path
        assert "deprecation" not in as_json.headers and "link" not in as_json.headers

        bad = call(client, auth, path, "xml")
        assert bad.status_code == 400 and bad.json()["error"]["field"] == "format", bad.text

    found = call(client, auth, "/v1/memory/retrieve", "json").json()
    assert found["memories"] and found["memories"][0]["messages"], found  # the typed answer carries it all
    assert "seat 54" in found["text"] and set(found["memories"][0]["scores"]) >= {"rrf", "final", "lexical_rank"}


def test_the_raw_routes_are_deprecated_aliases_of_format_json(client, auth, stored):
    for alias, successor in ALIASES.items():
        old = call(client, auth, alias)
        new = call(client, auth, successor, "json")
        assert old.status_code == new.status_code == 200, old.text
        assert without_timings(old.json()) == without_timings(new.json())
        assert list(old.json()) == list(new.json())  # the same keys, in the same order
        assert old.headers["deprecation"] == "true"
        assert old.headers["link"] == f'<{successor}?format=json>; rel="successor-version"'
        assert "deprecation" not in new.headers


NOT_AN_OBJECT = "send a JSON object with content-type: application/json; see /docs"


@pytest.mark.parametrize(
    "path, anchor",
    [
        ("/v1/memory/retrieve", "#/memory/retrieve_v1_memory_retrieve_post"),
        (
            "/v1/conversations/wrong-body/messages",
            "#/ingest/add_messages_v1_conversations__conversation_id__messages_post",
        ),
        ("/v1/facts/search", "#/facts/facts_search_v1_facts_search_post"),
    ],
)
def test_a_body_that_is_not_a_json_object_is_told_what_to_send(served, auth, producer, tenant, path, anchor):
    body = b'{"query": "which seat?", "role": "user", "content": "hi"}'
    with httpx.Client(base_url=served, headers=auth, timeout=30) as http:
        # what curl -d sends without -H 'content-type: application/json'
        form = http.post(path, content=body, headers={"content-type": "application/x-www-form-urlencoded"})
        assert form.status_code == 415, form.text
        error = form.json()["error"]
        assert error["type"] == "unsupported_media_type" and error["field"] is None
        assert "application/x-www-form-urlencoded" in error["message"] and NOT_AN_OBJECT + anchor in error["message"]

        bare = http.post(path, content=body)  # no content-type at all
        assert bare.status_code == 415 and "no content-type" in bare.json()["error"]["message"], bare.text

        listed = http.post(path, json=[{"role": "user", "content": "hi"}])
        assert listed.status_code == 400, listed.text
        error = listed.json()["error"]
        assert error["type"] == "validation" and error["field"] is None
        assert error["message"].startswith("the body is an array, not a JSON object: " + NOT_AN_OBJECT + anchor)
        if "messages" in path:
            assert error["message"].endswith('a batch is {"messages": [...]}')

        for raw, kind in ((b'"hi"', "a string"), (b"null", "null"), (b"42", "a number")):
            r = http.post(path, content=raw, headers={"content-type": "application/json"})
            assert r.status_code == 400 and r.json()["error"]["message"].startswith(f"the body is {kind}, "), r.text

        empty = http.post(path, headers={"content-type": "application/json"})
        assert empty.status_code == 400 and empty.json()["error"]["message"].startswith("the body is missing: ")

        # a JSON object with a wrong field still names the field, as before
        wrong = http.post(path, json={"colour": "red"})
        assert wrong.status_code == 400 and wrong.json()["error"]["field"], wrong.text
    assert producer.status("wrong-body", tenant=tenant).inbox == 0


def test_the_docs_load_nothing_from_another_host(served):
    with httpx.Client(base_url=served, timeout=30) as http:
        for page, needed in (
            ("/docs", ("swagger-ui-bundle.js", "swagger-ui.css")),
            ("/redoc", ("redoc.standalone.js",)),
        ):
            html = http.get(page)
            assert html.status_code == 200 and html.headers["content-type"].startswith("text/html")
            external = [u for u in re.findall(r"https?://[^\s\"'<>)]+", html.text) if not u.startswith(served)]
            assert external == [], external
            assets = re.findall(r"""(?:src|href)\s*=\s*["']([^"']+)["']""", html.text)
            assert {a.rsplit("/", 1)[-1] for a in assets} >= set(needed), assets
            for asset in [*assets, *re.findall(r"""(?:url|spec-url)\s*[:=]\s*["']([^"']+)["']""", html.text)]:
                url = urljoin(served + page, asset)
                assert urlsplit(url).netloc == urlsplit(served).netloc, url
                r = http.get(url)
                assert r.status_code == 200 and len(r.content) > 1000, (asset, r.status_code, len(r.content))
