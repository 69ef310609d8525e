"""The agent context views, read: ``manifest`` and ``session_context`` for one
conversation of a tenant. PostgreSQL holds the episodes and their messages, Redis what
is not yet in an episode. The manifest's episode part is cached in Redis (``keys.manifest``)
and invalidated when an episode is created (``worker/episodes/job.py``) or the
conversation is forgotten; a cached copy is also checked against the conversation's
episode count and last stored message, so a copy written by a reader that raced either
is never served.

A conversation that does not exist (or belongs to another tenant) has an empty manifest
and a session context with nothing in it: the same answer, so nothing is revealed.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta, tzinfo
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import numpy as np
import psycopg

from memq.memory.chapters.chapter import Chapter, draw_chapters
from memq.memory.chapters.detector import StreamMessage, load_model
from memq.memory.context.manifest import Manifest, build_manifest, render_markdown
from memq.memory.context.manifest import to_json as manifest_json
from memq.memory.context.model import EpisodeListing, OpenSegment, OpenSpan, Said
from memq.memory.context.session import SessionContext, SessionParams, build_session_context
from memq.shared.episode_listing import COLUMNS as LISTING_COLUMNS
from memq.shared.errors import ValidationError
from memq.shared.ids import check_conversation_id, check_tenant, check_user_id
from memq.shared.mailbox.keys import ConversationKeys, conversation_keys
from memq.shared.mailbox.open_segment import read_unstored
from memq.shared.settings import Settings, get_settings
from memq.shared.tokens import count_tokens_cached

if TYPE_CHECKING:
    from memq.shared.connections import MailboxClient


def timezone(name: Any) -> tuple[tzinfo, str]:
    if name is None or name == "":
        return UTC, "UTC"
    if not isinstance(name, str) or len(name) > 64 or "\x00" in name:
        raise ValidationError("must be an IANA time zone name such as 'Europe/Berlin' or 'UTC'", field="timezone")
    try:
        return ZoneInfo(name), name
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise ValidationError(
            f"{name[:40]!r} is not a known IANA time zone (e.g. 'Europe/Berlin', 'UTC')", field="timezone"
        ) from None


def _int(value: Any, field: str, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise ValidationError(f"must be a whole number from {lo} to {hi}", field=field)
    return value


def _now(now: datetime | None) -> datetime:
    if now is None:
        return datetime.now(UTC)
    if now.tzinfo is None:
        raise ValidationError("must be timezone-aware", field="now")
    return now


# --- reading ----------------------------------------------------------------------------

# The manifest cache's shape; an entry of another version (written by an older release) is a miss.
_CACHE_VERSION = 3


def latest_episodes(
    conn: psycopg.Connection, tenant: str, conversation_id: str | list[str], limit: int
) -> tuple[list[EpisodeListing], int]:
    """The newest episodes of the conversation (or of the conversations, together)."""
    match = "= %s" if isinstance(conversation_id, str) else "= ANY(%s)"  # one: the plan as before
    rows = conn.execute(
        f"SELECT {LISTING_COLUMNS}, count(*) OVER () FROM episodic_memory "
        f"WHERE tenant_id = %s AND conversation_id {match} ORDER BY start_at DESC, id LIMIT %s",
        (tenant, conversation_id, limit),
    ).fetchall()
    return [EpisodeListing.from_row(r) for r in rows], (rows[0][-1] if rows else 0)


def episode_messages(conn: psycopg.Connection, tenant: str, episodes: list[EpisodeListing]) -> list[StreamMessage]:
    """The messages of ``episodes``, with their embeddings: each conversation's in order,
    the conversations one after another (what chapters are drawn over)."""
    if not episodes:
        return []
    rows = conn.execute(
        "SELECT conversation_id, role, content, ts, embedding, episode_id::text, speaker FROM episode_message "
        "WHERE tenant_id = %s AND episode_id = ANY(%s::uuid[]) ORDER BY conversation_id, seq",
        (tenant, [e.id for e in episodes]),
    ).fetchall()
    vectors = [None if r[4] is None else np.asarray(r[4].to_numpy(), dtype=np.float32) for r in rows]
    dim = next((len(v) for v in vectors if v is not None), 1)
    return [
        StreamMessage(c, role, content, ts, np.zeros(dim, np.float32) if v is None else v, e, sp)
        for (c, role, content, ts, _, e, sp), v in zip(rows, vectors, strict=True)
    ]


def chapters_of(
    conn: psycopg.Connection, tenant: str, episodes: list[EpisodeListing], settings: Settings
) -> list[Chapter]:
    """The chapters ``episodes`` make (``memq.memory.chapters``)."""
    return draw_chapters(
        episodes,
        episode_messages(conn, tenant, episodes),
        load_model(),
        gap=timedelta(minutes=settings.chapter_gap_minutes),
        min_messages=settings.chapter_min_messages,
        title_words=(settings.extractive_title_min_words, settings.extractive_title_max_words),
    )


def conversation_chapters(
    conn: psycopg.Connection, settings: Settings, tenant: str, conversation_id: str, depth: int | None
) -> list[Chapter]:
    tenant, conversation_id = _scope(settings, tenant, conversation_id)
    depth = settings.manifest_depth if depth is None else _int(depth, "depth", 1, 500)
    episodes, _ = latest_episodes(conn, tenant, conversation_id, depth)
    return chapters_of(conn, tenant, episodes, settings)


def last_messages(conn: psycopg.Connection, tenant: str, conversation_id: str, limit: int) -> list[Said]:
    rows = conn.execute(
        "SELECT role, speaker, content, ts FROM episode_message WHERE tenant_id = %s AND conversation_id = %s "
        "ORDER BY seq DESC LIMIT %s",
        (tenant, conversation_id, limit),
    ).fetchall()
    return [Said(*r) for r in reversed(rows)]


def open_segment(client: MailboxClient, keys: ConversationKeys, limit: int) -> tuple[OpenSegment, int, Said | None]:
    """The newest ``limit`` messages not yet in an episode, how many there are, the first."""
    read = read_unstored(client, keys, limit)
    said = tuple(Said(m.role, m.speaker, m.content, m.timestamp) for m in read.messages)
    first = Said(read.first.role, read.first.speaker, read.first.content, read.first.timestamp) if read.first else None
    return OpenSegment(said), read.total, first


def _fingerprint(conn: psycopg.Connection, tenant: str, conversation_id: str) -> list[int] | None:
    row = conn.execute(
        "SELECT episode_count, last_seq FROM conversation WHERE tenant_id = %s AND conversation_id = %s",
        (tenant, conversation_id),
    ).fetchone()
    return [row[0], row[1]] if row else None


def _within(chapters: list[Chapter], episodes: list[EpisodeListing]) -> list[Chapter]:
    """The chapters of the first ``episodes`` (the newest ones), each with those of its events."""
    shown = {e.id for e in episodes}
    out = []
    for c in chapters:
        kept = tuple(i for i in c.episode_ids if i in shown)
        if kept:
            out.append(c if len(kept) == len(c.episode_ids) else replace(c, episode_ids=kept))
    return out


def _cached_episodes(
    client: MailboxClient, conn: psycopg.Connection, keys: ConversationKeys, depth: int, settings: Settings
) -> tuple[list[EpisodeListing], int, list[Chapter], bool]:
    """(newest episodes, how many in all, their chapters, whether the cache answered)."""
    fingerprint = _fingerprint(conn, keys.tenant, keys.conversation_id)
    if fingerprint is None:
        return [], 0, [], False
    usable = settings.manifest_cache_seconds > 0 and depth <= settings.manifest_depth
    if usable:
        raw = client.get(keys.manifest)
        if raw:
            cached = json.loads(raw)
            if cached.get("v") == _CACHE_VERSION and cached.get("fp") == fingerprint:
                episodes = [EpisodeListing.from_json(e) for e in cached["episodes"]][:depth]
                chapters = [Chapter.from_json(c) for c in cached["chapters"]]
                return episodes, cached["total"], _within(chapters, episodes), True
    episodes, total = latest_episodes(conn, keys.tenant, keys.conversation_id, max(depth, settings.manifest_depth))
    chapters = chapters_of(conn, keys.tenant, episodes, settings)
    if usable:
        payload = {
            "v": _CACHE_VERSION,
            "fp": fingerprint,
            "total": total,
            "episodes": [e.to_json() for e in episodes],
            "chapters": [c.to_json() for c in chapters],
        }
        client.set(
            keys.manifest, json.dumps(payload, ensure_ascii=False), px=int(settings.manifest_cache_seconds * 1000)
        )
    return episodes[:depth], total, _within(chapters, episodes[:depth]), False


def invalidate_manifest(client: MailboxClient, keys: ConversationKeys) -> None:
    client.delete(keys.manifest)


# --- the views ----------------------------------------------------------------------------


@dataclass
class ManifestResult:
    manifest: Manifest
    text: str
    cached: bool

    def to_json(self) -> dict[str, Any]:
        return {**manifest_json(self.manifest), "text": self.text, "cached": self.cached}


def _scope(settings: Settings, tenant: str | None, conversation_id: Any) -> tuple[str, str]:
    return check_tenant(tenant or settings.tenant), check_conversation_id(
        conversation_id, settings.conversation_id_max_length
    )


def user_scope(
    conn: psycopg.Connection,
    client: MailboxClient,
    settings: Settings,
    tenant: str,
    conversation_id: str,
    user_id: str | None,
) -> list[str]:
    """The conversations a view of ``conversation_id`` scoped to ``user_id`` covers: the
    user's and this one. Refused when this conversation belongs to another user."""
    from memq.shared.users import owner, state_owner, user_conversations

    user_id = check_user_id(user_id, settings.conversation_id_max_length)
    current = owner(conn, tenant, conversation_id) or state_owner(client, settings, tenant, conversation_id)
    if current is not None and current != user_id:
        raise ValidationError(
            f"conversation {conversation_id!r} belongs to user {current!r}, not {user_id!r}: ask with "
            f"user_id={current!r} or without a user",
            field="user_id",
        )
    return list(dict.fromkeys([conversation_id, *user_conversations(conn, tenant, user_id)]))


