"""memq's read side, bound once: ``Memory(connections, tenant)`` answers what an agent asks
of its memory (retrieve, recent, manifest, session context, facts search; a conversation's
episodes and facts, a fact's history) and carries a tenant's memories out and in (export,
import). The HTTP API, the MCP server, the CLI and the inspector are adapters over it; the
Python client mirrors its methods over HTTP.

Binding is cheap (``for_tenant``): the connections (a pool scoped per call by row-level
security, the mailbox's Redis) and the warm state (the embedding model, the scope word
counts) belong to the process, not to a call.

    with Memory.open(get_settings(), "acme") as memory:
        print(memory.retrieve("which database did we pick?", user_id="lena").text)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from typing import Any

import numpy as np

from memq.memory.chapters.chapter import Chapter
from memq.memory.connections import Connections
from memq.memory.context.service import ManifestResult
from memq.memory.context.session import SessionContext
from memq.memory.directory import ConversationInfo
from memq.memory.portability.importer import ImportReport
from memq.memory.retrieval.service import RecentResult, RetrievalResult
from memq.shared.activity import Actor
from memq.shared.db.facts import Fact
from memq.shared.episode_listing import EpisodeListing
from memq.shared.errors import ValidationError
from memq.shared.ids import check_conversation_id, check_tenant, check_user_id, is_uuid
from memq.shared.settings import Settings

FoundFacts = list[tuple[Fact, float, dict[str, int]]]  # each fact, its fused score, its rank in each leg


class Memory:
    """One tenant's memory over shared ``Connections``."""

    def __init__(self, connections: Connections, tenant: str | None = None, *, owned: bool = False) -> None:
        self.connections = connections
        self.settings: Settings = connections.settings
        self.tenant = check_tenant(tenant or self.settings.tenant)
        self._owned = owned

    @classmethod
    def open(cls, settings: Settings, tenant: str | None = None, *, pool_size: int = 4) -> Memory:
        """A memory with connections of its own (closed by ``close`` or ``with``)."""
        return cls(Connections.open(settings, max_size=pool_size, name="memq-memory"), tenant, owned=True)

    def for_tenant(self, tenant: str) -> Memory:
        """The same connections, bound to another tenant."""
        return Memory(self.connections, tenant)

    def close(self) -> None:
        if self._owned:
            self.connections.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def embed(self, text: str) -> np.ndarray:
        """The query vector, from the process's embedding model."""
        from memq.shared.embeddings import get_embedder

        vector: np.ndarray = get_embedder(self.settings).embed([text])[0]
        return vector

    # --- what the memory knows of -------------------------------------------------------------

    def known(self, conversation_id: str) -> bool:
        """Whether a message was ever accepted for the conversation in this tenant (and it
        was not forgotten since)."""
        from memq.memory.directory import conversation_known

        conversation_id = check_conversation_id(conversation_id, self.settings.conversation_id_max_length)
        with self.connections.scoped(self.tenant) as conn:
            return conversation_known(conn, self.connections.mailbox, self.settings, self.tenant, conversation_id)

    def require(self, conversation_id: str, *, user_id: str | None = None) -> None:
        """``NotFound`` (naming the argument) for a conversation this tenant does not know,
        or, with ``user_id``, a user it does not know: what a view of either would be."""
        from memq.memory.directory import conversation_known, unknown_conversation, unknown_user, user_known

        conversation_id = check_conversation_id(conversation_id, self.settings.conversation_id_max_length)
        with self.connections.scoped(self.tenant) as conn:
            mailbox = self.connections.mailbox
            if user_id is not None:
                user_id = check_user_id(user_id, self.settings.conversation_id_max_length)
                if not user_known(conn, mailbox, self.settings, self.tenant, user_id):
                    raise unknown_user(user_id)
            elif not conversation_known(conn, mailbox, self.settings, self.tenant, conversation_id):
                raise unknown_conversation(conversation_id)

    def conversations(self, *, after: str | None = None, limit: int = 100) -> tuple[list[ConversationInfo], str | None]:
        """The tenant's conversations in id order after the cursor ``after``, at most
        ``limit``, and the next page's cursor (None: the last page)."""
        from memq.memory.directory import conversation_page
        from memq.shared.paging import check_limit

        check_limit(limit)
        if after:
            after = check_conversation_id(after, self.settings.conversation_id_max_length)
        with self.connections.scoped(self.tenant) as conn:
            return conversation_page(conn, self.connections.mailbox, self.settings, self.tenant, after or "", limit)

    # --- what an agent asks ---------------------------------------------------------------

    def retrieve(
        self,
        query: str,
        *,
        conversation_id: str | None = None,
        conversation_ids: list[str] | tuple[str, ...] | None = None,
        user_id: str | None = None,
        limit: int | None = None,
        detail: str = "auto",
        max_tokens: int | None = None,
        time_range: Any = None,
        now: datetime | str | None = None,
        record: bool = True,
        asked_in: str | None = None,
        embed: Callable[[str], np.ndarray] | None = None,
    ) -> RetrievalResult:
        """Hybrid lexical + vector search over episodes and their messages, fused by RRF,
        re-ranked by FSRS retrievability, within ``max_tokens`` (docs/retrieval.md)."""
        from memq.memory.retrieval.service import retrieve_memory

        with self.connections.scoped(self.tenant) as conn:
            return retrieve_memory(
                query,
                tenant=self.tenant,
                conversation_id=conversation_id,
                conversation_ids=conversation_ids,
                user_id=user_id,
                limit=limit,
                detail=detail,
                max_tokens=max_tokens,
                time_range=time_range,
                now=now,
                settings=self.settings,
                conn=conn,
                embed=embed,
                record=record,
                asked_in=asked_in,
                spare=lambda: self.connections.spare(self.tenant),
            )

    def recent(
        self,
        conversation_id: str | None = None,
        *,
        user_id: str | None = None,
        limit: int | None = None,
        days: float = 7.0,
        max_tokens: int | None = None,
        now: datetime | str | None = None,
    ) -> RecentResult:
        """The latest episodes of a conversation, or of a user's conversations."""
        from memq.memory.retrieval.service import recent_memory

        with self.connections.scoped(self.tenant) as conn:
            return recent_memory(
                conversation_id,
                user_id=user_id,
                tenant=self.tenant,
                limit=limit,
                days=days,
                max_tokens=max_tokens,
                now=now,
                settings=self.settings,
                conn=conn,
            )

    def manifest(
        self,
        conversation_id: str,
        *,
        user_id: str | None = None,
        depth: int | None = None,
        timezone: str | None = None,
        now: datetime | None = None,
    ) -> ManifestResult:
        """The conversation's chapters as a tree by day, the open segment marked Active.
        ``NotFound`` for a conversation (or, with ``user_id``, a user) this tenant does not know."""
        from memq.memory.context.service import manifest

        with self.connections.scoped(self.tenant) as conn:
            result = manifest(
                conversation_id,
                user_id=user_id,
                tenant=self.tenant,
                depth=depth,
                tz=timezone,
                now=now,
                settings=self.settings,
                conn=conn,
                client=self.connections.mailbox,
            )
        if user_id is not None or not result.manifest.groups:  # checked once the arguments were
            self.require(conversation_id, user_id=user_id)
        return result

    def chapters(self, conversation_id: str, *, depth: int | None = None) -> list[Chapter]:
        """The chapters of the conversation's newest ``depth`` episodes (default
        ``manifest_depth``), oldest first: the topics a reader would name, each with its events."""
        from memq.memory.context.service import conversation_chapters

        with self.connections.scoped(self.tenant) as conn:
            found = conversation_chapters(conn, self.settings, self.tenant, conversation_id, depth)
        if not found:
            self.require(conversation_id)
        return found

    def context(
        self,
        conversation_id: str,
        *,
        user_id: str | None = None,
        max_tokens: int | None = None,
        summaries: int | None = None,
        continuity: int | None = None,
        timezone: str | None = None,
        now: datetime | None = None,
    ) -> SessionContext:
        """What an agent reads at the top of a new session, within ``max_tokens``.
        ``NotFound`` for a conversation (or, with ``user_id``, a user) this tenant does not know."""
        from memq.memory.context.service import session_context

        with self.connections.scoped(self.tenant) as conn:
            result = session_context(
                conversation_id,
                user_id=user_id,
                tenant=self.tenant,
                max_tokens=max_tokens,
                summaries=summaries,
                continuity=continuity,
                tz=timezone,
                now=now,
                settings=self.settings,
                conn=conn,
                client=self.connections.mailbox,
            )
        if user_id is not None or not (result.total_episodes or result.active):  # once the arguments were checked
            self.require(conversation_id, user_id=user_id)
        return result

    def facts(
        self,
        query: str,
        *,
        conversation_id: str | None = None,
        conversation_ids: list[str] | None = None,
        user_id: str | None = None,
        limit: int | None = None,
    ) -> tuple[str, FoundFacts]:
        """(the validated query, the active facts most relevant to it, best first)."""
        from memq.memory.retrieval.facts import find_facts

        with self.connections.scoped(self.tenant) as conn:
            return find_facts(
                query,
                tenant=self.tenant,
                settings=self.settings,
                conn=conn,
                conversation_id=conversation_id,
                conversation_ids=conversation_ids,
                limit=limit,
                user_id=user_id,
            )

    def episodes(self, conversation_id: str) -> list[EpisodeListing]:
        """The conversation's stored episodes, oldest first (title, time range, summary, how
        each was cut and summarised)."""
        from memq.shared.db.episodes import list_episodes

        conversation_id = check_conversation_id(conversation_id, self.settings.conversation_id_max_length)
        with self.connections.scoped(self.tenant) as conn:
            found = list_episodes(conn, self.tenant, conversation_id)
        if not found:
            self.require(conversation_id)
        return found

    def conversation_facts(self, conversation_id: str, *, include_retired: bool = False) -> list[Fact]:
        """The facts distilled from the conversation: the active ones, or all with the retired."""
        from memq.shared.db.facts import list_facts

        conversation_id = check_conversation_id(conversation_id, self.settings.conversation_id_max_length)
        with self.connections.scoped(self.tenant) as conn:
            found = list_facts(conn, self.tenant, conversation_id, include_retired=include_retired)
        if not found:
            self.require(conversation_id)
        return found

    def fact(self, fact_id: str) -> tuple[Fact, list[dict[str, Any]]] | None:
        """A fact and every change to it, oldest first; None when this tenant has no such fact."""
        from memq.shared.db.facts import fact_history, get_fact

        if not is_uuid(fact_id):
            raise ValidationError("must be a fact id (a UUID)", field="fact_id")
        with self.connections.scoped(self.tenant) as conn:
            found = get_fact(conn, self.tenant, fact_id)
            return None if found is None else (found, fact_history(conn, self.tenant, fact_id))

    # --- carrying memories out and in -------------------------------------------------------

    def export_size(self, *, conversation_id: str | None = None, user_id: str | None = None) -> int:
        """About how many records ``export`` writes (for a progress bar)."""
        from memq.memory.portability.export import count_rows

        with self.connections.scoped(self.tenant) as conn:
            return count_rows(conn, self.tenant, conversation_id, user_id) + 2  # + header and end

    def export(
        self, *, conversation_id: str | None = None, user_id: str | None = None, actor: Actor | None = None
    ) -> Iterator[str]:
        """The tenant's memories (or one conversation's, or one user's) as ``memq-export``
        JSON lines, a chunk of lines at a time; holds one connection while it is read. The
        scope is checked here, before the first line is asked for. With ``actor``, an
        ``export`` entry is written to the activity log once the last line was read (an
        export read only in part writes none)."""
        if conversation_id is not None and user_id is not None:
            raise ValidationError("give conversation_id or user_id, not both")
        if conversation_id is not None:
            check_conversation_id(conversation_id, self.settings.conversation_id_max_length)
        if user_id is not None:
            check_user_id(user_id, self.settings.conversation_id_max_length)
        return self._export(conversation_id, user_id, actor)

    def _export(self, conversation_id: str | None, user_id: str | None, actor: Actor | None) -> Iterator[str]:
        from memq.memory.portability.export import export_lines, export_records
        from memq.shared.activity import exported
        from memq.shared.db.activity import record

        with self.connections.scoped(self.tenant) as conn:
            records = export_records(
                conn, self.tenant, settings=self.settings, conversation_id=conversation_id, user_id=user_id
            )
            lines = 0
            for chunk in export_lines(records):
                lines += chunk.count("\n")
                yield chunk
            if actor is not None:
                entry = exported(actor, conversation_id=conversation_id, user_id=user_id, lines=lines)
                record(conn, self.tenant, entry)

    def import_lines(
        self,
        lines: Iterable[str | bytes],
        *,
        batch: int | None = None,
        progress: Callable[[int], object] | None = None,
        actor: Actor | None = None,
    ) -> ImportReport:
        """Import a ``memq-export`` file's lines into this tenant (idempotent); re-embeds
        when the file's model is not the configured one. With ``actor``, an ``import`` entry
        is written to the activity log once the import ended, complete or stopped at a
        broken record (what came before it was written); none when the file was refused
        before anything was written."""
        from memq.memory.portability.importer import BATCH, import_lines
        from memq.shared.activity import imported
        from memq.shared.db.activity import record
        from memq.shared.embeddings import get_embedder

        with self.connections.scoped(self.tenant) as conn:
            report = import_lines(
                conn,
                lines,
                self.settings,
                lambda: get_embedder(self.settings),
                tenant=self.tenant,
                batch=batch or BATCH,
                progress=progress,
            )
            if actor is not None:
                entry = imported(
                    actor,
                    lines=report.lines,
                    inserted=report.inserted,
                    skipped=sum(report.skipped.values()),
                    stopped_at_line=report.stopped.line if report.stopped else None,
                )
                record(conn, self.tenant, entry)
            return report
