"""Who is calling: the tenant of the bearer key (``Authorization: Bearer memq_…``). A
missing, malformed, unknown or revoked key gets the same 401, which says nothing about
what exists. Keys are never logged. With ``MEMQ_API_AUTH=false`` every caller is
``MEMQ_TENANT`` (for a trusted network only)."""

from __future__ import annotations

from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from memq.api.services import Services
from memq.shared.activity import Actor, api_actor
from memq.shared.auth.api_keys import bearer, header_key_id

scheme = HTTPBearer(auto_error=False, description="An API key from `memq keys create --tenant T`.")

UNAUTHORIZED = "a valid API key is required: Authorization: Bearer <key> (create one with `memq keys create`)"


def services(request: Request) -> Services:
    return request.app.state.services


def tenant_for(services_: Services, authorization: str | None) -> str | None:
    if not services_.settings.api_auth:
        return services_.settings.tenant
    return services_.keys.tenant_of(bearer(authorization))


def caller(request: Request, _: HTTPAuthorizationCredentials | None = Depends(scheme)) -> str:
    svc = services(request)
    authorization = request.headers.get("authorization")
    tenant = tenant_for(svc, authorization)
    if tenant is None:
        raise HTTPException(401, UNAUTHORIZED, headers={"WWW-Authenticate": "Bearer"})
    request.state.memq_tenant = tenant  # for the request's log line (memq.api.request_log)
    refused = over_rate(svc, authorization, tenant)
    if refused is not None:
        message, seconds = refused
        raise HTTPException(429, message, headers={"Retry-After": str(seconds)})
    return tenant


def acting(request: Request, _tenant: str = Depends(caller)) -> Actor:
    """Who the caller is in the activity log: its key's id (checked by ``caller`` first),
    or ``api`` when the API runs without keys."""
    if not services(request).settings.api_auth:
        return api_actor(None)
    return api_actor(header_key_id(request.headers.get("authorization")))


def rate_caller(svc: Services, authorization: str | None, tenant: str) -> str:
    """Whose budget a request spends: its key's; without keys, its tenant's."""
    return f"key:{header_key_id(authorization)}" if svc.settings.api_auth else f"tenant:{tenant}"


def over_message_rate(request: Request, svc: Services, tenant: str, messages: int) -> None:
    """Raise 429 with Retry-After when ``messages`` more are over the caller's message rate
    (``memq.api.rate_limit.MessageRate``); else they are spent."""
    who = rate_caller(svc, request.headers.get("authorization"), tenant)
    refused = svc.message_rate.refusal(who, messages)
    if refused is not None:
        message, seconds = refused
        raise HTTPException(429, message, headers={"Retry-After": str(seconds)})


def over_rate(svc: Services, authorization: str | None, tenant: str) -> tuple[str, int] | None:
    """(what to say, Retry-After seconds) when the caller is over its rate limit, else None.
    Each key has its limit (``memq.api.rate_limit``); without keys, each tenant."""
    who = rate_caller(svc, authorization, tenant)
    wait = svc.rate_limiter.wait_ms(who)
    if wait <= 0 or svc.rate_limiter.limit is None:
        return None
    return svc.rate_limiter.limit.refusal(wait)
