"""The body limit answers 413 before the application reads a body that is too large,
declared or chunked, and lets everything else through."""

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from memq.api.limits import BodyLimit


async def echo(request: Request) -> JSONResponse:
    return JSONResponse({"bytes": len(await request.body())})


def client() -> TestClient:
    return TestClient(BodyLimit(Starlette(routes=[Route("/", echo, methods=["POST"])]), max_bytes=1000))


def test_small_bodies_pass_and_large_ones_get_413():
    c = client()
    assert c.post("/", content=b"x" * 1000).json() == {"bytes": 1000}
    r = c.post("/", content=b"x" * 1001)
    assert r.status_code == 413 and r.json()["error"]["type"] == "request_too_large"


def test_a_chunked_body_is_counted_as_it_arrives():
    def chunks():
        for _ in range(30):
            yield b"x" * 100

    r = client().post("/", content=chunks())
    assert r.status_code == 413


def test_a_bad_content_length_is_a_400():
    r = client().post("/", content=b"x", headers={"content-length": "many"})
    assert r.status_code == 400
