"""Checks shared by integration tests: the conservation invariant, and a scan for any
trace of a conversation (after forgetting it)."""

from __future__ import annotations

from stored import message_seqs

from memq.shared.mailbox.keys import conversation_keys


def assert_every_message_in_exactly_one_episode(
    db, client, settings, tenant: str, conversation_id: str, accepted: int
) -> None:
    seqs = message_seqs(db, tenant, conversation_id)
    assert seqs == list(range(1, accepted + 1)), (
        f"episodes hold seqs {seqs[:10]}... ({len(seqs)} in all), expected 1..{accepted} each once, in order"
    )
    keys = conversation_keys(settings, tenant, conversation_id)
    assert client.llen(keys.inbox) == 0
    assert client.llen(keys.buffer) == 0
    assert client.hlen(keys.segments) == 0


def traces(db, redis, tenant: str, conversation_id: str) -> list[str]:
    """Every place PostgreSQL or Redis still mentions the conversation."""
    found = []
    tables = [
        r[0]
        for r in db.execute(
            "SELECT table_name FROM information_schema.columns WHERE column_name = 'conversation_id' "
            "AND table_schema = 'public'"
        )
    ]
    for table in tables:
        n = db.execute(
            f"SELECT count(*) FROM {table} WHERE tenant_id = %s AND conversation_id = %s", (tenant, conversation_id)
        ).fetchone()[0]
        if n:
            found.append(f"{table}: {n} rows")
    needle = f"{tenant}/{conversation_id}"
    for key in redis.scan_iter(match=f"*{needle}*", count=1000):
        found.append(f"redis key {key}")
    for key in redis.scan_iter(match="*:{s*}:*", count=1000):
        if key.endswith((":active", ":drains", ":pending", ":quarantined")):
            members = redis.zrange(key, 0, -1)
            found += [f"redis index {key}: {m}" for m in members if m == needle or m.startswith(needle + "/")]
    return found