def manifest(
    conversation_id: str,
    *,
    user_id: str | None = None,
    tenant: str | None = None,
    depth: int | None = None,
    tz: str | None = None,
    now: datetime | None = None,
    settings: Settings | None = None,
    conn: psycopg.Connection | None = None,
    client: MailboxClient | None = None,
) -> ManifestResult:
    """The conversation's episodes as a tree by relative date (newest first), the open
    segment marked Active, in markdown (MIRA's tree) and JSON. With ``user_id``: the
    episodes of every conversation of the user (not cached)."""
    settings = settings or get_settings()
    tenant, conversation_id = _scope(settings, tenant, conversation_id)
    depth = settings.manifest_depth if depth is None else _int(depth, "depth", 1, 500)
    zone, zone_name = timezone(tz)
    now = _now(now)
    keys = conversation_keys(settings, tenant, conversation_id)
    with _resources(settings, tenant, conn, client) as (c, r):
        if user_id is None:
            episodes, total, chapters, cached = _cached_episodes(r, c, keys, depth, settings)
        else:
            scope = user_scope(c, r, settings, tenant, conversation_id, user_id)
            (episodes, total), cached = latest_episodes(c, tenant, scope, depth), False
            chapters = chapters_of(c, tenant, episodes, settings)
        segment, open_count, first = open_segment(r, keys, 1)
    span = OpenSpan(first, segment.messages[-1], open_count) if first is not None else None
    built = build_manifest(
        conversation_id,
        episodes,
        span,
        now=now,
        tz=zone,
        tz_name=zone_name,
        depth=depth,
        title_chars=settings.manifest_title_chars,
        total_episodes=total,
        chapters=chapters,
    )
    return ManifestResult(built, render_markdown(built, zone), cached)


