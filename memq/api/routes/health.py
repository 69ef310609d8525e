"""Liveness and readiness: ``/healthz`` says the process answers; ``/readyz`` says this
replica can serve (Redis and PostgreSQL answer), naming each check, and reports whether a
worker answers a ping without requiring it: the API accepts messages and serves memory
with no worker up, and a load balancer must not take every replica out when the workers
restart."""

from __future__ import annotations

from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse

from memq.api.auth import services
from memq.api.models import Check, HealthOut, ReadyOut
from memq.api.services import Services

router = APIRouter(tags=["health"])


@router.get("/healthz", response_model=HealthOut, summary="The process is up")
def healthz() -> HealthOut:
    return HealthOut(status="ok")


@router.get(
    "/readyz",
    response_model=ReadyOut,
    summary="Redis and PostgreSQL are reachable (and whether a worker answers)",
    responses={503: {"model": ReadyOut, "description": "Redis or PostgreSQL is not"}},
)
def readyz(svc: Services = Depends(services)) -> JSONResponse:
    checks: dict[str, Check] = {}
    try:
        svc.redis.ping()
        with svc.producer.celery.connection_for_write() as broker:
            broker.ensure_connection(max_retries=1)
        checks["redis"] = Check(ok=True)
    except Exception as exc:
        checks["redis"] = Check(ok=False, detail=type(exc).__name__)
    try:
        with svc.connections.pool.connection(timeout=2) as conn:
            conn.execute("SELECT 1")
        checks["postgres"] = Check(ok=True)
    except Exception as exc:
        checks["postgres"] = Check(ok=False, detail=type(exc).__name__)
    try:
        replies = svc.producer.celery.control.ping(timeout=1.0) or []
        checks["workers"] = Check(
            ok=bool(replies), detail=f"{len(replies)} answered" if replies else "no worker answered a ping"
        )
    except Exception as exc:
        checks["workers"] = Check(ok=False, detail=type(exc).__name__)
    ready = checks["redis"].ok and checks["postgres"].ok  # workers: reported, not required
    return JSONResponse(ReadyOut(ready=ready, checks=checks).model_dump(), status_code=200 if ready else 503)
