"""The activity log from the command line, on real PostgreSQL and Redis: each command that
creates or revokes a key, registers or removes a webhook, exports, imports or forgets writes
one entry whose actor is ``cli`` and the OS user running it; ``memq activity`` lists them;
a forgotten conversation or user is named by its hash alone. An export read only in part
writes no entry."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Generator
from datetime import UTC, datetime, timedelta
from typing import cast

import pytest
from click.testing import CliRunner
from test_retrieval import axis, write_episode
from waiting import wait_until

from memq.cli import main

pytestmark = pytest.mark.integration

T0 = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)


def os_user() -> str:
    """The OS user as the system names it (not through memq's code)."""
    return subprocess.run(["id", "-un"], capture_output=True, text=True, check=True).stdout.strip()


def store(db, settings, tenant: str, conversation: str, i: int) -> None:
    """One stored episode of two messages (tests/integration/api/test_activity_api.py uses it too)."""
    write_episode(
        db,
        settings,
        tenant,
        conversation,
        title=f"Booking {i}",
        summary="A booking.",
        vector=axis(i),
        start=T0 + timedelta(days=i),
        messages=[("user", "Book the Alfama apartment.", axis(i), "Ana"), ("assistant", "Booked.", axis(i))],
    )


def memq(*args: str) -> str:
    out = CliRunner().invoke(main, list(args))
    assert out.exit_code == 0, out.output
    return out.output


def test_each_command_logs_its_action_as_cli_and_the_os_user(service_env, settings, db, tenant, tmp_path):
    from memq.shared.db.activity import hash_of

    store(db, settings, tenant, "trip-zz", 0)
    store(db, settings, tenant, "bike-zz", 1)
    db.execute(
        "UPDATE conversation SET user_id = 'lena-zz' WHERE tenant_id = %s AND conversation_id = 'bike-zz'", (tenant,)
    )
    t = ["--tenant", tenant]

    created = memq("keys", "create", *t, "--name", "ci")
    key = re.search(r"key (\w+) for tenant", created)
    assert key is not None
    memq("keys", "revoke", key.group(1))  # without --tenant: as the owner, logged in the key's tenant
    hook = json.loads(memq("webhooks", "add", "http://127.0.0.1:9/hook", *t).split("\nKeep")[0])
    memq("webhooks", "remove", hook["id"], *t)
    exported = tmp_path / "trip.jsonl"
    memq("export", *t, "--conversation", "trip-zz", "-o", str(exported))
    memq("import", str(exported), *t)  # into the same tenant: everything is already there
    memq("forget", "trip-zz", *t, "--yes")
    memq("forget", "--user", "lena-zz", *t, "--yes")

    logged = json.loads(memq("activity", *t, "--json"))
    assert [e["action"] for e in logged] == [
        "user.forget",
        "conversation.forget",  # the user's one conversation
        "conversation.forget",
        "import",
        "export",
        "webhook.delete",
        "webhook.create",
        "key.revoke",
        "key.create",
    ]
    assert {(e["actor"], e["actor_detail"]) for e in logged} == {("cli", os_user())}
    forget_user, forget_bike, forget, imported, export, deleted, added, revoked, made = logged
    assert made["key_id"] == revoked["key_id"] == key.group(1)
    assert added["webhook_id"] == deleted["webhook_id"] == hook["id"]
    assert export["conversation_id"] == forget["conversation_id"] == hash_of(db, "trip-zz")
    assert forget_user["user_id"] == hash_of(db, "lena-zz")
    assert forget_bike["conversation_id"] == hash_of(db, "bike-zz")
    assert imported["counts"]["skipped"] > 0 and "stopped_at_line" not in imported["counts"]
    stored = str(db.execute("SELECT * FROM activity WHERE tenant_id = %s", (tenant,)).fetchall())
    assert "trip-zz" not in stored and "lena-zz" not in stored and "bike-zz" not in stored

    newest = memq("activity", *t, "--limit", "1").splitlines()
    assert len(newest) == 1 and f"user.forget  cli ({os_user()})  user {hash_of(db, 'lena-zz')}" in newest[0]
    only = json.loads(memq("activity", *t, "--json", "--action", "webhook.create"))
    assert [e["webhook_id"] for e in only] == [hook["id"]]
    later = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    assert json.loads(memq("activity", *t, "--json", "--since", later)) == []
    refused = CliRunner().invoke(main, ["activity", *t, "--since", "2026-03-02T09:00:00"])
    assert refused.exit_code == 2 and "give a time with its offset or Z" in refused.output


def test_an_export_read_in_part_writes_no_entry(service_env, settings, db, tenant):
    from memq.memory import Memory
    from memq.shared.activity import cli_actor

    for i in range(3):
        store(db, settings, tenant, f"c{i}", i)
    with Memory.open(settings, tenant, pool_size=2) as memory:
        lines = cast(Generator[str, None, None], memory.export(actor=cli_actor("ana")))  # a generator: it closes
        first = json.loads(next(lines).splitlines()[0])
        assert first["type"] == "header"
        lines.close()  # a client gone before the end was read
        assert db.execute("SELECT count(*) FROM activity WHERE tenant_id = %s", (tenant,)).fetchone() == (0,)
        whole = "".join(memory.export(actor=cli_actor("ana")))
    row = db.execute("SELECT action, actor_detail, counts FROM activity WHERE tenant_id = %s", (tenant,)).fetchone()
    assert row == ("export", "ana", {"lines": len(whole.splitlines())})


def test_the_worker_prunes_entries_past_their_retention_but_keeps_forgets(worker, celery_app, settings, db, tenant):
    """``memq.prune_activity`` run by a real worker: entries older than the days it is given
    go, every tenant's; newer ones and forget's own entries (a hash only) stay; with no
    retention set (the default) it keeps everything."""
    from memq.shared import activity, tasks
    from memq.shared.db.activity import hash_of, record
    from memq.worker.tasks.maintenance import prune_activity

    actor = activity.cli_actor("tester")
    other = tenant + "-other"
    record(db, tenant, activity.key_created(actor, "old0000001"))
    record(db, other, activity.key_created(actor, "old0000002"))
    record(db, tenant, activity.conversation_forgotten(actor, hash_of(db, "gone"), episodes=1, messages=2))
    db.execute("UPDATE activity SET at = now() - interval '40 days' WHERE tenant_id = ANY(%s)", ([tenant, other],))
    record(db, tenant, activity.key_created(actor, "new0000001"))

    def kept() -> list[tuple[str, str | None, str | None]]:
        rows = db.execute(
            "SELECT action, key_id, conversation_id FROM activity WHERE tenant_id = ANY(%s) ORDER BY id",
            ([tenant, other],),
        ).fetchall()
        return [tuple(r) for r in rows]

    before = kept()
    assert prune_activity() == {"status": "kept", "deleted": 0}  # the task's function, in this process
    assert kept() == before  # MEMQ_ACTIVITY_RETENTION_DAYS is 0: nothing goes
    celery_app.send_task(tasks.PRUNE_ACTIVITY, kwargs={"days": 30})  # as the beat sends it, to the worker
    expected = [("conversation.forget", None, hash_of(db, "gone")), ("key.create", "new0000001", None)]
    wait_until(lambda: kept() == expected, 60, interval=0.05, message=lambda: str(kept()))
