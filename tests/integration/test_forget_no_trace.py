"""Forgetting a conversation leaves no trace of what was said in it, anywhere: a unique
string planted in its message content, metadata, speaker name and tool names, in the
queries asked in it against the memories of another conversation of the same tenant (so
the reviews of those memories carry it) and, with the scripted LLM, in its titles,
summaries, facts and the LLM's review reasons, is found nowhere after the forget: not in
any text, varchar, json, jsonb, uuid or array column of any table of the public schema
(nor the conversation's id or its episodes' ids), and not in any Redis key name or value.
The activity log's entries naming the conversation (an export of it before, the forget's
own) keep only the id's salted hash, which matches it. The other conversation keeps its
memories and their FSRS state.

The whole pipeline runs on the real in-process worker, with and without the scripted
LLM, and the log lines it writes at info level and above (workers, producer, retrieval,
forget) are captured: none of them carries the planted string either."""

from __future__ import annotations

import base64
import json
import logging
import re
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import pytest
import redis
from celery import signals
from invariants import traces

pytestmark = pytest.mark.integration

SCANNED_TYPES = ("text", "character varying", "character", "json", "jsonb", "uuid", "ARRAY")


def planted() -> str:
    """A unique word: letters only, so it is one word wherever text is split into words."""
    return "zq" + uuid.uuid4().hex.translate(str.maketrans("0123456789", "ghijklmnop"))


# --- waiting on the worker -----------------------------------------------------------------------


class Tasks:
    """The tenant's Celery tasks still queued or taken but not yet acknowledged, read from
    the broker (whichever worker takes them: tasks are acknowledged after they ran).
    ``settle`` waits until none is and ``check`` holds, looking again whenever a task
    of the in-process worker ends (and at least twice a second)."""

    def __init__(self, broker, tenant: str) -> None:
        self.broker = broker
        self.tenant = tenant
        self.cond = threading.Condition()

    def _finished(self, **_) -> None:
        with self.cond:
            self.cond.notify_all()

    def __enter__(self) -> Tasks:
        signals.task_postrun.connect(self._finished, weak=False)
        return self

    def __exit__(self, *_) -> None:
        signals.task_postrun.disconnect(self._finished)

    def in_flight(self) -> list[str]:
        messages = list(self.broker.hvals("unacked"))  # taken by a worker (ETA tasks too), not acknowledged yet
        for queue in self.broker.scan_iter(match="memq.*", count=1000):  # the queues (mailbox keys are memq:{s..}:...)
            if _text(self.broker.type(queue)) == "list":
                messages += self.broker.lrange(queue, 0, -1)
        found = []
        for raw in messages:
            try:
                message = json.loads(_text(raw))
            except ValueError:
                continue
            headers = (message[0] if isinstance(message, list) else message).get("headers") or {}
            if self.tenant in str(headers.get("argsrepr")):
                found.append(f"{headers.get('task')}{headers.get('argsrepr')}")
        return found

    def settle(self, check=lambda: True, timeout: float = 120.0, what: str = "the pipeline") -> None:
        deadline = time.monotonic() + timeout
        while True:
            if not self.in_flight() and check() and not self.in_flight():
                return
            left = deadline - time.monotonic()
            assert left > 0, f"{what} did not settle within {timeout} s (in flight: {self.in_flight()})"
            with self.cond:
                self.cond.wait(min(left, 0.5))


# --- what the logs say -----------------------------------------------------------------------------


