"""The client and the API cannot drift apart unnoticed: held against the app's own OpenAPI
document (built in a subprocess, no services needed), every operation has a client method
(or a reason in ``NOT_CALLED``), each method's route, query parameters, body keys and
answer model are the route's, the client's copies of models match the document's schemas,
and Client and AsyncClient have the same methods with the same parameters.

What is out of the document is out of scope: ``/mcp`` (MCP has its own clients), ``/inspect``
(pages for a browser), ``/metrics`` (Prometheus text) and the docs pages."""

from __future__ import annotations

import inspect
import io
import json
import subprocess
import sys
from typing import Any

import pytest
from pydantic import BaseModel

from memq.client import AsyncClient, Client, models
from memq.client import _calls as calls
from memq.client._calls import FLUSH_WAIT_MAX, NOT_CALLED, OPERATIONS, Call

pytest.importorskip("fastapi")  # the app's document needs the API's install (memq[api])

OPENAPI = (
    "import json; from memq.api.app import create_app; from memq.shared.settings import Settings; "
    "print(json.dumps(create_app(Settings(_env_file=None)).openapi()))"
)
NOT_OPERATIONS = {"close", "aclose", "base_url"}  # public, not calls


@pytest.fixture(scope="module")
def spec() -> dict[str, Any]:
    """The document ``GET /openapi.json`` serves (built in its own process: creating the app
    configures logging, which this process' other tests must not inherit)."""
    out = subprocess.run(
        [sys.executable, "-c", OPENAPI],
        capture_output=True,
        text=True,
        timeout=120,
        env={"MEMQ_LOG_LEVEL": "ERROR", **_environment()},
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def _environment() -> dict[str, str]:
    import os

    return dict(os.environ)


def operations(spec: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {
        (method.upper(), path): op
        for path, ops in spec["paths"].items()
        for method, op in ops.items()
        if method in ("get", "post", "put", "patch", "delete")
    }


# One call per client method, every optional argument given: what each method sends.
SAMPLES: dict[str, Call[Any]] = {
    "add_messages": calls.add_messages(
        "c1",
        [{"role": "user", "content": "x", "timestamp": "2026-03-02T09:15:00Z", "metadata": {}, "user_id": "u"}],
        user_id="u",
    ),
    "add_message": calls.add_message(
        "c1", "user", "x", timestamp="2026-03-02T09:15:00Z", message_id="m", metadata={}, user_id="u"
    ),
    "flush": calls.flush("c1", wait=5),
    "status": calls.status("c1"),
    "list_conversations": calls.list_conversations(after="a", limit=10),
    "iter_conversations": calls.list_conversations(after="a", limit=10),
    "episodes": calls.episodes("c1"),
    "manifest": calls.manifest("c1", depth=5, timezone="UTC", user_id="u"),
    "context": calls.context("c1", max_tokens=1, summaries=1, continuity=1, timezone="UTC", user_id="u"),
    "forget": calls.forget("c1"),
    "retrieve": calls.retrieve(
        "q",
        conversation_id="c1",
        conversation_ids=["c1"],
        user_id="u",
        limit=1,
        detail="high",
        max_tokens=1,
        time_range=("2026-03-01T00:00:00Z", "2026-03-02T00:00:00Z"),
        now="2026-03-02T00:00:00Z",
        record=False,
        asked_in="c2",
    ),
    "recent": calls.recent("c1", user_id="u", days=1, limit=1, max_tokens=1, now="2026-03-02T00:00:00Z"),
    "facts": calls.facts("c1", include_retired=True),
    "search_facts": calls.search_facts("q", conversation_id="c1", conversation_ids=["c1"], user_id="u", limit=1),
    "fact_history": calls.fact_history("f1"),
    "move_conversation": calls.move_conversation("c1", "u"),
    "user_conversations": calls.user_conversations("u", changes=True),
    "forget_user": calls.forget_user("u"),
    "export": calls.export(conversation_id="c1", user_id="u"),
    "export_to": calls.export(conversation_id="c1", user_id="u"),
    "import_": calls.import_(io.BytesIO(b"{}\n")),
    "create_webhook": calls.create_webhook("https://example.com", events=["episode.created"], content=True),
    "list_webhooks": calls.list_webhooks(),
    "delete_webhook": calls.delete_webhook("w1"),
    "webhook_deliveries": calls.webhook_deliveries(failed=True, limit=5),
    "retry_delivery": calls.retry_delivery("d1"),
    "list_activity": calls.list_activity(action="export", since="2026-03-02T00:00:00Z", after="5", limit=10),
    "iter_activity": calls.list_activity(action="export", since="2026-03-02T00:00:00Z", after="5", limit=10),
    "quota": calls.quota(),
    "health": calls.health(),
    "ready": calls.ready(),
}
NEVER_RETRIED = {"create_webhook", "retry_delivery"}
# Fields the client's copy does not require although the document does (none today: the API
# answers every field its schema requires).
NOT_REQUIRED: dict[str, set[str]] = {}


def test_every_operation_of_the_api_has_a_client_method(spec):
    documented = set(operations(spec))
    called = {(op.method, op.path) for op in OPERATIONS.values()}
    missing = documented - called - set(NOT_CALLED)
    assert not missing, f"operations without a client method (add one, or a reason to NOT_CALLED): {sorted(missing)}"
    assert not called - documented, f"client methods of routes the API does not have: {sorted(called - documented)}"
    assert set(NOT_CALLED) <= documented, "NOT_CALLED names a route the API no longer has"
    assert not set(NOT_CALLED) & called


def test_every_operation_is_a_method_of_both_clients_and_every_method_an_operation():
    for cls in (Client, AsyncClient):
        public = {name for name, _ in inspect.getmembers(cls) if not name.startswith("_")} - NOT_OPERATIONS
        assert public == set(OPERATIONS), (cls.__name__, public ^ set(OPERATIONS))
    assert set(SAMPLES) == set(OPERATIONS)


def test_both_clients_take_the_same_parameters():
    for name in OPERATIONS:
        sync, asynchronous = inspect.signature(getattr(Client, name)), inspect.signature(getattr(AsyncClient, name))
        assert list(sync.parameters.values()) == list(asynchronous.parameters.values()), name
        assert inspect.iscoroutinefunction(getattr(AsyncClient, name)) or inspect.isasyncgenfunction(
            getattr(AsyncClient, name)
        ), name
    shared = inspect.signature(Client.__init__).parameters
    assert list(shared) == list(inspect.signature(AsyncClient.__init__).parameters)


def test_each_method_calls_its_route_with_the_routes_parameters(spec):
    documented = operations(spec)
    for name, call in SAMPLES.items():
        op = OPERATIONS[name]
        assert call.operation == op or (name in ("iter_conversations", "export_to")), name
        route = documented[(op.method, op.path)]
        query = {p["name"]: p for p in route.get("parameters", []) if p["in"] == "query"}
        assert set(op.query) == set(query) - {"format"}, (name, sorted(query))
        assert op.json_format is ("format" in query), name
        assert set(call.params) <= set(query), (name, set(call.params) - set(query))
        assert set(call.params) == set(op.query) | ({"format"} if op.json_format else set()), name  # every one sent
        path = {p["name"] for p in route.get("parameters", []) if p["in"] == "path"}
        assert set(_placeholders(op.path)) == path, name


def test_each_body_has_only_the_routes_fields(spec):
    documented = operations(spec)
    schemas = spec["components"]["schemas"]
    for name, call in SAMPLES.items():
        op = OPERATIONS[name]
        body = documented[(op.method, op.path)].get("requestBody")
        if call.json is None:
            assert body is None or "application/json" not in body["content"], name
            continue
        assert body is not None, name
        schema = body["content"]["application/json"]["schema"]
        forms = [_resolve(schemas, s) for s in schema.get("anyOf", [schema])]
        fitting = [
            f for f in forms if set(call.json) <= set(f["properties"]) and set(f.get("required", [])) <= set(call.json)
        ]
        assert fitting, (name, sorted(call.json), [sorted(f["properties"]) for f in forms])
        if "messages" in call.json:  # each message, as the route's MessageIn
            message = _resolve(schemas, {"$ref": "#/components/schemas/MessageIn"})
            for m in call.json["messages"]:
                assert set(m) <= set(message["properties"]), set(m) - set(message["properties"])
    assert SAMPLES["import_"].headers["content-type"] in documented[("POST", "/v1/import")]["requestBody"]["content"]


def test_each_method_returns_the_routes_model(spec):
    documented = operations(spec)
    for name, op in OPERATIONS.items():
        answer = next(v for k, v in documented[(op.method, op.path)]["responses"].items() if k.startswith("2"))
        if op.result is None:
            assert "application/x-ndjson" in answer["content"], name
            continue
        ref = answer["content"]["application/json"]["schema"]["$ref"]
        assert ref.rsplit("/", 1)[1] == op.result.__name__, name
        assert getattr(models, op.result.__name__) is op.result, f"memq.client.models exports {op.result.__name__}"


def test_the_clients_models_are_the_documents_schemas(spec):
    """The models copied from route modules (users, webhooks, portability) and the API's own:
    the same fields, types, and required fields as the document's schema of that name."""
    schemas = spec["components"]["schemas"]
    compared = 0
    for name in models.__all__:
        model = getattr(models, name)
        if not (isinstance(model, type) and issubclass(model, BaseModel)) or name not in schemas:
            continue
        ours = _bare(model.model_json_schema(mode="serialization" if name.endswith("Out") else "validation"))
        theirs = _bare(schemas[name])
        if name in NOT_REQUIRED:
            assert NOT_REQUIRED[name] <= set(theirs["required"]) - set(ours["required"]), name
            theirs["required"] = sorted(set(theirs["required"]) - NOT_REQUIRED[name])
        assert ours == theirs, name
        compared += 1
    assert compared >= 40
    answers = {  # every model an answer of a called route refers to is in memq.client.models
        name for op in OPERATIONS.values() if op.result is not None for name in _refs(schemas, op.result.__name__)
    }
    assert answers <= set(models.__all__), sorted(answers - set(models.__all__))


def test_the_longest_flush_wait_is_the_apis(spec):
    (wait,) = [
        p
        for p in spec["paths"]["/v1/conversations/{conversation_id}/flush"]["post"]["parameters"]
        if p["name"] == "wait"
    ]
    assert wait["schema"]["maximum"] == FLUSH_WAIT_MAX


def test_only_what_is_safe_to_repeat_is_retried():
    for name, op in OPERATIONS.items():
        assert op.retry_safe is (name not in NEVER_RETRIED), name
        if op.method in ("GET", "DELETE"):
            assert op.retry_safe, name


# --- helpers ------------------------------------------------------------------------------------


def _placeholders(path: str) -> list[str]:
    import string

    return [field for _, field, _, _ in string.Formatter().parse(path) if field]


def _resolve(schemas: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = schemas[schema["$ref"].rsplit("/", 1)[1]]
    return schema


def _bare(schema: Any) -> Any:
    """A schema without what does not change the shape (titles, descriptions, defaults,
    examples), references by name, and the nested definitions pydantic inlines dropped."""
    if isinstance(schema, dict):
        out = {}
        for key, value in schema.items():
            if key in ("title", "description", "default", "examples", "$defs"):
                continue
            if key == "$ref":
                out[key] = value.rsplit("/", 1)[1]
            elif key == "required":
                out[key] = sorted(value)
            else:
                out[key] = _bare(value)
        return out
    if isinstance(schema, list):
        return [_bare(v) for v in schema]
    return schema


def _refs(schemas: dict[str, Any], name: str, seen: set[str] | None = None) -> set[str]:
    seen = set() if seen is None else seen
    if name in seen:
        return seen
    seen.add(name)
    for ref in _find_refs(schemas[name]):
        _refs(schemas, ref, seen)
    return seen


def _find_refs(schema: Any) -> list[str]:
    if isinstance(schema, dict):
        found = [schema["$ref"].rsplit("/", 1)[1]] if "$ref" in schema else []
        return found + [r for v in schema.values() for r in _find_refs(v)]
    if isinstance(schema, list):
        return [r for v in schema for r in _find_refs(v)]
    return []
