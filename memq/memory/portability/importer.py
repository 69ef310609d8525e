"""Writing ``memq-export`` records into a deployment, idempotently.

Records are written in units: a conversation row, a gap, an episode with all of its
messages (through ``store_episode``, the worker's own write: the conversation's row lock,
high-water mark, participants), a review, a pending review, a fact with its history. Each
unit is a savepoint inside a transaction committed every ``batch`` lines and at each
conversation's end, so memory stays bounded and a broken record costs only itself and
what follows: everything before it is committed, nothing of it or after it is written.

Importing twice changes nothing: rows are keyed by what the file carries (episode and fact
ids, message seqs, a review's memory and day), and a unit whose key is already held is
skipped. Ids are kept when the tenant is kept; mapped into another tenant (``tenant``),
every id is replaced by one derived from the target tenant and the original id (uuid5),
since ids are unique across a database: the same file always maps to the same ids.

When the file's embedding model or dimension is not the configured one, every vector is
computed again with the configured embedder (episodes by summary, messages by
``indexed_text``, facts by content)."""

from __future__ import annotations

import sys
import uuid
from collections import Counter
from collections.abc import Callable, Iterable
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
import psycopg
from psycopg.types.json import Jsonb

from memq.memory.portability.format import FormatError, check_header, parse_line
from memq.shared.db.conversations import lock_conversation
from memq.shared.db.episodes import EpisodeRow, check_stored, store_episode
from memq.shared.db.tenant_scope import TENANT_SETTING
from memq.shared.embeddings import Embedder, episode_vector, summary_is_embedded
from memq.shared.errors import MemqError, ValidationError
from memq.shared.ids import check_conversation_id, check_tenant, check_user_id
from memq.shared.messages import indexed_text
from memq.shared.settings import Settings
from memq.shared.vector_codec import decode_vector

BATCH = 1000  # lines per transaction, at most (a unit is never split)


class ImportConflict(FormatError):
    """A record the target cannot take as it is (another message holds its seq, its memory is missing)."""


class ImportStopped(MemqError):
    """The import stopped at a broken record; what came before it was imported."""

    def __init__(self, report: ImportReport):
        assert report.stopped is not None
        super().__init__(
            f"{report.stopped}; the records before it were imported ({report.summary()}): repair or export the file "
            "again and import it again (importing is idempotent: what is already there is skipped)"
        )
        self.report = report


@dataclass
class ImportReport:
    tenant: str = ""
    source_tenant: str = ""
    reembedded: bool = False
    lines: int = 0  # lines read
    inserted: Counter[str] = field(default_factory=Counter)
    skipped: Counter[str] = field(default_factory=Counter)  # already there
    complete: bool = False
    stopped: FormatError | None = None

    def summary(self) -> str:
        kinds = ("conversation", "episode", "message", "fact", "review", "pending_review", "gap")
        parts = [f"{self.inserted[k]} {k}s" for k in kinds if self.inserted[k]]
        skipped = sum(self.skipped.values())
        return (", ".join(parts) or "nothing new") + (f"; {skipped} already there" if skipped else "")

    def to_json(self) -> dict[str, Any]:
        return {
            "tenant": self.tenant,
            "source_tenant": self.source_tenant,
            "complete": self.complete,
            "lines": self.lines,
            "reembedded": self.reembedded,
            "inserted": dict(self.inserted),
            "skipped": dict(self.skipped),
            "stopped_at_line": self.stopped.line if self.stopped else None,
            "stopped_reason": self.stopped.reason if self.stopped else None,
        }


def _ts(value: str | None) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value)


@dataclass
class _Episode:
    line: int
    record: dict[str, Any]
    messages: list[dict[str, Any]] = field(default_factory=list)

    @property
    def whole(self) -> bool:
        return bool(len(self.messages) == self.record["message_count"])