class Lines(logging.Handler):
    """Every record at info and above, as its event dict (structlog) or message, with any traceback."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []
        self._format = logging.Formatter()

    def emit(self, record: logging.LogRecord) -> None:
        msg = record.msg
        text = json.dumps(msg, default=str, ensure_ascii=False) if isinstance(msg, dict) else record.getMessage()
        if record.exc_info:
            text += "\n" + self._format.formatException(record.exc_info)
        self.lines.append(f"{record.levelname} {record.name} {text}")


# --- the scans -------------------------------------------------------------------------------------


def pg_traces(db, needles: list[str]) -> list[str]:
    """Every (table, column, needle) where a value of a text, varchar, json, jsonb, uuid or
    array column of any table of the public schema contains a needle."""
    columns = db.execute(
        "SELECT table_name, column_name FROM information_schema.columns c JOIN information_schema.tables t "
        "USING (table_schema, table_name) WHERE table_schema = 'public' AND t.table_type = 'BASE TABLE' "
        "AND c.data_type = ANY(%s) ORDER BY table_name, ordinal_position",
        (list(SCANNED_TYPES),),
    ).fetchall()
    assert {"episode_message", "memory_review", "pending_review", "semantic_fact"} <= {t for t, _ in columns}
    found = []
    for table, column in columns:
        rows = db.execute(
            f'SELECT n, count(*) FROM "{table}" x, unnest(%s::text[]) n '
            f'WHERE strpos(x."{column}"::text, n) > 0 GROUP BY n',
            (needles,),
        ).fetchall()
        found += [f"{table}.{column}: {count} rows hold {needle!r}" for needle, count in rows]
    return found


def _text(value) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _unpacked(text: str) -> str:
    """``text`` and, when it is a kombu message (or holds one), its base64 body decoded."""
    try:
        data = json.loads(text)
    except ValueError:
        return text
    bodies = []

    def walk(v) -> None:
        if isinstance(v, dict):
            if isinstance(v.get("body"), str) and (v.get("properties") or {}).get("body_encoding") == "base64":
                bodies.append(base64.b64decode(v["body"]).decode("utf-8", "replace"))
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    walk(data)
    return "\n".join([text, *bodies])


def redis_traces(client, needles: list[str]) -> list[str]:
    """Every key whose name, or any of whose values (read by type), contains a needle."""
    found = []
    for raw in client.scan_iter(count=1000):
        key = _text(raw)
        found += [f"redis key name {key!r} holds {n!r}" for n in needles if n in key]
        kind = _text(client.type(raw))
        if kind == "string":
            values = [client.get(raw)]
        elif kind == "hash":
            values = [x for pair in client.hgetall(raw).items() for x in pair]
        elif kind == "list":
            values = client.lrange(raw, 0, -1)
        elif kind == "set":
            values = list(client.smembers(raw))
        elif kind == "zset":
            values = [m for m, _ in client.zrange(raw, 0, -1, withscores=True)]
        elif kind == "stream":
            values = [x for _, fields in client.xrange(raw) for pair in fields.items() for x in pair]
        else:  # gone meanwhile
            values = []
        for value in values:
            if value is not None:
                text = _unpacked(_text(value))
                found += [f"redis {kind} {key!r} holds {n!r}" for n in needles if n in text]
    return found


# --- the pipeline ----------------------------------------------------------------------------------


@dataclass
class Run:
    llm: bool
    token: str
    kept: str
    gone: str
    kept_memory: str  # the other conversation's memory that the forgotten one asked about
    before: list[str]  # the PostgreSQL scan before the forget
    after: list[str]
    redis_after: list[str]
    conversation_traces: list[str]
    reviews_before: list[tuple]
    reviews_after: list[tuple]
    cards_after: dict[str, dict]
    activity_after: list[tuple]  # (action, conversation_id) of the tenant's log, oldest first
    hashed: str  # what the log keeps of the forgotten conversation's id
    logs: list[str] = field(default_factory=list)


def _route(token: str):
    """The scripted LLM: titles, summaries and facts of the forgotten conversation carry the
    token (its first title answer is refused once, so the refusal's text carries it too);
    review reasons quote what the reviewer was shown, as an LLM may."""
    refused: list[int] = []

    def route(request: dict):
        name = request["response_format"]["json_schema"]["name"]
        text = request["messages"][-1]["content"]
        mine = token in text
        if name == "EpisodeTitleAndSummary":
            if mine and not refused:
                refused.append(1)
                return {"title": token, "summary": f"{token} is too short a title."}
            if mine:
                return {
                    "title": f"Kitchen tiles inspired by {token} and Alfama",
                    "summary": f"Ana {token} wants azulejo tiles like the Alfama apartment's in her kitchen.",
                }
            return {
                "title": "Booking the Alfama apartment in Lisbon for June",
                "summary": "Marta booked the Alfama apartment with blue azulejo tiles for June.",
            }
        if name == "MemoryRatings":
            shown = re.findall(r"^\[(\d+)\] (.+?) — ", text, flags=re.M)
            said = re.findall(r"^- (.+)$", text, flags=re.M)
            reason = (
                "shown with: " + " / ".join(title for _, title in shown) + "; after: " + (said[0] if said else "")
            )[:280]
            return {"ratings": [{"memory": int(n), "rating": "good", "reason": reason} for n, _ in shown]}
        if name == "Consolidation":
            fact = (
                f"Ana {token} wants azulejo tiles in her kitchen." if mine else "Marta booked an apartment in Alfama."
            )
            return {"actions": [{"action": "new", "episode": 1, "fact": fact, "category": "preference"}]}
        raise AssertionError(f"unexpected request {name}")

    return route


def _batch(start: datetime, lines: list[tuple[str, str, dict | None]]) -> list[dict]:
    return [
        {
            "role": role,
            "content": content,
            "timestamp": (start + timedelta(minutes=i)).isoformat(),
            **({"metadata": meta} if meta else {}),
        }
        for i, (role, content, meta) in enumerate(lines)
    ]


def _pipeline(settings, service_env, llm, tasks: Tasks, token: str, tenant: str) -> Run:
    from memq.memory import Memory
    from memq.memory.retrieval.service import retrieve_memory
    from memq.producer.client import Producer
    from memq.shared.activity import cli_actor
    from memq.shared.connections import pg_owner_connect
    from memq.shared.db.activity import hash_of
    from memq.shared.forget import forget_conversation
    from memq.shared.review_notes import flush_review_notes

    producer = Producer(settings)
    producer.settings = settings.model_copy(update={"tenant": tenant})
    suffix = uuid.uuid4().hex[:10]
    kept, gone = f"kept-{suffix}", f"gone-{suffix}"
    day0 = (datetime.now(UTC) - timedelta(days=6)).replace(hour=9, minute=0, second=0, microsecond=0)

    def segment(conv: str, start: datetime, lines) -> None:
        producer.add_messages(_batch(start, lines), conversation_id=conv)
        producer.flush(conv)
        producer.wait_idle(conv, timeout=120)

    def ask(query: str, conversations: list[str], asked_in: str, at: datetime) -> set[str]:
        found = retrieve_memory(
            query,
            tenant=tenant,
            conversation_ids=conversations,
            asked_in=asked_in,
            settings=settings,
            conn=db,
            now=at,
            detail="none",
        )
        assert flush_review_notes()
        return {h.id for h in found.hits}

    def episodes(conv: str) -> list[str]:
        return [
            r[0]
            for r in db.execute(
                "SELECT id::text FROM episodic_memory WHERE tenant_id = %s AND conversation_id = %s ORDER BY start_at",
                (tenant, conv),
            )
        ]

    def reviews() -> list[tuple]:
        return db.execute(
            "SELECT conversation_id, memory_id::text, review_day, rating, detail, card_before, card_after, "
            "segment_id::text FROM memory_review WHERE tenant_id = %s ORDER BY memory_id, review_day",
            (tenant,),
        ).fetchall()

    def settled() -> bool:
        open_row = db.execute(
            "SELECT count(*) FROM pending_review WHERE tenant_id = %s AND consumed_at IS NULL", (tenant,)
        ).fetchone()
        waiting_row = db.execute(
            "SELECT count(*) FROM episodic_memory WHERE tenant_id = %s AND consolidated_at IS NULL", (tenant,)
        ).fetchone()
        assert open_row is not None and waiting_row is not None
        open_, waiting = open_row[0], waiting_row[0]
        return open_ == 0 and len(reviews()) == 3 and (waiting == 0 or not llm)

    with pg_owner_connect(settings, autocommit=True) as db:
        # 1. the other conversation's memory
        segment(
            kept,
            day0,
            [
                (
                    "user",
                    "Book the Alfama apartment with the blue azulejo tiles for our Lisbon trip in June.",
                    {"name": "Marta"},
                ),
                ("assistant", "Booked the Alfama apartment from June 3 to 10.", None),
                ("user", "Great, the azulejo tiles will be lovely.", {"name": "Marta"}),
            ],
        )
        tasks.settle(lambda: len(episodes(kept)) == 1, what="the kept conversation's first episode")
        (kept_memory,) = episodes(kept)

        # 2. asked in the conversation to forget, against the other one's memories
        day1 = day0 + timedelta(days=1)
        assert kept_memory in ask(f"{token} Lisbon apartment booking", [kept], gone, day1 - timedelta(hours=1))

        # 3. the conversation to forget: the token in content, metadata, speaker and tool names
        segment(
            gone,
            day1,
            [
                (
                    "user",
                    f"My {token} kitchen was inspired by the azulejo tiles of the Alfama apartment.",
                    {"name": f"Ana {token}", "note": f"ref-{token}"},
                ),
                (
                    "assistant",
                    "Let me look up tile shops.",
                    {"tool_calls": [{"name": f"shops_{token}", "arguments": "{}"}]},
                ),
                ("tool", f"Three shops sell azulejo tiles near {token} street.", {"tool_name": f"shops_{token}"}),
                (
                    "assistant",
                    f"The blue azulejo tiles from Alfama would suit your {token} kitchen, Ana {token}.",
                    None,
                ),
            ],
        )
        tasks.settle(lambda: len(episodes(gone)) == 1, what="the forgotten conversation's episode")
        (gone_memory,) = episodes(gone)
        row = db.execute("SELECT title FROM episodic_memory WHERE id = %s", (gone_memory,)).fetchone()
        assert row is not None
        title = row[0]
        # extractive without an LLM: the "<token> kitchen" of two messages is the title's first key phrase, so a
        # log line naming the title would carry the token
        assert token in title, title

        # 4. the other conversation asks about both (a reviewer LLM is shown the forgotten memory) and goes on
        day2 = day1 + timedelta(days=1)
        assert {gone_memory, kept_memory} <= ask(
            "azulejo tiles Alfama kitchen", [gone, kept], kept, day2 - timedelta(hours=1)
        )
        segment(
            kept,
            day2,
            [
                ("user", "Marta asked again about the azulejo tiles in Alfama.", {"name": "Marta"}),
                ("assistant", "Yes, the Lisbon apartment had blue azulejo tiles.", None),
            ],
        )
        tasks.settle(settled, what="reviews and consolidation")

        reviews_before = reviews()
        asked_in_gone = [r for r in reviews_before if r[4].get("asked_in") == gone]
        assert [(r[0], r[1]) for r in asked_in_gone] == [(kept, kept_memory)]  # the path under test is taken
        assert token in json.dumps(asked_in_gone[0][4]) and asked_in_gone[0][7] == gone_memory
        if llm:
            sources = db.execute(
                "SELECT summary_source, summary_error FROM episodic_memory WHERE tenant_id = %s", (tenant,)
            ).fetchall()
            assert all(source == "llm" for source, _ in sources), sources
            assert db.execute(
                "SELECT count(*) FROM semantic_fact WHERE tenant_id = %s AND conversation_id = %s "
                "AND strpos(content, %s) > 0",
                (tenant, gone, token),
            ).fetchone() == (1,)
            later = [r for r in reviews_before if r[0] == kept and r[4].get("asked_in") == kept]
            assert len(later) == 1 and token in later[0][4]["reason"]  # the reviewer quoted the forgotten memory
        else:
            assert asked_in_gone[0][4]["taken_up"]  # words of the forgotten segment the memory shared

        with Memory.open(settings, tenant, pool_size=1) as memory:  # an activity entry naming it, in clear
            assert token in "".join(memory.export(conversation_id=gone, actor=cli_actor("forget-test")))

        needles = [token, gone, *episodes(gone)]
        before = pg_traces(db, needles)

        done = forget_conversation(
            producer.redis, db, producer.keys(gone), wait_seconds=30, actor=cli_actor("forget-test")
        )
        assert done.existed
        tasks.settle(what="work after the forget")

        clients = [producer.redis, tasks.broker]
        run = Run(
            llm=llm,
            token=token,
            kept=kept,
            gone=gone,
            kept_memory=kept_memory,
            before=before,
            after=pg_traces(db, needles),
            redis_after=[t for c in clients for t in redis_traces(c, [token, gone])],
            conversation_traces=traces(db, producer.redis, tenant, gone),
            reviews_before=reviews_before,
            reviews_after=reviews(),
            cards_after={
                r[0]: r[1]
                for r in db.execute("SELECT id::text, fsrs_card FROM episodic_memory WHERE tenant_id = %s", (tenant,))
            },
            activity_after=db.execute(
                "SELECT action, conversation_id FROM activity WHERE tenant_id = %s ORDER BY id", (tenant,)
            ).fetchall(),
            hashed=hash_of(db, gone),
        )
        forget_conversation(producer.redis, db, producer.keys(kept), wait_seconds=30)  # tidy up
        return run


@pytest.fixture(scope="module", params=["no-llm", "scripted-llm"])
def run(request, settings, service_env, worker) -> Run:
    from memq.shared.settings import get_settings
    from memq_lab.testing.scripted_llm import ScriptedLLM

    assert settings is get_settings(), "the in-process worker reads the process settings"
    llm = request.param == "scripted-llm"
    token, tenant = planted(), f"t{uuid.uuid4().hex[:12]}"
    saved = (
        settings.llm_model,
        settings.llm_api_base,
        settings.llm_api_key,
        settings.detector,
        settings.consolidation_threshold,
        settings.llm_timeout_seconds,
    )
    lines = Lines()
    root = logging.getLogger()
    level = root.level
    server = ScriptedLLM() if llm else None
    try:
        settings.detector = "rules"  # one episode per flushed batch
        if server is not None:
            server.start()
            server.default = _route(token)
            settings.llm_model, settings.llm_api_base, settings.llm_api_key = (
                "openai/scripted",
                server.base_url,
                "test-key",
            )
            settings.consolidation_threshold = 1
            settings.llm_timeout_seconds = 20  # the tests' 2 s is for the timeout tests; a busy machine needs more
        else:
            settings.llm_model = None
        root.addHandler(lines)
        root.setLevel(logging.INFO)
        broker = redis.Redis.from_url(service_env["REDIS_URL"])
        with Tasks(broker, tenant) as tasks:
            result = _pipeline(settings, service_env, llm, tasks, token, tenant)
        result.logs = lines.lines
        return result
    finally:
        root.removeHandler(lines)
        root.setLevel(level)
        (
            settings.llm_model,
            settings.llm_api_base,
            settings.llm_api_key,
            settings.detector,
            settings.consolidation_threshold,
            settings.llm_timeout_seconds,
        ) = saved
        if server is not None:
            server.stop()


def test_the_scan_sees_what_the_conversation_left(run):
    """The scanner itself: before the forget it finds the token where the pipeline put it."""
    tables = {line.split(".")[0] for line in run.before if repr(run.token) in line}
    expected = {"episode_message", "episodic_memory", "conversation_participant", "pending_review", "memory_review"}
    if run.llm:
        expected.add("semantic_fact")
    assert expected <= tables, run.before
    assert [line for line in run.before if line.startswith("activity.")] == [
        "activity.conversation_id: 1 rows hold " + repr(run.gone)  # the export's entry, in clear before the forget
    ]


def test_forget_leaves_no_trace_of_the_conversation(run):
    assert run.after == [], "\n".join(run.after)  # the token, the conversation's id, its episodes' ids: nowhere
    assert run.redis_after == [], "\n".join(run.redis_after)
    assert run.conversation_traces == []


def test_the_activity_log_keeps_only_the_hash_of_the_forgotten_conversation(run):
    """Its entries are still there, to count and to match by whoever knows the id; the
    id itself is in none of them (``test_forget_leaves_no_trace_of_the_conversation``)."""
    assert run.activity_after == [("export", run.hashed), ("conversation.forget", run.hashed)]
    assert run.hashed.startswith("hmac-sha256/")


def test_the_other_conversations_memories_keep_their_reviews_and_fsrs_state(run):
    kept = [r for r in run.reviews_before if r[0] == run.kept]
    after = run.reviews_after
    assert [(r[1], r[2], r[3], r[5], r[6]) for r in after] == [(r[1], r[2], r[3], r[5], r[6]) for r in kept]
    assert all(r[0] == run.kept for r in after)
    by_day = sorted((r for r in after if r[1] == run.kept_memory), key=lambda r: r[2])
    assert [r[5] for r in by_day[1:]] == [r[6] for r in by_day[:-1]]  # each day's review starts from the one before
    assert run.cards_after[run.kept_memory] == by_day[-1][6]  # and the memory's card is the last one's
    scrubbed = by_day[0]  # rated by the forgotten conversation's segment: numbers and the model's name are left
    assert scrubbed[7] is None and scrubbed[4]["scrubbed"] is True
    assert set(scrubbed[4]) <= {"rating", "closeness", "model", "scrubbed"}
    if run.llm:  # rated with the forgotten memory shown: the reviewer's reason is gone, the rest stays
        assert "reason" not in by_day[1][4] and by_day[1][4]["queries"] == ["azulejo tiles Alfama kitchen"]


def test_logs_carry_no_content(run):
    assert any("episode_created" in line for line in run.logs)  # info lines were captured
    leaked = [line for line in run.logs if run.token in line]
    assert leaked == [], "\n".join(leaked)
