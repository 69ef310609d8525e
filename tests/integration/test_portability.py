"""``memq export`` / ``memq import`` on real services: a tenant built through the real
pipeline (episodes by the in-process worker, reviews by its review stage, facts by
consolidation against the scripted LLM) exported and imported into a fresh tenant (the
"empty deployment": the same database under another tenant id, through --tenant); the
audit passes there, retrieval answers the same, importing twice changes nothing, a cut
file imports what came before the broken line and names it, a newer version is refused,
another embedding model is re-embedded, and the conversation goes on after the import."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from test_consolidation import numbers
from waiting import wait_until

from memq.audit import audit, conversations_in_scope
from memq.cli import main
from memq.memory.portability.export import export_lines, export_records
from memq.memory.portability.format import FormatTooNew
from memq.memory.portability.importer import import_lines
from memq.memory.retrieval.service import retrieve_memory
from memq.shared.db.facts import add_fact
from memq.shared.review_notes import flush_review_notes
from memq.shared.vector_codec import decode_vector, encode_vector
from memq.worker.consolidation.job import consolidate

pytestmark = pytest.mark.integration

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
TRIP = "trip"
SESSIONS = [
    [
        ("user", "We should plan the Lisbon trip with Marta for June."),
        ("assistant", "Lisbon in June is lovely; Alfama has apartments with blue azulejo tiles."),
        ("user", "Book the Alfama apartment with the azulejo tiles, June 3 to 10."),
        ("assistant", "Booked the Alfama apartment for June 3 to 10."),
    ],
    [
        ("user", "My bike's chain skips on the big cog of the rear derailleur."),
        ("assistant", "Turn the low limit screw of the rear derailleur a quarter turn."),
        ("user", "The derailleur works now, the chain no longer skips."),
    ],
    [
        ("user", "I started baking sourdough bread with a rye starter."),
        ("assistant", "Feed the rye starter twice a day and keep it warm."),
        ("user", "The sourdough loaf rose well this morning."),
    ],
]
QUERIES = ["the apartment in Lisbon", "bike derailleur chain", "sourdough starter", "June trip with Marta"]
TABLES = (
    "conversation",
    "episodic_memory",
    "episode_message",
    "conversation_participant",
    "seq_gap",
    "memory_review",
    "pending_review",
    "semantic_fact",
    "semantic_fact_history",
)


ROWS = {  # what the rows of each table carry, ids aside, in an order both tenants share
    "episode": (
        "SELECT conversation_id, first_seq, last_seq, title, summary, stability, difficulty, fsrs_card, surprise, "
        "boundary_reason, boundary_source, summary_source, summary_model, embedding_model, start_at, end_at, "
        "created_at, last_reviewed_at, consolidated_at, embedding::text, messages FROM episodic_memory "
        "WHERE tenant_id = %s ORDER BY conversation_id, first_seq"
    ),
    "message": (
        "SELECT conversation_id, seq, message_id, role, content, ts, sent_at, metadata, speaker, embedding::text "
        "FROM episode_message WHERE tenant_id = %s ORDER BY conversation_id, seq"
    ),
    "fact": (
        "SELECT f.content, f.category, f.valid_at, f.invalid_at, f.created_at, f.expired_at, s.content, "
        "f.reinforcements, cardinality(f.source_episode_ids), "
        "(SELECT array_agg(h.action || h.at::text ORDER BY h.at, h.action) FROM semantic_fact_history h "
        "WHERE h.fact_id = f.id) FROM semantic_fact f LEFT JOIN semantic_fact s ON s.id = f.superseded_by "
        "WHERE f.tenant_id = %s ORDER BY f.created_at, f.content"
    ),
    "review": (
        "SELECT e.title, r.review_day, r.rating, r.source, r.card_before, r.card_after FROM memory_review r "
        "JOIN episodic_memory e ON e.id = r.memory_id WHERE r.tenant_id = %s ORDER BY e.title"
    ),
    "pending": (
        "SELECT e.title, p.query, p.rank, p.retrieved_at, p.consumed_at IS NULL, p.asked_in, p.review_id IS NULL "
        "FROM pending_review p JOIN episodic_memory e ON e.id = p.memory_id WHERE p.tenant_id = %s "
        "ORDER BY p.retrieved_at, p.rank"
    ),
}


def converse(producer, conversation: str, sessions, start: datetime, tenant: str | None = None) -> int:
    """Send the sessions (hours apart: one episode each) through the pipeline; wait for the episodes."""
    messages = [
        {
            "role": role,
            "content": text,
            "timestamp": start + timedelta(hours=3 * k, minutes=i),
            **({"metadata": {"name": "Ana"}} if role == "user" else {}),
        }
        for k, session in enumerate(sessions)
        for i, (role, text) in enumerate(session)
    ]
    results = producer.add_messages(messages, conversation_id=conversation, tenant=tenant)
    assert all(r.status == "accepted" for r in results)
    producer.flush(conversation, tenant=tenant)
    producer.wait_idle(conversation, tenant=tenant, timeout=120)
    return len(messages)


def counts(db, tenant: str) -> dict[str, int]:
    return {t: db.execute(f"SELECT count(*) FROM {t} WHERE tenant_id = %s", (tenant,)).fetchone()[0] for t in TABLES}


def audit_ok(producer, db, settings, tenant: str) -> None:
    scope = conversations_in_scope(producer.redis, db, settings, tenant)
    assert scope
    report = audit(producer.redis, db, settings, scope)
    assert report.ok, report.findings


def answers(db, settings, tenant: str) -> list[list[str]]:
    return [
        [
            h.title
            for h in retrieve_memory(
                q, tenant=tenant, settings=settings, conn=db, now=T0 + timedelta(days=3), record=False, limit=5
            ).hits
        ]
        for q in QUERIES
    ]


def cli(*args: str, code: int = 0):
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == code, (result.output, result.exception)
    return result


def export_file(db, settings, tenant: str, path: Path) -> list[str]:
    path.write_text("".join(export_lines(export_records(db, tenant, settings=settings))), encoding="utf-8")
    return path.read_text(encoding="utf-8").splitlines(keepends=True)


def run_import(db, settings, lines, tenant: str):
    from memq.shared.embeddings import get_embedder

    return import_lines(db, lines, settings, lambda: get_embedder(settings), tenant=tenant)


@pytest.fixture
def source(worker, producer, db, settings, tenant, request):
    """A tenant with episodes, reviews (consumed and open), and facts with history."""
    converse(producer, TRIP, SESSIONS, T0)
    # what retrieval returned, reviewed when the next segment of "chat" ends (the worker's review stage)
    asked = T0 + timedelta(days=1)
    retrieve_memory("the apartment in Lisbon", tenant=tenant, asked_in="chat", settings=settings, conn=db, now=asked)
    assert flush_review_notes()
    chat = [[("user", "So the Alfama apartment has those azulejo tiles, right?")]]
    converse(producer, "chat", chat, asked + timedelta(minutes=5))
    reviews = "SELECT count(*) FROM memory_review WHERE tenant_id = %s"
    wait_until(lambda: db.execute(reviews, (tenant,)).fetchone()[0], 60)
    retrieve_memory("bike", tenant=tenant, asked_in="chat", settings=settings, conn=db, now=T0 + timedelta(days=2))
    assert flush_review_notes()  # an open one, too

    from memq.shared.embeddings import get_embedder

    embedder = get_embedder(settings)
    seeded = add_fact(
        db,
        tenant=tenant,
        conversation_id=TRIP,
        category="identity",
        content="Ana lives in Lisbon.",
        embedding=embedder.embed(["Ana lives in Lisbon."])[0],
        valid_at=datetime(2024, 5, 1, tzinfo=UTC),
        episode_ids=[],
        at=T0 - timedelta(days=60),
        run_id=str(uuid.uuid4()),
        model="seed",
    )
    llm = request.getfixturevalue("scripted_llm")  # only now: the episodes above are extractive
    llm.push(
        lambda req: {
            "actions": [
                {"action": "new", "episode": 2, "fact": "Ana repairs her own bike.", "category": "interest"},
                {
                    "action": "update",
                    "episode": 1,
                    "target": numbers(req)["Ana lives in Lisbon."],
                    "fact": "Ana lives in Porto and visits Lisbon.",
                    "category": "identity",
                    "valid_from": "2026-02-22",
                },
            ]
        }
    )
    assert consolidate(db, settings, embedder, tenant, TRIP).status == "done"
    assert db.execute("SELECT superseded_by FROM semantic_fact WHERE id = %s", (seeded,)).fetchone()[0]
    return tenant


def test_round_trip_into_a_fresh_tenant(source, producer, db, settings, tmp_path):
    before = counts(db, source)
    assert all(before[t] for t in TABLES if t != "seq_gap"), before
    assert db.execute(
        "SELECT count(*) FROM pending_review WHERE tenant_id = %s AND consumed_at IS NULL", (source,)
    ).fetchone()[0]
    path = tmp_path / "export.jsonl"
    cli("export", "--tenant", source, "-o", str(path))
    lines = path.read_text(encoding="utf-8").splitlines()
    head, last = json.loads(lines[0]), json.loads(lines[-1])
    assert head["type"] == "header" and head["version"] == 1 and head["tenant"] == source
    assert head["embedding_model"] == settings.embedding_model and head["embedding_dim"] == settings.embedding_dim
    assert last == {"type": "end", "records": len(lines) - 1}
    kinds = {json.loads(line)["type"] for line in lines}
    assert kinds >= {"conversation", "episode", "message", "review", "pending_review", "fact"}
    piped = cli("export", "--tenant", source).stdout.splitlines()  # to stdout: the file's lines and nothing else
    assert [json.loads(line)["type"] for line in piped] == [json.loads(line)["type"] for line in lines]

    target = f"t{uuid.uuid4().hex[:12]}"
    out = cli("import", str(path), "--tenant", target).output
    assert f"imported into tenant {target} from {source}" in out
    assert counts(db, target) == before
    audit_ok(producer, db, settings, target)
    assert answers(db, settings, target) == answers(db, settings, source)
    assert any(titles for titles in answers(db, settings, target))

    for name, sql in ROWS.items():  # what each row carries, ids aside (mapped into the target tenant)
        assert db.execute(sql, (target,)).fetchall() == db.execute(sql, (source,)).fetchall(), name

    again = cli("import", str(path), "--tenant", target, "--json").output
    report = json.loads(again[again.index("{") :])
    assert report["complete"] and sum(report["inserted"].values()) == 0, report
    assert counts(db, target) == before
    # the same tenant in another deployment keeps every id: here, the same rows already there
    assert sum(run_import(db, settings, path.read_text().splitlines(True), source).inserted.values()) == 0
    assert counts(db, source) == before
    # without --tenant, memq import writes to the tenant the file names: the same rows again
    assert f"imported into tenant {source} from {source}" in cli("import", str(path)).output
    assert counts(db, source) == before


def test_cut_files_newer_versions_other_models_and_the_conversation_goes_on(
    worker, producer, db, settings, tenant, tmp_path
):
    sent = converse(producer, TRIP, SESSIONS, T0)
    lines = export_file(db, settings, tenant, tmp_path / "all.jsonl")
    types = [json.loads(line)["type"] for line in lines]
    assert types.count("episode") == len(SESSIONS) and types.count("message") == sent

    # cut in the middle of the second episode's record: the first episode is imported, the line is named
    cut_at = [i for i, t in enumerate(types) if t == "episode"][1]
    cut = tmp_path / "cut.jsonl"
    cut.write_text("".join(lines[:cut_at]) + lines[cut_at][: len(lines[cut_at]) // 2], encoding="utf-8")
    target = f"t{uuid.uuid4().hex[:12]}"
    failed = cli("import", str(cut), "--tenant", target, code=2)
    assert f"line {cut_at + 1}: not valid JSON" in failed.output and "cut in the middle" in failed.output
    assert "imported into tenant" in failed.output
    assert counts(db, target)["episodic_memory"] == 1
    assert counts(db, target)["episode_message"] == len(SESSIONS[0])
    audit_ok(producer, db, settings, target)
    # the whole file completes it; a file cut at a line boundary is told by its missing end record
    report = run_import(db, settings, lines[:-1], target)
    assert not report.complete and "without its end record" in str(report.stopped)
    assert report.inserted["episode"] == len(SESSIONS) - 1
    assert run_import(db, settings, lines, target).complete
    assert counts(db, target)["episodic_memory"] == len(SESSIONS)

    # a newer format version is refused before anything is written
    newer = tmp_path / "newer.jsonl"
    newer.write_text("".join([json.dumps({**json.loads(lines[0]), "version": 99}) + "\n", *lines[1:]]))
    other = f"t{uuid.uuid4().hex[:12]}"
    refused = cli("import", str(newer), "--tenant", other, code=2)
    assert "version 99" in refused.output and "upgrade memq" in refused.output
    with pytest.raises(FormatTooNew):
        run_import(db, settings, newer.read_text().splitlines(True), other)
    assert sum(counts(db, other).values()) == 0

    # another model (and dimension): every vector is computed again with the configured embedder
    fake = encode_vector(np.ones(8, dtype=np.float32))
    foreign = []
    for line in lines:
        record = json.loads(line)
        if record["type"] == "header":
            record.update(embedding_model="someone/else-8d", embedding_dim=8)
        if record.get("embedding") is not None:
            record["embedding"] = fake
        foreign.append(json.dumps(record) + "\n")
    moved = f"t{uuid.uuid4().hex[:12]}"
    report = run_import(db, settings, foreign, moved)
    assert report.complete and report.reembedded
    vector_sql = "SELECT seq, embedding FROM episode_message WHERE tenant_id = %s AND conversation_id = %s ORDER BY seq"
    for (seq, mine), (_, original) in zip(
        db.execute(vector_sql, (moved, TRIP)).fetchall(), db.execute(vector_sql, (tenant, TRIP)).fetchall(), strict=True
    ):
        # the same text, embedded again in another pass: the same vector to within the model's
        # arithmetic (bfloat16 where the CPU has it rounds differently in another pass' company)
        assert float(np.dot(mine.to_numpy(), original.to_numpy())) > 0.999, seq
    models = db.execute("SELECT DISTINCT embedding_model FROM episodic_memory WHERE tenant_id = %s", (moved,))
    assert [r[0] for r in models] == [settings.embedding_model]
    assert answers(db, settings, moved) == answers(db, settings, tenant)
    assert decode_vector(fake).shape == (8,)

    # the imported conversation goes on: numbering resumes after the imported messages
    later = [[("user", "Back from Lisbon: the azulejo tiles were even bluer than in the photos.")]]
    converse(producer, TRIP, later, T0 + timedelta(days=2), tenant=moved)
    seqs = [r[0] for r in db.execute(vector_sql, (moved, TRIP)).fetchall()]
    assert seqs == list(range(1, sent + 2))
    assert counts(db, moved)["episodic_memory"] == len(SESSIONS) + 1
    scope = [(moved, TRIP)]
    report_after = audit(producer.redis, db, settings, scope, expect_flushed=True)
    assert report_after.ok, report_after.findings


def test_a_users_conversations_export_with_their_user_and_import_keeps_it(
    worker, producer, db, settings, tenant, tmp_path
):
    from memq.shared.users import user_conversations

    converse(producer, TRIP, SESSIONS[:1], T0)
    converse(producer, "other", [[("user", "Someone else talks about the weather in Oslo today.")]], T0)
    db.execute("UPDATE conversation SET user_id = 'ana' WHERE tenant_id = %s AND conversation_id = %s", (tenant, TRIP))
    path = tmp_path / "ana.jsonl"
    cli("export", "--tenant", tenant, "--user", "ana", "-o", str(path))
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert records[0]["user_id"] == "ana"
    assert {r["conversation_id"] for r in records[1:-1]} == {TRIP}
    assert [r["user_id"] for r in records if r["type"] == "conversation"] == ["ana"]
    cli("export", "--tenant", tenant, "--user", "ana", "--conversation", TRIP, code=2)  # one scope at a time

    target = f"t{uuid.uuid4().hex[:12]}"
    cli("import", str(path), "--tenant", target)
    assert user_conversations(db, target, "ana") == [TRIP]

    # a file written before conversations carried their user imports as it did
    older = [{k: v for k, v in r.items() if k != "user_id"} for r in records]
    again = f"t{uuid.uuid4().hex[:12]}"
    report = run_import(db, settings, [json.dumps(r) + "\n" for r in older], again)
    assert report.complete and user_conversations(db, again, "ana") == []
    assert db.execute("SELECT count(*) FROM episodic_memory WHERE tenant_id = %s", (again,)).fetchone()[0] >= 1
