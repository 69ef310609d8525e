"""With no worker running the API still accepts and flushes, and says what is missing: in
its start-up log and in the flush answer."""

from __future__ import annotations

import logging

import pytest
from waiting import wait_until

from memq.producer.client import NO_WORKER

pytestmark = pytest.mark.integration


def start_up_warnings(caplog) -> list[object]:
    # structlog hands its events to stdlib logging (``memq.shared.logging``)
    return [r.msg for r in caplog.records if r.name == "memq.api" and "no_worker" in str(r.msg)]


def test_the_api_warns_when_no_worker_answers(own_redis, settings, auth, caplog):
    from fastapi.testclient import TestClient

    from memq.api.app import create_app
    from memq.api.services import Services

    alone = settings.model_copy(
        update={"redis_url": own_redis.url, "mailbox_redis_url": None, "mailbox_redis_cluster": False}
    )
    svc = Services.start(alone, load_model=False)
    try:
        app = create_app(alone, services=svc)
        # the process' first create_app configures logging, replacing the root logger's
        # handlers: caplog's is put back, or this test would pass only after another
        logging.getLogger().addHandler(caplog.handler)
        with TestClient(app) as client:
            url = "/v1/conversations/quiet/"
            one = {"role": "user", "content": "Is anyone there to remember this?", "message_id": "q1"}
            assert client.post(url + "messages", json=one, headers=auth).status_code == 202
            flushed = client.post(url + "flush", headers=auth).json()
            # the start-up ping runs beside serving (the API is ready at once): its warning
            # comes once the ping's wait is over
            wait_until(lambda: start_up_warnings(caplog), 30, interval=0.05, message="no start-up warning")
        assert flushed == {"conversation_id": "quiet", "flushed": True, "warning": NO_WORKER, "idle": None}
        start_up = start_up_warnings(caplog)
        assert len(start_up) == 1 and "memq worker" in str(start_up[0])  # once, at start-up
    finally:
        logging.getLogger().removeHandler(caplog.handler)
        svc.close()
