"""The conversation manifest (MIRA): chapters (``memq.memory.chapters``: the topics a
reader would name, each a run of events) as an ASCII tree grouped by relative date, newest
first, each with its time range and a short title, the still-open segment marked Active.
Pure: the caller passes the episodes, their chapters, the open segment and "now".

    CONVERSATION MANIFEST
    ├─ Today
    │  ├─ [14:15 - Active] Planning the garden beds
    │  └─ [09:00 - 10:15] Morning standup: the release date and the flaky test (3 events)
    ├─ Yesterday
    │  └─ [08:00 - 08:27] Arduino servo debugging
    └─ Jan 18
       └─ [15:00 - 16:12] Nacho recipe research

The JSON carries both levels: ``groups`` lists every event (as before chapters), and
``chapters`` the chapters with the events each holds.

Times are shown in the caller's time zone (UTC by default); days are that zone's days.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime, tzinfo
from typing import Any

from memq.memory.chapters.chapter import Chapter
from memq.memory.context.model import EpisodeListing, OpenSpan


@dataclass(frozen=True)
class ManifestEntry:
    id: str | None  # None for the open segment
    title: str
    start_at: datetime
    end_at: datetime
    status: str  # "active" | "collapsed"
    message_count: int
    tools_used: tuple[str, ...] = ()
    episode_ids: tuple[str, ...] = ()  # a chapter's events
    title_source: str = ""


@dataclass(frozen=True)
class ManifestGroup:
    label: str  # "Today", "Yesterday", "Jan 18", "Jan 18, 2024"
    day: date
    entries: tuple[ManifestEntry, ...]


@dataclass(frozen=True)
class Manifest:
    conversation_id: str
    groups: tuple[ManifestGroup, ...]
    total_episodes: int  # stored episodes, of which the newest ``depth`` are shown
    generated_at: datetime
    timezone: str
    chapter_groups: tuple[ManifestGroup, ...] | None = None  # None: drawn without chapters

    @property
    def entries(self) -> list[ManifestEntry]:
        return [e for g in self.groups for e in g.entries]

    @property
    def chapters(self) -> list[ManifestEntry]:
        return [e for g in self.chapter_groups or () for e in g.entries]


def short(text: str, chars: int) -> str:
    """One line of at most ``chars`` characters, cut at a word with an ellipsis."""
    line = " ".join(text.split())
    if len(line) <= chars:
        return line
    cut = line[: chars - 1]
    if line[chars - 1] != " " and " " in cut:  # do not end in the middle of a word
        cut = cut.rsplit(" ", 1)[0]
    return cut.rstrip(" ,;:.-") + "…"


def day_label(day: date, today: date) -> str:
    delta = (today - day).days
    if delta == 0:
        return "Today"
    if delta == 1:
        return "Yesterday"
    label = f"{day:%b} {day.day}"
    return label if day.year == today.year else f"{label}, {day.year}"


def open_title(span: OpenSpan, chars: int) -> str:
    """The open segment has no title yet: the first words of its first message."""
    return short(span.first.content, chars)


def build_manifest(
    conversation_id: str,
    episodes: Sequence[EpisodeListing],
    open_span: OpenSpan | None,
    *,
    now: datetime,
    tz: tzinfo,
    tz_name: str,
    depth: int,
    title_chars: int,
    total_episodes: int | None = None,
    chapters: Sequence[Chapter] | None = None,
) -> Manifest:
    """``episodes`` in any order; the newest ``depth`` entries (the open segment counts as
    one) are grouped by the day they began in ``tz``; so are ``chapters`` (of those
    episodes), all of them."""
    active: list[ManifestEntry] = []
    if open_span is not None:
        active.append(
            ManifestEntry(
                None,
                open_title(open_span, title_chars),
                open_span.first.at,
                open_span.last.at,
                "active",
                open_span.count,
            )
        )
    entries = list(active)
    for e in sorted(episodes, key=lambda e: (e.start_at, e.id), reverse=True):
        entries.append(
            ManifestEntry(
                e.id,
                short(e.title, title_chars),
                e.start_at,
                e.end_at,
                "collapsed",
                e.message_count,
                tuple(e.tools_used),
            )
        )
    today = now.astimezone(tz).date()
    chapter_groups = None
    if chapters is not None:
        chapter_entries = active + [
            ManifestEntry(
                c.id,
                short(c.title, title_chars),
                c.start_at,
                c.end_at,
                "collapsed",
                c.message_count,
                c.tools_used,
                c.episode_ids,
                c.title_source,
            )
            for c in sorted(chapters, key=lambda c: (c.start_at, c.id), reverse=True)
        ]
        chapter_groups = _by_day(chapter_entries, tz, today)
    return Manifest(
        conversation_id,
        _by_day(entries[:depth], tz, today),
        len(episodes) if total_episodes is None else total_episodes,
        now,
        tz_name,
        chapter_groups,
    )


def _by_day(entries: Sequence[ManifestEntry], tz: tzinfo, today: date) -> tuple[ManifestGroup, ...]:
    groups: list[ManifestGroup] = []
    for entry in entries:
        day = entry.start_at.astimezone(tz).date()
        if groups and groups[-1].day == day:
            groups[-1] = ManifestGroup(groups[-1].label, day, (*groups[-1].entries, entry))
        else:
            groups.append(ManifestGroup(day_label(day, today), day, (entry,)))
    return tuple(groups)


def _span(entry: ManifestEntry, tz: tzinfo) -> str:
    start = entry.start_at.astimezone(tz)
    if entry.status == "active":
        return f"[{start:%H:%M} - Active]"
    end = entry.end_at.astimezone(tz)
    if end.date() != start.date():
        return f"[{start:%H:%M} - {end:%b} {end.day} {end:%H:%M}]"
    return f"[{start:%H:%M} - {end:%H:%M}]"


def render_markdown(manifest: Manifest, tz: tzinfo) -> str:
    """The ASCII tree of MIRA (inside no code fence: an agent reads it as text): the
    chapters when they were drawn, a chapter of several events saying how many."""
    lines = ["CONVERSATION MANIFEST"]
    groups = manifest.groups if manifest.chapter_groups is None else manifest.chapter_groups
    if not groups:
        lines.append("└─ (no episodes yet)")
        return "\n".join(lines)
    for gi, group in enumerate(groups):
        last_group = gi == len(groups) - 1
        lines.append(f"{'└─' if last_group else '├─'} {group.label}")
        for ei, entry in enumerate(group.entries):
            last_entry = ei == len(group.entries) - 1
            stem = "   " if last_group else "│  "
            events = f" ({len(entry.episode_ids)} events)" if len(entry.episode_ids) > 1 else ""
            lines.append(f"{stem}{'└─' if last_entry else '├─'} {_span(entry, tz)} {entry.title}{events}")
    if manifest.chapter_groups is None:
        shown = sum(1 for e in manifest.entries if e.status == "collapsed")
    else:
        shown = sum(len(e.episode_ids) for e in manifest.chapters)
    if manifest.total_episodes > shown:
        lines.append(f"({manifest.total_episodes - shown} older episodes not shown; search them with retrieve_memory)")
    return "\n".join(lines)


def to_json(manifest: Manifest) -> dict[str, Any]:
    chapters = [
        {
            "id": e.id,
            "title": e.title,
            "title_source": e.title_source,
            "status": e.status,
            "date": g.day.isoformat(),
            "label": g.label,
            "start_at": e.start_at.isoformat(),
            "end_at": e.end_at.isoformat(),
            "message_count": e.message_count,
            "episode_ids": list(e.episode_ids),
            "tools_used": list(e.tools_used),
        }
        for g in manifest.chapter_groups or ()
        for e in g.entries
    ]
    return {
        "conversation_id": manifest.conversation_id,
        "generated_at": manifest.generated_at.isoformat(),
        "timezone": manifest.timezone,
        "total_episodes": manifest.total_episodes,
        "groups": [
            {
                "label": g.label,
                "date": g.day.isoformat(),
                "segments": [
                    {
                        "id": e.id,
                        "title": e.title,
                        "status": e.status,
                        "start_at": e.start_at.isoformat(),
                        "end_at": e.end_at.isoformat(),
                        "message_count": e.message_count,
                        "tools_used": list(e.tools_used),
                    }
                    for e in g.entries
                ],
            }
            for g in manifest.groups
        ],
        "chapters": chapters,
    }
