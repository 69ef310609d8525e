"""The memory inspector: a web page at ``/inspect`` for looking at what memq remembers of
a tenant (docs/inspector.md). ``/inspect`` is a shell page (a login form, a stylesheet and
a small script, all served from this package: no build step, no CDN); the script keeps the
API key in the tab's sessionStorage and loads server-rendered HTML fragments from
``/inspect/fragments/...`` with ``Authorization: Bearer <key>``, the same keys and tenant
scoping as ``/v1``. Not part of the OpenAPI document (``include_in_schema=False``)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import FileResponse, HTMLResponse

from memq import version
from memq.api.auth import caller, services
from memq.api.inspect import live, queries
from memq.api.inspect.render import HEADERS, HERE, render
from memq.api.inspect.timeline import Axis
from memq.api.services import Services
from memq.memory.retrieval.retrievability import retrievability_now
from memq.shared.errors import NotFound
from memq.shared.ids import check_conversation_id

router = APIRouter(prefix="/inspect", include_in_schema=False)
STATIC = {"inspect.js": "text/javascript", "inspect.css": "text/css"}


@router.get("")
def shell(request: Request) -> HTMLResponse:
    """The page itself: no data, so no key needed."""
    base = f"{str(request.scope.get('root_path', '')).rstrip('/')}/inspect"
    return render("shell.html", base=base, version=version())


@router.get("/static/{name}")
def static(name: str) -> FileResponse:
    if name not in STATIC:
        raise NotFound("no such file")
    return FileResponse(HERE / "static" / name, media_type=STATIC[name], headers=HEADERS)


@router.get("/fragments/conversations")
def conversations(tenant: str = Depends(caller), svc: Services = Depends(services)) -> HTMLResponse:
    with svc.conn(tenant) as conn:
        found = queries.conversations(conn, tenant)
    open_now = live.open_conversations(svc, tenant)
    stored = {c.conversation_id for c in found}
    only_open = sorted(((c, at) for c, at in open_now.items() if c not in stored), key=lambda p: p[1], reverse=True)
    return render("conversations.html", conversations=found, open_now=open_now, only_open=only_open)


@dataclass(frozen=True)
class Block:
    """An episode on the timeline."""

    number: int
    episode: queries.Episode
    retrievability: float
    key_moment: bool
    x: float
    width: float


def _blocks(episodes: list[queries.Episode], axis: Axis | None, svc: Services, now: datetime) -> list[Block]:
    out = []
    for i, e in enumerate(episodes, start=1):
        x, width = axis.span(e.listing.start_at, e.listing.end_at) if axis else (0.0, 0.0)
        r = retrievability_now(e.stability, e.last_review, e.listing.surprise, now, svc.settings)
        out.append(Block(i, e, r, e.listing.surprise >= svc.settings.key_moment_surprise, x, width))
    return out


@router.get("/fragments/conversation/{conversation_id}")
def conversation(
    conversation_id: str, tenant: str = Depends(caller), svc: Services = Depends(services)
) -> HTMLResponse:
    check_conversation_id(conversation_id, svc.settings.conversation_id_max_length)
    with svc.conn(tenant) as conn:
        episodes = queries.timeline(conn, tenant, conversation_id)
        messages = queries.conversation_messages(conn, tenant, conversation_id)
    pending = live.open_event(svc, tenant, conversation_id)
    if not episodes and not pending.unstored.total and pending.status.idle:
        raise NotFound("no such conversation")
    first, shown = pending.unstored.first, pending.unstored.messages
    open_times = [first.timestamp, shown[-1].timestamp] if first and shown else []
    axis = Axis.over([t for e in episodes for t in (e.listing.start_at, e.listing.end_at)] + open_times)
    open_span = axis.span(*open_times) if axis and open_times else None
    by_episode: dict[str, list[queries.Message]] = {}
    for m in messages:
        by_episode.setdefault(m.episode_id, []).append(m)
    return render(
        "conversation.html",
        conversation_id=conversation_id,
        blocks=_blocks(episodes, axis, svc, datetime.now(UTC)),
        axis=axis,
        open_span=open_span,
        pending=pending,
        messages=by_episode,
        shown=len(messages),
        stored=sum(e.listing.message_count for e in episodes),
    )


@router.get("/fragments/episode/{episode_id}")
def episode(episode_id: str, tenant: str = Depends(caller), svc: Services = Depends(services)) -> HTMLResponse:
    with svc.conn(tenant) as conn:
        found = queries.episode(conn, tenant, episode_id)
        if found is None:
            raise NotFound("no such episode")
        messages = queries.episode_messages(conn, tenant, found.episode.listing.id)
        reviews, waiting = queries.reviews(conn, tenant, found.episode.listing.id)
    (block,) = _blocks([found.episode], None, svc, datetime.now(UTC))
    return render("episode.html", detail=found, block=block, messages=messages, reviews=reviews, waiting=waiting)


@router.get("/fragments/facts")
def facts(
    conversation_id: str | None = Query(None),
    tenant: str = Depends(caller),
    svc: Services = Depends(services),
) -> HTMLResponse:
    if conversation_id:
        check_conversation_id(conversation_id, svc.settings.conversation_id_max_length)
    with svc.conn(tenant) as conn:
        found, history = queries.facts(conn, tenant, conversation_id or None)
    now = datetime.now(UTC)
    times = [now] + [t for f in found for t in (f.valid_at, f.invalid_at, f.created_at, f.expired_at) if t]
    return render(
        "facts.html",
        facts=found,
        history=history,
        axis=Axis.over(times),
        now=now,
        conversation_id=conversation_id or "",
    )


@router.get("/fragments/search")
def search(
    q: str = Query(""),
    conversation_id: str = Query(""),
    tenant: str = Depends(caller),
    svc: Services = Depends(services),
) -> HTMLResponse:
    """The retrieval of ``POST /v1/memory/retrieve`` (not recorded for review: looking is
    not using), with every score of every memory it returns."""
    result = None
    if q.strip():
        result = svc.memory(tenant).retrieve(q, conversation_id=conversation_id or None, record=False)
    return render("search.html", q=q, conversation_id=conversation_id, result=result, settings=svc.settings)


@router.get("/fragments/status")
def status(tenant: str = Depends(caller), svc: Services = Depends(services)) -> HTMLResponse:
    return render("status.html", status=live.status(svc, tenant), notice=None)


@router.post("/fragments/quarantine/retry")
def retry(
    conversation_id: str = Query(...),
    item: str = Query(..., max_length=300),
    tenant: str = Depends(caller),
    svc: Services = Depends(services),
) -> HTMLResponse:
    check_conversation_id(conversation_id, svc.settings.conversation_id_max_length)
    done = live.retry(svc, tenant, conversation_id, item)
    if done is None:
        raise NotFound("nothing in the quarantine matches")
    notice = f"retrying {done.kind} {done.id} of {conversation_id}"
    return render("status.html", status=live.status(svc, tenant), notice=notice)
