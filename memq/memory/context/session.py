"""The session context (MIRA, MIRA's session cache loading): what an agent puts at the
top of a new session, in order

1. a collapse marker: older history is stored as memories and can be searched;
   then the most relevant facts known (semantic memory);
2. the topics so far: the newest chapters, a line each (``memq.memory.chapters``); then
   the most recent episodes' summaries;
3. continuity: the last messages before the open segment;
4. a session-boundary marker with the time gap;
5. the open segment: messages accepted but not yet in an episode.

Pure: the caller passes what was read and a token counter. Everything fits
``max_tokens`` (counted on exactly the returned text); when it does not all fit, the
newest open-segment messages are kept first, then continuity, then facts, then the
chapters, then summaries, newest first, and what was left out is said.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, tzinfo
from typing import Any

from memq.memory.chapters.chapter import Chapter
from memq.memory.context.model import EpisodeListing, OpenSegment, Said

Counter = Callable[[str], int]


@dataclass(frozen=True)
class SessionParams:
    max_tokens: int
    summary_count: int = 3  # MIRA: session_summary_count
    chapter_count: int = 5
    continuity_messages: int = 6


@dataclass
class SessionContext:
    conversation_id: str
    total_episodes: int
    summaries: list[EpisodeListing]  # oldest first
    facts: list[str]  # fact lines shown, most relevant first
    chapters: list[str]  # chapter lines shown, oldest first
    continuity: list[Said]
    active: list[Said]
    gap: timedelta | None  # from the last message before the open segment to its first (or to now)
    text: str
    tokens: int
    left_out: dict[str, int] = field(default_factory=dict)  # what the budget did not hold, per part
    timezone: str = "UTC"

    def to_json(self) -> dict[str, Any]:
        def said(m: Said) -> dict[str, Any]:
            return {"role": m.role, "speaker": m.speaker, "content": m.content, "timestamp": m.at.isoformat()}

        return {
            "conversation_id": self.conversation_id,
            "timezone": self.timezone,
            "total_episodes": self.total_episodes,
            "summaries": [
                {
                    "id": e.id,
                    "title": e.title,
                    "summary": e.summary,
                    "start_at": e.start_at.isoformat(),
                    "end_at": e.end_at.isoformat(),
                    "message_count": e.message_count,
                }
                for e in self.summaries
            ],
            "facts": self.facts,
            "chapters": self.chapters,
            "continuity": [said(m) for m in self.continuity],
            "gap_seconds": None if self.gap is None else int(self.gap.total_seconds()),
            "open_segment": [said(m) for m in self.active],
            "left_out": self.left_out,
            "tokens": self.tokens,
            "text": self.text,
        }


def human_gap(gap: timedelta) -> str:
    seconds = max(0, int(gap.total_seconds()))
    days, rest = divmod(seconds, 86_400)
    hours, rest = divmod(rest, 3_600)
    minutes = rest // 60
    parts = [(days, "day"), (hours, "hour"), (minutes, "minute")]
    shown = [f"{n} {unit}{'s' if n != 1 else ''}" for n, unit in parts if n][:2]
    return " ".join(shown) if shown else "less than a minute"


def _when(moment: datetime, tz: tzinfo) -> str:
    local = moment.astimezone(tz)
    return f"{local.day} {local:%b %Y %H:%M} {local.tzname() or ''}".rstrip()


def message_line(m: Said) -> str:
    return f"- {m.who}: {' '.join(m.content.split())}"


def _shorten_line(line: str, tokens: int, count: Counter) -> str | None:
    """The longest word prefix of ``line`` within ``tokens``, marked with an ellipsis."""
    if count(line) <= tokens:
        return line
    words = line.split(" ")
    lo, hi = 0, len(words)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if count(" ".join(words[:mid]) + " …") <= tokens:
            lo = mid
        else:
            hi = mid - 1
    return " ".join(words[:lo]) + " …" if lo > 2 else None


def build_session_context(
    conversation_id: str,
    recent: Sequence[EpisodeListing],
    total_episodes: int,
    continuity: Sequence[Said],
    open_segment: OpenSegment,
    *,
    now: datetime,
    tz: tzinfo,
    tz_name: str,
    params: SessionParams,
    count: Counter,
    open_count: int | None = None,
    facts: Sequence[str] = (),
    chapters: Sequence[Chapter] = (),
) -> SessionContext:
    """``recent``: the newest episodes, any order (the newest ``summary_count`` are
    used); ``continuity``: the last messages before the open segment, in order;
    ``open_count``: how many messages the open segment holds when ``open_segment`` has
    only its newest ones."""
    unread = max(0, (open_count or 0) - len(open_segment.messages))
    summaries = (
        sorted(recent, key=lambda e: (e.start_at, e.id))[-params.summary_count :] if params.summary_count else []
    )
    before = list(continuity)[-params.continuity_messages :] if params.continuity_messages else []
    active = list(open_segment.messages)
    last_before = before[-1].at if before else (summaries[-1].end_at if summaries else None)
    gap = None if last_before is None else (active[0].at if active else now) - last_before

    collapse = None
    if total_episodes:
        plural = "s are" if total_episodes != 1 else " is"
        collapse = (
            f"[Earlier conversation: {total_episodes} episode{plural} stored as memories; "
            "search them with retrieve_memory.]"
        )
    boundary = None
    if gap is not None and last_before is not None:  # both set or neither
        since = f"{human_gap(gap)} since the last message ({_when(last_before, tz)})"
        boundary = f"[Session boundary: {since}.]" if active else f"[Session boundary: new session, {since}.]"

    def chapter_line(c: Chapter) -> str:
        start, end = c.start_at.astimezone(tz), c.end_at.astimezone(tz)
        events = f" ({len(c.episode_ids)} events)" if len(c.episode_ids) > 1 else ""
        return f"- {start.day} {start:%b %H:%M}-{end:%H:%M} · {c.title}{events}"

    outline = (
        [chapter_line(c) for c in sorted(chapters, key=lambda c: (c.start_at, c.id))[-params.chapter_count :]]
        if params.chapter_count
        else []
    )

    def summary_block(e: EpisodeListing) -> str:
        return f"### {_when(e.start_at, tz)} · {e.title}\n{e.summary}"

    def render(keep_s: list[EpisodeListing], keep_c: list[str], keep_a: list[str], left: dict[str, int]) -> str:
        parts: list[str] = []
        if collapse:
            parts.append(collapse)
        if keep_f:
            parts.append("\n".join(["## Known facts", *keep_f]))
        if keep_t:
            parts.append("\n".join(["## Topics so far", *keep_t]))
        if keep_s:
            head = "## Recent episodes" + (f" ({left['summaries']} earlier left out)" if left.get("summaries") else "")
            parts.append("\n\n".join([head, *(summary_block(e) for e in keep_s)]))
        if keep_c:
            head = "## Last messages before this session"
            if left.get("continuity"):
                head += f" ({left['continuity']} earlier left out)"
            parts.append("\n".join([head, *keep_c]))
        if boundary:
            parts.append(boundary)
        if keep_a or active or left.get("open_segment"):
            head = "## Open segment (not yet in an episode)"
            if left.get("open_segment"):
                head += f" ({left['open_segment']} earlier messages left out)"
            parts.append("\n".join([head, *keep_a]))
        return "\n\n".join(parts)

    # Fill by importance: the newest open-segment messages, then continuity, then summaries.
    lines_a = [message_line(m) for m in active]
    lines_c = [message_line(m) for m in before]
    keep_a: list[str] = []
    keep_c: list[str] = []
    keep_s: list[EpisodeListing] = []
    keep_f: list[str] = []
    keep_t: list[str] = []
    budget = params.max_tokens

    def left() -> dict[str, int]:
        out = {
            "open_segment": unread + len(lines_a) - len(keep_a),
            "continuity": len(lines_c) - len(keep_c),
            "summaries": len(summaries) - len(keep_s),
            "chapters": len(outline) - len(keep_t),
        }
        return {k: v for k, v in out.items() if v}

    def text_now() -> str:
        return render(keep_s, keep_c, keep_a, left())

    # Greedy on each line's own count (plus its line break) against what the frame costs,
    # with room for the "left out" notes; the exact count of the joined text decides last.
    used = count(text_now()) + 12
    for lines, keep in ((lines_a, keep_a), (lines_c, keep_c)):
        if lines and not keep and keep is keep_c:
            used += count("## Last messages before this session") + 2
        for line in reversed(lines):
            cost = count(line) + 1
            if used + cost <= budget:
                keep.insert(0, line)
                used += cost
                continue
            short = _shorten_line(line, budget - used - 1, count) if budget - used > 10 else None
            if short is not None:
                keep.insert(0, short)
                used += count(short) + 1
            break
    for line in facts:
        cost = count(line) + 1 + (count("## Known facts") + 2 if not keep_f else 0)
        if used + cost > budget:
            break
        keep_f.append(line)
        used += cost
    for line in reversed(outline):
        cost = count(line) + 1 + (count("## Topics so far") + 2 if not keep_t else 0)
        if used + cost > budget:
            break
        keep_t.insert(0, line)
        used += cost
    for e in reversed(summaries):
        cost = count(summary_block(e)) + 2 + (count("## Recent episodes") + 2 if not keep_s else 0)
        if used + cost > budget:
            break
        keep_s.insert(0, e)
        used += cost
    text = text_now()
    while count(text) > budget and (
        keep_s or keep_t or keep_f or keep_c or keep_a
    ):  # the markers alone may not fit a tiny budget
        if keep_s:
            keep_s.pop(0)
        elif keep_t:
            keep_t.pop(0)
        elif keep_f:
            keep_f.pop()
        else:
            next(k for k in (keep_c, keep_a) if k).pop(0)
        text = text_now()
    if count(text) > budget:
        text = ""
    kept_a = active[len(active) - len(keep_a) :] if keep_a else []
    kept_c = before[len(before) - len(keep_c) :] if keep_c else []
    return SessionContext(
        conversation_id,
        total_episodes,
        keep_s,
        keep_f,
        keep_t,
        kept_c,
        kept_a,
        gap,
        text,
        count(text),
        left(),
        tz_name,
    )
