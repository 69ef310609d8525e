"""A fair share of one API process (memq.api.fair_share), served by uvicorn: a key's
requests beyond MEMQ_API_CONCURRENCY_PER_KEY wait their turn while another key's go
straight through, and every tenant route takes turns."""

from __future__ import annotations

import dataclasses
import threading
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from waiting import wait_until

pytestmark = pytest.mark.integration


def test_every_tenant_route_takes_its_turn(api_services, settings, stranger):
    """Every operation under /v1 in the OpenAPI document, called with made-up ids and an
    empty body (a 404 or a 400 at most, on a tenant of its own), takes a turn first: a
    router included without the dependency would let its key crowd the others out."""
    import re

    from fastapi.testclient import TestClient

    from memq.api.app import create_app
    from memq.api.fair_share import Turns

    taken: list[str] = []

    class Recording(Turns):
        def turn(self, key: str):
            taken.append(key)
            return super().turn(key)

    svc = dataclasses.replace(api_services)
    svc.turns = Recording(per_key=2)
    app = create_app(settings, services=svc)
    operations = [
        (method.upper(), re.sub(r"\{[^}]+\}", "x0", path))
        for path, item in app.openapi()["paths"].items()
        if path.startswith("/v1/")
        for method in item
    ]
    assert len(operations) > 20
    missed = []
    with TestClient(app, base_url="http://127.0.0.1") as client:
        for method, path in operations:
            before = len(taken)
            answer = client.request(method, path, headers=stranger[1], json={})
            assert answer.status_code < 500, (method, path, answer.text)
            if len(taken) == before:
                missed.append(f"{method} {path}")
    assert missed == []


def test_a_busy_key_waits_its_turn_and_another_key_does_not(api_services, settings, auth, stranger):
    """Key A's two turns are held by two requests that block; A's third request (a real
    route) waits in line, key B's same request is answered at once, and A's is answered
    once a turn frees."""
    from fastapi import APIRouter, Depends
    from live_api import served

    from memq.api.app import create_app
    from memq.api.auth import caller
    from memq.api.fair_share import take_turn
    from memq.shared.auth.api_keys import header_key_id

    svc = dataclasses.replace(api_services)  # turns of its own (two a key: the default)
    assert svc.turns.per_key == 2
    app = create_app(settings, services=svc)
    release = threading.Event()
    blocking = APIRouter()

    @blocking.get("/v1/test/blocking")
    def held(_: str = Depends(caller)) -> dict[str, bool]:  # a route that works until released
        return {"released": release.wait(30)}

    app.include_router(blocking, dependencies=[Depends(take_turn, scope="function")])
    a = header_key_id(auth["Authorization"])
    assert a is not None
    with served(app) as url, ThreadPoolExecutor(4) as pool:

        def get(path: str, headers: dict[str, str]) -> httpx.Response:
            return httpx.get(url + path, headers=headers, timeout=60)

        blockers = [pool.submit(get, "/v1/test/blocking", auth) for _ in range(2)]
        wait_until(lambda: svc.turns.waiting(a) == 2, 30, interval=0.02, message="A's turns were not taken")
        third = pool.submit(get, "/v1/conversations", auth)
        wait_until(lambda: svc.turns.waiting(a) == 3, 30, interval=0.02, message="A's third never came in")
        other = get("/v1/conversations", stranger[1])
        assert other.status_code == 200, other.text  # B went straight through A's line
        assert not third.done()  # A's third still waits its turn
        release.set()
        assert third.result(60).status_code == 200
        assert all(b.result(60).json() == {"released": True} for b in blockers)
    assert svc.turns.waiting(a) == 0