class Importer:
    def __init__(
        self,
        conn: psycopg.Connection,
        settings: Settings,
        embedder: Callable[[], Embedder],
        *,
        tenant: str | None = None,
        batch: int = BATCH,
        progress: Callable[[int], object] | None = None,
    ):
        """``conn``: an autocommit connection; ``embedder``: called once, only if vectors must be computed;
        ``tenant``: the tenant every record goes to (default: the file's); ``progress``: called with each
        line's size in bytes."""
        self.conn, self.settings, self._embedder_factory = conn, settings, embedder
        self._embedder: Embedder | None = None
        self.target = check_tenant(tenant) if tenant is not None else None
        self.batch, self.progress = batch, progress
        self.report = ImportReport()
        self._outer = ExitStack()
        self._in_tx = 0
        self._conversation: str | None = None
        self._new_conversation = False
        self._episode: _Episode | None = None
        self._records = 0
        self._ended = False
        self._waiting: dict[str, set[str]] = {}  # successor id -> facts it supersedes, linked when it arrives

    # -- ids, vectors ---------------------------------------------------------------
    @property
    def tenant(self) -> str:
        return self.report.tenant

    def _id(self, value: str | None) -> str | None:
        if value is None or self.tenant == self.report.source_tenant:
            return value
        return str(uuid.uuid5(uuid.NAMESPACE_URL, f"memq-import:{self.tenant}/{value}"))

    def _ids(self, values: Iterable[str]) -> list[str]:
        return [str(self._id(v)) for v in values]

    def _embed(self, texts: list[str]) -> np.ndarray:
        if self._embedder is None:
            self._embedder = self._embedder_factory()
        return self._embedder.embed(texts)

    @property
    def _model(self) -> str:
        return self._embedder.name if self._embedder is not None else self.settings.embedding_model

    def _vector(self, text: str | None) -> np.ndarray | None:
        """A vector of the file (the unit's line is named by ``_unit``)."""
        if text is None:
            return None
        try:
            vector = decode_vector(text)
        except ValueError:
            raise FormatError(0, "a vector is not valid base64 of float32 values") from None
        if len(vector) != self._dim:
            raise FormatError(0, f"a vector has {len(vector)} dimensions, the header says {self._dim}")
        return vector

    # -- the file -------------------------------------------------------------------
    def run(self, lines: Iterable[str | bytes]) -> ImportReport:
        """Import ``lines`` (each with its newline); a broken record stops the import
        (``report.stopped``). A missing, broken or too new header raises ``FormatError``
        before anything is written."""
        numbered = enumerate(lines, 1)
        first = next(numbered, None)
        if first is None:
            raise FormatError(1, "the file is empty: its first line must be the header record")
        head = parse_line(first[1], 1)
        check_header(head, 1)
        self._start(head)
        self._advance(first[1])
        last = 1
        try:
            try:
                for n, raw in numbered:
                    last = n
                    self._line(parse_line(raw, n), n)
                    self._advance(raw)
                self._end_of_file(last)
            except FormatError as stop:
                self.report.stopped = self._explained(stop)
            self._outer.close()  # what came before the stop is kept
        except BaseException:
            self._outer.__exit__(*sys.exc_info())  # rolled back
            raise
        self.report.complete = self.report.stopped is None
        return self.report

    def _explained(self, stop: FormatError) -> FormatError:
        e = self._episode
        if e is None or e.line >= stop.line:
            return stop
        return type(stop)(stop.line, f"{stop.reason} (so the episode of line {e.line} was not imported either)")

    def _start(self, head: dict[str, Any]) -> None:
        try:
            source = check_tenant(head["tenant"])
        except ValidationError as exc:
            raise FormatError(1, f"the header's tenant: {exc}") from None
        self.report.source_tenant = source
        self.report.tenant = self.target or source
        self._dim = head["embedding_dim"]
        self.report.reembedded = (
            head["embedding_model"] != self.settings.embedding_model or self._dim != self.settings.embedding_dim
        )

    def _advance(self, raw: str | bytes) -> None:
        self.report.lines += 1
        if self.progress is not None:
            self.progress(len(raw))

    def _end_of_file(self, last: int) -> None:
        if self._episode is not None:
            e = self._episode
            raise FormatError(
                last + 1,
                f"the file ends inside the episode of line {e.line} ({len(e.messages)} of its "
                f"{e.record['message_count']} messages): it was cut",
            )
        if not self._ended:
            raise FormatError(last + 1, f"the file ends after line {last} without its end record: it was cut")

    def _line(self, record: dict[str, Any], n: int) -> None:
        kind = record["type"]
        if self._ended:
            raise FormatError(n, "a record after the end record")
        if kind == "header":
            raise FormatError(n, "a second header record")
        self._records += 1
        if kind == "end":
            if record["records"] != self._records:
                raise FormatError(n, f"the end record counts {record['records']} records, {self._records} came first")
            self._ended = True
            return
        if record["tenant"] != self.report.source_tenant:
            raise FormatError(n, f"a record of tenant {record['tenant']!r} in a file of {self.report.source_tenant!r}")
        episode = self._episode
        if episode is not None:
            if kind != "message":
                raise FormatError(
                    n,
                    f"a {kind} record where the episode of line {episode.line} still misses "
                    f"{episode.record['message_count'] - len(episode.messages)} messages",
                )
            if record["episode_id"] != episode.record["id"] or record["conversation_id"] != self._conversation:
                raise FormatError(n, f"a message of another episode than the one of line {episode.line}")
            episode.messages.append(record)
            if episode.whole:
                self._episode = None
                self._unit(n, self._write_episode, episode)
            return
        if kind == "message":
            raise FormatError(n, "a message record outside its episode (messages follow their episode record)")
        if kind == "conversation":
            self._begin_conversation(record, n)
            return
        if record["conversation_id"] != self._conversation:
            raise FormatError(n, f"a {kind} record of conversation {record['conversation_id']!r} outside its group")
        if kind == "episode":
            if record["message_count"] < 1:
                raise FormatError(n, "an episode without messages")
            self._episode = _Episode(n, record)
            return
        write = {"gap": self._write_gap, "review": self._write_review, "pending_review": self._write_pending}
        self._unit(n, write.get(kind, self._write_fact), record)

    def _unit(self, n: int, write: Callable[[Any], None], what: Any) -> None:
        """One unit in a savepoint; a refusal of PostgreSQL stops the import at line ``n``."""
        if not self._in_tx:
            self._outer.enter_context(self.conn.transaction())
            # every write is in these transactions: each is scoped to the target tenant (SET
            # LOCAL), known only once the header is read (without --tenant it is the file's);
            # the caller's connection keeps its own scope after the import
            self.conn.execute("SELECT set_config(%s, %s, true)", (TENANT_SETTING, self.tenant))
        try:
            with self.conn.transaction():
                write(what)
        except FormatError as exc:
            raise type(exc)(n, exc.reason) from None
        except (psycopg.DataError, psycopg.IntegrityError) as exc:
            raise ImportConflict(n, f"PostgreSQL refused it: {str(exc).strip().splitlines()[0]}") from None
        self._in_tx += 1
        if self._in_tx >= self.batch:
            self._commit()

    def _commit(self) -> None:
        self._outer.close()
        self._in_tx = 0

    # -- units ----------------------------------------------------------------------
    def _begin_conversation(self, record: dict[str, Any], n: int) -> None:
        self._commit()  # one conversation's row locks at a time
        try:
            cid = check_conversation_id(record["conversation_id"], self.settings.conversation_id_max_length)
        except ValidationError as exc:
            raise FormatError(n, str(exc)) from None
        self._conversation = cid

        user = record.get("user_id")
        if user is not None:
            try:
                user = check_user_id(user, self.settings.conversation_id_max_length)
            except ValidationError as exc:
                raise FormatError(n, str(exc)) from None

        def write(r: dict[str, Any]) -> None:
            cur = self.conn.execute(
                "INSERT INTO conversation (tenant_id, conversation_id, created_at, user_id) "
                "VALUES (%s, %s, coalesce(%s, now()), %s) ON CONFLICT DO NOTHING",
                (self.tenant, cid, _ts(r["created_at"]), user),
            )
            self._new_conversation = cur.rowcount == 1
            if not self._new_conversation and user is not None:  # a conversation here with no user gets the file's
                self.conn.execute(
                    "UPDATE conversation SET user_id = %s, updated_at = now() "
                    "WHERE tenant_id = %s AND conversation_id = %s AND user_id IS NULL",
                    (user, self.tenant, cid),
                )
            self._count("conversation", self._new_conversation)

        self._unit(n, write, record)

    def _count(self, kind: str, inserted: bool, n: int = 1) -> None:
        (self.report.inserted if inserted else self.report.skipped)[kind] += n

    def _write_gap(self, r: dict[str, Any]) -> None:
        cur = self.conn.execute(
            "INSERT INTO seq_gap (tenant_id, conversation_id, first_seq, last_seq, reason, message_id, recorded_at) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
            (self.tenant, self._conversation, r["first_seq"], r["last_seq"], r["reason"], r["message_id"],
             _ts(r["recorded_at"])),
        )  # fmt: skip
        # numbering resumes after the gaps too (a duplicate's gap can lie above the last stored message)
        self.conn.execute(
            "UPDATE conversation SET last_seq = greatest(last_seq, %s) WHERE tenant_id = %s AND conversation_id = %s",
            (r["last_seq"], self.tenant, self._conversation),
        )
        self._count("gap", cur.rowcount == 1)

    def _write_episode(self, unit: _Episode) -> None:
        e = unit.record
        episode_id = str(self._id(e["id"]))
        held = self.conn.execute("SELECT tenant_id FROM episodic_memory WHERE id = %s", (episode_id,)).fetchone()
        if held is not None:
            self._count("episode", False)
            self._count("message", False, len(unit.messages))
            return
        messages = [
            {
                "id": m["id"],
                "seq": m["seq"],
                "role": m["role"],
                "content": m["content"],
                "timestamp": m["timestamp"],
                **({"sent_at": m["sent_at"]} if m["sent_at"] else {}),
                **({"metadata": m["metadata"]} if m["metadata"] else {}),
            }
            for m in unit.messages
        ]
        embedding: np.ndarray | None
        if self.report.reembedded:
            with_summary = summary_is_embedded(e["summary_source"], len(messages))
            vectors = self._embed([*([e["summary"]] if with_summary else []), *(indexed_text(m) for m in messages)])
            rows = list(vectors[int(with_summary) :])
            summary = vectors[0] if with_summary else None
            embedding = episode_vector(summary, np.stack(rows) if rows else None, self.settings.episode_summary_weight)
        else:
            embedding = self._vector(e["embedding"])
            rows = [self._vector(m["embedding"]) for m in unit.messages]
            missing = [i for i, v in enumerate(rows) if v is None]  # stored before messages had vectors
            for i, v in zip(missing, self._embed([indexed_text(messages[i]) for i in missing]) if missing else []):
                rows[i] = v
        row = EpisodeRow(
            id=episode_id,
            tenant_id=self.tenant,
            conversation_id=str(self._conversation),
            messages=messages,
            first_seq=e["first_seq"],
            last_seq=e["last_seq"],
            title=e["title"],
            summary=e["summary"],
            embedding=np.asarray(embedding),
            stability=e["stability"],
            difficulty=e["difficulty"],
            fsrs_card=e["fsrs_card"],
            surprise=e["surprise"],
            boundary_reason=e["boundary_reason"],
            boundary_source=e["boundary_source"],
            detector=e["detector"],
            summary_source=e["summary_source"],
            summary_model=e["summary_model"],
            summary_error=e["summary_error"],
            embedding_model=self._model if self.report.reembedded else e["embedding_model"],
            start_at=datetime.fromisoformat(e["start_at"]),
            end_at=datetime.fromisoformat(e["end_at"]),
            tools_used=e["tools_used"],
            overlap=e["overlap"],
            token_count=e["token_count"],
            last_reviewed_at=_ts(e["last_reviewed_at"]),
            message_embeddings=np.stack(rows),
        )
        current = lock_conversation(self.conn, self.tenant, row.conversation_id)
        expected = check_stored(self.conn, self.tenant, row.conversation_id, messages)
        if expected.stored or expected.duplicates or expected.collisions:
            taken = [*expected.stored, *(d[0] for d in expected.duplicates), *(c[0] for c in expected.collisions)]
            raise ImportConflict(
                0,
                f"conversation {row.conversation_id} of tenant {self.tenant} already holds messages of this episode "
                f"(seq {min(taken)}) under another episode: import into a tenant or deployment without them",
            )
        store_episode(
            self.conn,
            tenant=self.tenant,
            conversation_id=row.conversation_id,
            fence=current.fence,
            messages=messages,
            expected=expected,
            row=row,
        )
        self.conn.execute(
            "UPDATE episodic_memory SET created_at = %s, consolidated_at = %s WHERE id = %s",
            (_ts(e["created_at"]), _ts(e["consolidated_at"]), episode_id),
        )
        self.conn.execute(  # store_episode moves it only with the highest seq; gaps may have raised that already
            "UPDATE conversation SET last_message_at = greatest(last_message_at, %s) "
            "WHERE tenant_id = %s AND conversation_id = %s",
            (row.end_at, self.tenant, row.conversation_id),
        )
        self._count("episode", True)
        self._count("message", True, len(messages))

    def _write_review(self, r: dict[str, Any]) -> None:
        cur = self.conn.execute(
            "INSERT INTO memory_review (tenant_id, conversation_id, memory_id, review_day, reviewed_at, rating, "
            "source, detail, card_before, card_after, reviews_merged, segment_id, created_at, updated_at) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT (memory_id, review_day) "
            "DO NOTHING",
            (
                self.tenant,
                self._conversation,
                self._id(r["memory_id"]),
                r["review_day"],
                _ts(r["reviewed_at"]),
                r["rating"],
                r["source"],
                Jsonb(r["detail"]),
                Jsonb(r["card_before"]),
                Jsonb(r["card_after"]),
                r["reviews_merged"],
                self._id(r["segment_id"]),
                _ts(r["created_at"]),
                _ts(r["updated_at"]),
            ),
        )
        self._count("review", cur.rowcount == 1)

    def _write_pending(self, r: dict[str, Any]) -> None:
        # no key but the whole row: looked for only when the conversation was there before this import
        args = {
            "t": self.tenant,
            "c": self._conversation,
            "m": self._id(r["memory_id"]),
            "q": r["query"],
            "rank": r["rank"],
            "score": r["score"],
            "at": _ts(r["retrieved_at"]),
            "done": _ts(r["consumed_at"]),
            "asked": r["asked_in"],
            "rm": self._id(r["review_memory_id"]),
            "rd": r["review_day"],
        }
        held = (
            not self._new_conversation
            and self.conn.execute(
                "SELECT 1 FROM pending_review WHERE tenant_id = %(t)s AND memory_id = %(m)s AND query = %(q)s "
                "AND rank = %(rank)s AND retrieved_at = %(at)s",
                args,
            ).fetchone()
        )
        if not held:
            self.conn.execute(
                "INSERT INTO pending_review (tenant_id, conversation_id, memory_id, query, rank, score, retrieved_at, "
                "consumed_at, asked_in, review_id) VALUES (%(t)s, %(c)s, %(m)s, %(q)s, %(rank)s, %(score)s, %(at)s, "
                "%(done)s, %(asked)s, "
                "(SELECT id FROM memory_review WHERE memory_id = %(rm)s AND review_day = %(rd)s))",
                args,
            )
        self._count("pending_review", not held)

    def _write_fact(self, r: dict[str, Any]) -> None:
        fact_id = str(self._id(r["id"]))
        successor = self._id(r["superseded_by"])
        known = (
            successor is not None
            and self.conn.execute("SELECT 1 FROM semantic_fact WHERE id = %s", (successor,)).fetchone()
        )
        embedding = self._embed([r["content"]])[0] if self.report.reembedded else self._vector(r["embedding"])
        cur = self.conn.execute(
            "INSERT INTO semantic_fact (id, tenant_id, conversation_id, category, content, embedding, valid_at, "
            "invalid_at, created_at, expired_at, superseded_by, source_episode_ids, reinforcements, "
            "last_reinforced_at, model) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s::uuid[], %s, %s, %s) "
            "ON CONFLICT (id) DO NOTHING",
            (
                fact_id,
                self.tenant,
                self._conversation,
                r["category"],
                r["content"],
                embedding,
                _ts(r["valid_at"]),
                _ts(r["invalid_at"]),
                _ts(r["created_at"]),
                _ts(r["expired_at"]),
                successor if known else None,
                self._ids(r["source_episode_ids"]),
                r["reinforcements"],
                _ts(r["last_reinforced_at"]),
                r["model"],
            ),
        )
        inserted = cur.rowcount == 1
        if inserted:
            with self.conn.cursor() as c:
                c.executemany(
                    "INSERT INTO semantic_fact_history (fact_id, tenant_id, conversation_id, action, at, run_id, "
                    "episode_ids, detail) VALUES (%s, %s, %s, %s, %s, %s, %s::uuid[], %s)",
                    [
                        (fact_id, self.tenant, self._conversation, h["action"], _ts(h["at"]), h["run_id"],
                         self._ids(h["episode_ids"]), Jsonb(self._detail(h["detail"])))
                        for h in r["history"]
                    ],
                )  # fmt: skip
        if successor is not None and not known:  # its successor comes later in the file (or never)
            self._waiting.setdefault(successor, set()).add(fact_id)
        elif successor is not None:  # a fact imported before its successor was
            self.conn.execute(
                "UPDATE semantic_fact SET superseded_by = %s WHERE id = %s AND superseded_by IS NULL",
                (successor, fact_id),
            )
        if fact_id in self._waiting:
            self.conn.execute(
                "UPDATE semantic_fact SET superseded_by = %s WHERE id = ANY(%s::uuid[]) AND superseded_by IS NULL",
                (fact_id, sorted(self._waiting.pop(fact_id))),
            )
        self._count("fact", inserted)

    def _detail(self, detail: dict[str, Any]) -> dict[str, Any]:
        if isinstance(detail.get("superseded_by"), str):
            return {**detail, "superseded_by": self._id(detail["superseded_by"])}
        return detail


def import_lines(
    conn: psycopg.Connection,
    lines: Iterable[str | bytes],
    settings: Settings,
    embedder: Callable[[], Embedder],
    *,
    tenant: str | None = None,
    batch: int = BATCH,
    progress: Callable[[int], object] | None = None,
) -> ImportReport:
    """Import a ``memq-export`` file's lines; see ``Importer``."""
    return Importer(conn, settings, embedder, tenant=tenant, batch=batch, progress=progress).run(lines)
