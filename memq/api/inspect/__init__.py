"""The memory inspector: a web page at ``/inspect`` for looking at what memq remembers of
a tenant (docs/inspector.md). ``/inspect`` is a shell page (a login form, a stylesheet and
a small script, all served from this package: no build step, no CDN); the script keeps the
API key in the tab's sessionStorage and loads server-rendered HTML fragments from
``/inspect/fragments/...`` with ``Authorization: Bearer <key>``, the same keys and tenant
scoping as ``/v1``. Not part of the OpenAPI document (``include_in_schema=False``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import FileResponse, HTMLResponse

from memq import version
from memq.api.auth import caller, services
from memq.api.inspect import chapters, live, queries
from memq.api.inspect.render import HEADERS, HERE, render
from memq.api.inspect.timeline import Axis, Bar, Group, lay_out
from memq.api.services import Services
from memq.memory.chapters.chapter import Chapter
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
    bar: Bar | None = None  # where it is drawn
    chapter: int | None = None  # the number of the chapter it is in


def _blocks(
    episodes: list[queries.Episode],
    svc: Services,
    now: datetime,
    bars: Sequence[Bar] = (),
    chapter_of: dict[int, int] | None = None,
) -> list[Block]:
    out = []
    for i, e in enumerate(episodes):
        r = retrievability_now(e.stability, e.last_review, e.listing.surprise, now, svc.settings)
        key = e.listing.surprise >= svc.settings.key_moment_surprise
        bar = bars[i] if i < len(bars) else None
        out.append(Block(i + 1, e, r, key, bar, (chapter_of or {}).get(i)))
    return out


@dataclass(frozen=True)
class ChapterRow:
    """A chapter as the page lists it: numbered, with the numbers of its events."""

    number: int
    chapter: Chapter
    events: list[int]  # the events' numbers on this page

    @property
    def event_range(self) -> str:
        first, last = self.events[0], self.events[-1]
        return str(first) if first == last else f"{first}–{last}"


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
    drawn = chapters.chapters(svc, tenant, conversation_id, [e.listing for e in episodes])
    index = {e.listing.id: i for i, e in enumerate(episodes)}
    rows: list[ChapterRow] = []
    for c in drawn.chapters:
        mine = sorted(index[i] for i in c.episode_ids if i in index)
        if mine:
            rows.append(ChapterRow(len(rows) + 1, c, [i + 1 for i in mine]))
    chapter_of = {n - 1: row.number for row in rows for n in row.events}
    first, shown = pending.unstored.first, pending.unstored.messages
    open_span = (first.timestamp, shown[-1].timestamp) if first and shown else None
    layout = lay_out(
        [(e.listing.start_at, e.listing.end_at) for e in episodes],
        [Group(r.chapter.title, r.chapter.start_at, r.chapter.end_at, tuple(n - 1 for n in r.events)) for r in rows],
        open_span,
    )
    by_episode: dict[str, list[queries.Message]] = {}
    for m in messages:
        by_episode.setdefault(m.episode_id, []).append(m)
    return render(
        "conversation.html",
        conversation_id=conversation_id,
        blocks=_blocks(episodes, svc, datetime.now(UTC), layout.bars if layout else (), chapter_of),
        layout=layout,
        chapters=rows,
        chapter_problem=drawn.problem,
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
    (block,) = _blocks([found.episode], svc, datetime.now(UTC))
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
    ranked, left_out = _ranked(result.records if result else [])
    return render(
        "search.html",
        q=q,
        conversation_id=conversation_id,
        result=result,
        ranked=ranked,
        left_out=left_out,
        settings=svc.settings,
    )


def _ranked(records: list[dict[str, Any]]) -> tuple[list[tuple[int, dict[str, Any]]], list[int]]:
    """The memories returned, numbered 1..n in the order returned; and the candidates'
    ranks retrieval gave that are not among them. A record's ``rank`` is its place among
    the candidates ranked before the token budget decided what is returned, so a candidate
    that did not fit leaves a gap there: the page numbers what it shows instead."""
    shown = {r["rank"] for r in records}
    top = max(shown, default=0)
    return list(enumerate(records, start=1)), [n for n in range(1, top + 1) if n not in shown]


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