def session_context(
    conversation_id: str,
    *,
    user_id: str | None = None,
    tenant: str | None = None,
    max_tokens: int | None = None,
    summaries: int | None = None,
    continuity: int | None = None,
    tz: str | None = None,
    now: datetime | None = None,
    settings: Settings | None = None,
    conn: psycopg.Connection | None = None,
    client: MailboxClient | None = None,
    embed: Callable[[str], np.ndarray] | None = None,
) -> SessionContext:
    """What an agent puts at the top of a new session (MIRA), within ``max_tokens``.
    ``embed``: text -> vector for finding the relevant facts (default: the embedding model,
    loaded only when the conversation has facts to rank). With ``user_id``: the summaries and
    facts of every conversation of the user. Without it, a conversation that belongs to a
    user and has no episode yet (a new session) starts with what is known of its user."""
    settings = settings or get_settings()
    tenant, conversation_id = _scope(settings, tenant, conversation_id)
    params = SessionParams(
        max_tokens=settings.session_max_tokens
        if max_tokens is None
        else _int(max_tokens, "max_tokens", 100, settings.retrieval_max_tokens_max),
        summary_count=settings.session_summary_count if summaries is None else _int(summaries, "summaries", 0, 50),
        chapter_count=settings.session_chapter_count,
        continuity_messages=(
            settings.session_continuity_messages if continuity is None else _int(continuity, "continuity", 0, 100)
        ),
    )
    zone, zone_name = timezone(tz)
    now = _now(now)
    keys = conversation_keys(settings, tenant, conversation_id)
    with _resources(settings, tenant, conn, client) as (c, r):
        recent, total = latest_episodes(c, tenant, conversation_id, max(1, params.summary_count))
        scope: list[str] = [conversation_id]
        if user_id is None and total == 0:  # a new session of a user's conversation: what is known of the user
            from memq.shared.users import owner, state_owner

            user_id = owner(c, tenant, conversation_id) or state_owner(r, settings, tenant, conversation_id)
        if user_id is not None:
            scope = user_scope(c, r, settings, tenant, conversation_id, user_id)
            recent, total = latest_episodes(c, tenant, scope, max(1, params.summary_count))
        before = (
            last_messages(c, tenant, conversation_id, params.continuity_messages) if params.continuity_messages else []
        )
        segment, open_count, _ = open_segment(r, keys, settings.session_open_messages_max)
        facts = relevant_facts(c, settings, tenant, scope, segment, recent, embed)
        if params.chapter_count == 0 or not total:
            chapters: list[Chapter] = []
        elif scope == [conversation_id]:
            chapters = _cached_episodes(r, c, keys, settings.manifest_depth, settings)[2]
        else:
            chapters = chapters_of(c, tenant, latest_episodes(c, tenant, scope, settings.manifest_depth)[0], settings)
    return build_session_context(
        conversation_id,
        recent,
        total,
        before,
        segment,
        now=now,
        tz=zone,
        tz_name=zone_name,
        params=params,
        count=count_tokens_cached,
        open_count=open_count,
        facts=facts,
        chapters=chapters,
    )


