"""Renderings of retrieved memories: markdown for an LLM's tool result, and plain data
(JSON-ready) with every score so a user can see why a memory ranked where it did."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from shared.retrieval.model import EpisodeHit, MessageView


def relative(moment: datetime, now: datetime) -> str:
    days = (now.date() - moment.date()).days
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


def when(hit: EpisodeHit, now: datetime) -> str:
    start, end = hit.start_at, hit.end_at
    day = f"{start.day} {start:%b %Y}"
    span = f"{start:%H:%M}" if end == start else f"{start:%H:%M}–{end:%H:%M}"
    if end.date() != start.date():
        span = f"{start:%H:%M} – {end.day} {end:%b} {end:%H:%M}"
    return f"{day} {span} UTC ({relative(start, now)})"


def message_line(m: MessageView) -> str:
    return f"- {m.who}: {' '.join(m.content.split())}"


def gap_line(count: int) -> str:
    return f"  … {count} left out …"


def episode_block(
    hit: EpisodeHit,
    shown: Sequence[MessageView],
    *,
    now: datetime,
    summary: str | None,
    key_moment_surprise: float,
) -> str:
    """One episode: title, when, key-moment mark, summary (or part of it), and the shown
    messages in their order with a marker wherever messages are left out."""
    return "\n".join(episode_lines(hit, shown, now=now, summary=summary, key_moment_surprise=key_moment_surprise))


def episode_lines(
    hit: EpisodeHit,
    shown: Sequence[MessageView],
    *,
    now: datetime,
    summary: str | None,
    key_moment_surprise: float,
) -> list[str]:
    head = f"### {hit.rank}. {hit.title}"
    meta = when(hit, now)
    if hit.key_moment(key_moment_surprise):
        meta += " · key moment"
    lines = [head, meta]
    if summary:
        lines.append(f"Summary: {summary}")
    if shown:
        by_seq = sorted(shown, key=lambda m: m.seq)
        order = {m.seq: i for i, m in enumerate(hit.messages)}
        previous = -1
        for m in by_seq:
            position = order.get(m.seq, previous + 1)
            if position - previous > 1:
                lines.append(gap_line(position - previous - 1))
            lines.append(message_line(m))
            previous = position
        if previous < len(hit.messages) - 1:
            lines.append(gap_line(len(hit.messages) - 1 - previous))
    return lines


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
                "seq": m.seq, "role": m.role, "speaker": m.speaker, "content": m.content, "timestamp": m.ts.isoformat(),
                "relevance": round(m.relevance, 6),
            }
            for m in sorted(shown, key=lambda m: m.seq)
        ],
    }
