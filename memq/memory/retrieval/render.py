"""Renderings of retrieved memories: markdown for an LLM's tool result, and plain data
(JSON-ready) with every score so a user can see why a memory ranked where it did."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from datetime import UTC, date, datetime
from typing import Any

from memq.memory.retrieval.model import EpisodeHit, MessageView


def relative(moment: datetime, now: datetime | date) -> str:
    days = ((now.date() if isinstance(now, datetime) else now) - moment.date()).days
    if days < 0:
        return "later than now"
    if days == 0:
        return "today"
    if days == 1:
        return "yesterday"
    if days < 14:
        return f"{days} days ago"
    if days < 60:
        return f"{days // 7} weeks ago"
    if days < 730:
        return f"{days // 30} months ago"
    return f"{days // 365} years ago"


# English month abbreviations whatever the process's locale (strftime's %b follows it)
_MONTHS = ("", "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def _hm(t: datetime) -> str:
    return f"{t.hour:02d}:{t.minute:02d}"


def when(hit: EpisodeHit, now: datetime) -> str:
    """ "7 May 2023 13:05–13:40 UTC (3 weeks ago)"; the end's day too when it is another day.
    In UTC whatever zone the times come in (a database session's TimeZone, a caller's now)."""
    return _when(hit.start_at.astimezone(UTC), hit.end_at.astimezone(UTC), now.astimezone(UTC).date())


@functools.lru_cache(maxsize=10_000)  # episodes come back query after query, on the same day
def _when(start: datetime, end: datetime, today: date) -> str:
    day = f"{start.day} {_MONTHS[start.month]} {start.year}"
    span = _hm(start) if end == start else f"{_hm(start)}–{_hm(end)}"
    if end.date() != start.date():
        span = f"{_hm(start)} – {end.day} {_MONTHS[end.month]} {_hm(end)}"
    return f"{day} {span} UTC ({relative(start, today)})"


def message_line(m: MessageView) -> str:
    return _line(m.who, m.content)


@functools.lru_cache(maxsize=50_000)
def _line(who: str, content: str) -> str:
    """One shown message, whitespace folded. Remembered: the same messages come back query
    after query, and the same string object keeps its hash for the token-count cache."""
    return f"- {who}: {' '.join(content.split())}"


GAP = "…"  # a line where messages of the episode are left out


@functools.lru_cache(maxsize=50_000)
def with_break(line: str) -> str:
    """``line`` and a line break, the same string object for the same line: counting the
    lines of a text (``tokens.count_chunks``, cached by text) then hashes no new string."""
    return line + "\n"


def short_title(title: str, words: int) -> str:
    """A display title of at most ``words`` words (MIRA: telegraphic, 8 or fewer)."""
    parts = title.split()
    return " ".join(parts) if len(parts) <= words else " ".join(parts[:words]) + " …"


def episode_block(
    hit: EpisodeHit,
    shown: Sequence[MessageView],
    *,
    now: datetime,
    summary: str | None,
    key_moment_surprise: float,
    title_words: int = 8,
) -> str:
    """One episode as markdown; see ``episode_lines``."""
    return "\n".join(
        episode_lines(
            hit, shown, now=now, summary=summary, key_moment_surprise=key_moment_surprise, title_words=title_words
        )
    )


def episode_lines(
    hit: EpisodeHit,
    shown: Sequence[MessageView],
    *,
    now: datetime,
    summary: str | None,
    key_moment_surprise: float,
    title_words: int = 8,
) -> list[str]:
    """Without messages: the title, when (absolute and relative), a key-moment mark and the
    summary. With messages: ``sitting_lines`` of the one episode.
    Compact on purpose: every token of framing is one the caller's budget cannot spend
    on what was said (measured on LoCoMo: a 38-token header instead of 20 cost 0.02 of
    recall at every budget)."""
    if not shown:
        meta = when(hit, now)
        if hit.key_moment(key_moment_surprise):
            meta += " · key moment"
        lines = [f"### {hit.title}", meta]
        if summary:
            lines.append(f"Summary: {summary}")
        return lines
    return sitting_lines(
        [hit], shown, now=now, summary=summary, key_moment_surprise=key_moment_surprise, title_words=title_words
    )


def sitting_lines(
    hits: Sequence[EpisodeHit],
    shown: Sequence[MessageView],
    *,
    now: datetime,
    summary: str | None,
    key_moment_surprise: float,
    title_words: int = 8,
) -> list[str]:
    """The messages ``shown`` of one episode, or of several episodes of one sitting
    (``sittings.py``: each begins with the message after the one before it ends), as one
    run of lines: one header line (``sitting_header``), the summary (or part of it) when
    given, then the messages in their order with a ``…`` line wherever messages are left
    out, between the first episode's first message and the last one's last. ``hits``: the
    episodes, best ranked first."""
    lines = [sitting_header(hits, now, key_moment_surprise=key_moment_surprise, title_words=title_words)]
    if summary:
        lines.append(f"Summary: {summary}")
    previous = min(h.first_seq for h in hits) - 1
    for m in sorted(shown, key=lambda m: m.seq):
        if m.seq - previous > 1:
            lines.append(GAP)
        lines.append(message_line(m))
        previous = m.seq
    if previous < max(h.last_seq for h in hits):
        lines.append(GAP)
    return lines


def sitting_header(hits: Sequence[EpisodeHit], now: datetime, *, key_moment_surprise: float, title_words: int) -> str:
    """The one header line above shown messages: when the earliest of ``hits`` began, a
    key-moment mark when any of them is one, and the display title of the best ranked
    (``hits[0]``)."""
    first = min(hits, key=lambda h: h.first_seq)
    return _shown_header(
        first.start_at.astimezone(UTC),
        now.astimezone(UTC).date(),
        any(h.key_moment(key_moment_surprise) for h in hits),
        hits[0].title,
        title_words,
    )


RECENT_DAYS = 2  # an episode shown with messages gives its time of day only when it began this recently


@functools.lru_cache(maxsize=10_000)
def _shown_header(start: datetime, today: date, key_moment: bool, title: str, title_words: int) -> str:
    """The date always; the time of day (UTC) only for an episode of today or yesterday,
    where "this morning" or "last night" can be what is asked. For older ones the day is
    what a question about them turns on, and the five tokens of a time are one line of
    what was said less in every block (LoCoMo, 2026-12-05: +0.003 to +0.005 of recall at
    every budget, docs/evaluation.md)."""
    head = f"### {start.day} {_MONTHS[start.month]} {start.year}"
    if (today - start.date()).days < RECENT_DAYS:
        head += f" {_hm(start)} UTC"
    head += f" ({relative(start, today)})"
    if key_moment:
        head += " · key moment"
    return f"{head} · {short_title(title, title_words)}"


def gap_count(seqs: Sequence[int], first_seq: int, last_seq: int) -> int:
    """How many ``…`` lines ``sitting_lines`` writes for messages ``seqs`` (sorted) of
    episodes spanning ``first_seq..last_seq``: one before, between or after shown messages
    wherever a seq is skipped. An episode whose seqs are not contiguous (a duplicate left
    out when it was stored) can show a marker where nothing was left out."""
    gaps, previous = 0, first_seq - 1
    for seq in seqs:
        gaps += seq - previous > 1
        previous = seq
    return gaps + (previous < last_seq)


def markdown(blocks: Sequence[str], query: str) -> str:
    if not blocks:
        return f"No memories match “{query}”."
    return "\n\n".join(blocks)


def hit_record(hit: EpisodeHit, shown: Sequence[MessageView], summary_shown: bool) -> dict[str, Any]:
    return {
        "id": hit.id,
        "conversation_id": hit.conversation_id,
        "rank": hit.rank,
        "title": hit.title,
        "summary": hit.summary,
        "summary_source": hit.summary_source,
        "start_at": hit.start_at.isoformat(),
        "end_at": hit.end_at.isoformat(),
        "surprise": round(hit.surprise, 4),
        "message_count": hit.message_count,
        "scores": {
            "lexical_rank": hit.ranks.get("episode_lexical"),
            "vector_rank": hit.ranks.get("episode_vector"),
            "message_lexical_rank": hit.ranks.get("message_lexical"),
            "message_vector_rank": hit.ranks.get("message_vector"),
            "rrf": round(hit.rrf, 6),
            "retrievability": round(hit.retrievability, 4),
            "time_boost": hit.time_boost,
            "final": round(hit.final, 6),
        },
        "summary_shown": summary_shown,
        "messages": [
            {
                "seq": m.seq,
                "role": m.role,
                "speaker": m.speaker,
                "content": m.content,
                "timestamp": m.ts.isoformat(),
                "relevance": round(m.relevance, 6),
                "vector_rank": m.ranks.get("vector"),
                "lexical_rank": m.ranks.get("lexical"),
                "speaker_named": m.speaker_match,
                "excerpt": m.excerpt,
            }
            for m in sorted(shown, key=lambda m: m.seq)
        ],
    }
