"""The HTTP API as ``memq api`` serves it, plus the ingest benchmark's floor: a bare endpoint
``POST /bench/noop/{conversation_id}`` in the same application and server stack (the same
uvicorn settings, the same middleware: request log and body limit; the same bearer-key
dependency; the same request model, parsed from the same JSON) that answers 202 with the
same response shape without touching Redis. It is declared like the real endpoint (a plain
``def``, so FastAPI runs it in its thread pool too): the difference between the two is what
``add_messages`` does (validation, the Lua enqueue, publishing a drain), nothing else.

Run by ``memq_lab.bench.ingest`` as ``python -m memq_lab.bench.ingest_server --port N``; settings
come from the environment, as for ``memq api``. One difference from ``memq api``: the
embedding model is not loaded at startup (ingest never embeds; loading it costs startup
time and memory, not ingest time).
"""

from __future__ import annotations

import argparse

from fastapi import Depends, FastAPI

from memq.api.app import create_app
from memq.api.auth import caller, services
from memq.api.models import AddResultOut, MessageIn, MessagesIn, MessagesOut
from memq.api.routes.messages import ConversationId
from memq.api.services import Services
from memq.shared.ids import check_conversation_id
from memq.shared.settings import get_settings

NOOP_PATH = "/bench/noop/{conversation_id}"


def create_bench_app() -> FastAPI:
    settings = get_settings()
    # The services as the app's lifespan starts them, but without loading the embedding model:
    # ingest never embeds (the model costs startup time and memory, not ingest time).
    app = create_app(settings, Services.start(settings, load_model=False))

    @app.post(NOOP_PATH, status_code=202, response_model=MessagesOut, include_in_schema=False)
    def noop(
        body: MessagesIn | MessageIn,
        conversation_id: str = ConversationId,
        tenant: str = Depends(caller),
        svc: Services = Depends(services),
    ) -> MessagesOut:
        check_conversation_id(conversation_id, svc.settings.conversation_id_max_length)
        items = body.messages if isinstance(body, MessagesIn) else [body]
        return MessagesOut(
            conversation_id=conversation_id,
            results=[
                AddResultOut(index=i, status="accepted", message_id=m.message_id or "") for i, m in enumerate(items)
            ],
        )

    return app


def main() -> None:
    import uvicorn

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    # As memq.cli.servers.api_cmd runs it (one worker process).
    uvicorn.run(
        "memq_lab.bench.ingest_server:create_bench_app",
        factory=True,
        host=args.host,
        port=args.port,
        workers=1,
        log_config=None,
        proxy_headers=True,
        access_log=False,
    )


if __name__ == "__main__":
    main()