def relevant_facts(
    conn: psycopg.Connection,
    settings: Settings,
    tenant: str,
    conversation_id: str | list[str],
    segment: OpenSegment,
    recent: list[EpisodeListing],
    embed: Callable[[str], np.ndarray] | None = None,
) -> list[str]:
    """The conversation's active facts most relevant to where it is now (the open
    segment's newest messages, else the latest episode), as lines; the most reinforced
    ones when nothing is said yet."""
    from memq.memory.retrieval.facts_section import fact_line
    from memq.shared.db.facts import list_facts, search_facts

    if settings.session_facts <= 0:
        return []
    conversations = [conversation_id] if isinstance(conversation_id, str) else conversation_id
    row = conn.execute(
        "SELECT EXISTS (SELECT 1 FROM semantic_fact "
        "WHERE tenant_id = %s AND conversation_id = ANY(%s) AND expired_at IS NULL)",
        (tenant, conversations),
    ).fetchone()
    assert row is not None  # EXISTS always gives a row
    if not row[0]:
        return []
    if segment.messages:
        about = " ".join(m.content for m in segment.messages[-3:])
    elif recent:
        latest = max(recent, key=lambda e: e.start_at)
        about = f"{latest.title} {latest.summary}"
    else:
        about = ""
    if not about.strip():
        facts = [f for c in conversations for f in list_facts(conn, tenant, c, limit=500)]
        facts.sort(key=lambda f: (-f.reinforcements, f.created_at))
        return [fact_line(f) for f in facts[: settings.session_facts]]
    if embed is None:
        from memq.shared.embeddings import get_embedder

        def embed_with_model(text: str) -> np.ndarray:
            vector: np.ndarray = get_embedder(settings).embed([text])[0]
            return vector

        embed = embed_with_model
    found = search_facts(
        conn,
        tenant,
        conversations,
        [(about[:2000], embed(about[:2000]))],
        settings.session_facts,
        k=settings.rrf_k,
        min_similarity=settings.fact_min_similarity,
    )
    return [fact_line(f) for f, _, _ in found]


class _resources:
    """The caller's connection and Redis client, or our own for the call."""

    def __init__(
        self, settings: Settings, tenant: str, conn: psycopg.Connection | None, client: MailboxClient | None
    ) -> None:
        self.settings, self.tenant, self.conn, self.client = settings, tenant, conn, client
        self._own: psycopg.Connection | None = None

    def __enter__(self) -> tuple[psycopg.Connection, MailboxClient]:
        from memq.shared.connections import mailbox_client, pg_connect

        conn = self.conn
        if conn is None:
            conn = self._own = pg_connect(self.settings, tenant=self.tenant, autocommit=True)
        return conn, (self.client or mailbox_client(self.settings))

    def __exit__(self, *exc: object) -> None:
        if self._own is not None:
            self._own.close()
