"""A Redis that comes back from a crash without its last writes (appendfsync everysec)
must not make memq lose or duplicate a message.

The rewind is reproduced exactly: the conversation's keys are dumped at some moment,
processing goes on (episodes reach PostgreSQL), then the keys are restored from the
dump and marked as written by a previous Redis run (as after a real restart, whose run
id differs). ``make soak`` does the same to a whole server by truncating its AOF.
"""

from __future__ import annotations

import pytest
import redis
from drains import publish_drains_with
from invariants import assert_every_message_in_exactly_one_episode
from stored import stored_message_ids

from memq.audit import audit
from memq.shared.db.conversations import gaps
from memq.shared.db.episodes import StaleSegment, check_stored, store_episode
from memq.shared.mailbox.scripts import Scripts
from memq.shared.mailbox.segment import Segment
from memq.worker.conversation_store import ConversationStore
from memq.worker.episodes.job import create_episode
from memq.worker.segmentation.detectors.rules_only import RulesOnlyDetector
from memq.worker.segmentation.job import drain
from memq.worker.sync import sync_with_database


@pytest.fixture
def embedder(settings):
    from memq.shared.embeddings import get_embedder

    return get_embedder(settings)


def _connect(settings, tenant):
    from memq.shared.connections import pg_connect

    return lambda: pg_connect(settings, tenant=tenant, autocommit=True)


def _raw_client(producer):
    """A client of the mailbox's Redis that returns bytes, for DUMP / RESTORE."""
    from redis.cluster import RedisCluster

    from memq.shared.connections import redis_url

    settings = producer.settings
    url = settings.mailbox_redis_url or redis_url(settings)
    if settings.mailbox_redis_cluster:
        return RedisCluster.from_url(url, decode_responses=False)
    return redis.Redis.from_url(url, decode_responses=False)


def _dump(producer, keys) -> dict[str, bytes | None]:
    raw = _raw_client(producer)
    saved = {k: raw.dump(k) for k in keys.all()}
    saved["__indexes__"] = {
        idx: producer.redis.zscore(idx, keys.member) for idx in (keys.shard.active, keys.shard.drains)
    }
    return saved


def _restore_as_after_restart(producer, keys, saved) -> None:
    raw = _raw_client(producer)
    for k in keys.all():
        raw.delete(k)
        if saved[k] is not None:
            raw.restore(k, 0, saved[k], replace=True)
    for idx, score in saved["__indexes__"].items():
        if score is None:
            producer.redis.zrem(idx, keys.member)
        else:
            producer.redis.zadd(idx, {keys.member: score})
    pending = producer.redis.zrange(keys.shard.pending, 0, -1)
    for entry in pending:
        if entry.startswith(keys.member + "/") and not producer.redis.hexists(keys.segments, entry.rsplit("/", 1)[1]):
            producer.redis.zrem(keys.shard.pending, entry)
    if producer.redis.exists(keys.state) and producer.redis.hget(keys.state, "rid"):
        producer.redis.hset(keys.state, "rid", "0" * 40)  # written by the Redis run that crashed


def _sweep_now(producer, celery_app, keys) -> None:
    """The tasks published before the crash are gone with it (the broker lives in the same
    Redis); the stalled-work sweeper finds the conversation by its drain mark. Age the
    mark instead of waiting MEMQ_STALLED_AFTER_SECONDS, then run the sweeper."""
    from memq.shared import tasks

    if producer.redis.zscore(keys.shard.drains, keys.member) is not None:
        producer.redis.zadd(keys.shard.drains, {keys.member: 0})
    celery_app.send_task(tasks.SWEEP_STALLED)


def _messages(prefix: str, n: int) -> list[dict]:
    return [
        {
            "role": "user" if i % 2 else "assistant",
            "content": f"{prefix} message {i} about the rewind",
            "message_id": f"{prefix}{i}",
        }
        for i in range(1, n + 1)
    ]


def _no_publish(producer):
    publish_drains_with(producer, lambda tenant, conv: None)


def test_messages_after_a_rewind_are_neither_lost_nor_collide_with_stored_ones(
    worker, producer, db, settings, tenant, celery_app
):
    """The issue's scenario: episodes reached PostgreSQL, Redis rewound to before they
    were cut, new messages arrive. Before the fix they reused sequence numbers, got the
    same deterministic episode id and vanished under ON CONFLICT DO NOTHING."""
    conv = "rewind-1"
    keys = producer.keys(conv)
    publish = producer._publish_drain
    _no_publish(producer)
    producer.add_messages(_messages("a", 20), conversation_id=conv)
    saved = _dump(producer, keys)  # Redis as it will be after the crash: 20 accepted, none segmented
    publish_drains_with(producer, publish)
    producer._publish_drain(tenant, conv)
    producer.flush(conv)
    producer.wait_idle(conv, timeout=60)
    assert stored_message_ids(db, tenant, conv) == [f"a{i}" for i in range(1, 21)]

    _restore_as_after_restart(producer, keys, saved)  # the crash: Redis lost everything since
    producer.add_messages(_messages("b", 5), conversation_id=conv)
    producer.flush(conv)
    _sweep_now(producer, celery_app, keys)
    producer.wait_idle(conv, timeout=60)

    ids = stored_message_ids(db, tenant, conv)
    assert ids == [f"a{i}" for i in range(1, 21)] + [f"b{i}" for i in range(1, 6)]
    assert [g[2] for g in gaps(db, tenant, conv)] == ["duplicate"] * 20  # the rewound copies, each refused once
    report = audit(producer.redis, db, settings, [(tenant, conv)], expect_flushed=True)
    assert report.ok, report.findings


def test_a_rewind_mid_stream_resumes_after_what_postgresql_holds(worker, producer, db, settings, tenant, celery_app):
    conv = "rewind-2"
    keys = producer.keys(conv)
    publish = producer._publish_drain
    _no_publish(producer)
    producer.add_messages(_messages("a", 30), conversation_id=conv)
    store = ConversationStore(
        producer.redis,
        Scripts.register(producer.redis),
        settings.model_copy(update={"drain_max_messages": 10}),
        tenant,
        conv,
    )
    assert store.acquire()
    snap = sync_with_database(store, store.snapshot(), _connect(settings, store.tenant))
    drain(store, store.settings, RulesOnlyDetector(), None, lambda _: None, snap)
    store.release()
    saved = _dump(producer, keys)  # 10 numbered in the open event, 20 in the inbox, synced
    assert producer.redis.hget(keys.state, "seq") == "10"

    publish_drains_with(producer, publish)
    producer._publish_drain(tenant, conv)
    producer.flush(conv)
    producer.wait_idle(conv, timeout=60)
    assert len(stored_message_ids(db, tenant, conv)) == 30

    _restore_as_after_restart(producer, keys, saved)
    producer.add_messages(_messages("b", 5), conversation_id=conv)
    producer.flush(conv)
    _sweep_now(producer, celery_app, keys)
    producer.wait_idle(conv, timeout=60)
    assert stored_message_ids(db, tenant, conv) == [f"a{i}" for i in range(1, 31)] + [f"b{i}" for i in range(1, 6)]
    report = audit(producer.redis, db, settings, [(tenant, conv)], expect_flushed=True)
    assert report.ok, report.findings


def test_a_segment_cut_before_the_rewind_can_no_longer_be_written(producer, db, settings, tenant, embedder):
    """Work in flight when Redis crashed (an episode creation holding a segment that the
    restarted Redis no longer has) is refused by the fence: its numbers were handed out
    again to other messages."""
    conv = "rewind-3"
    keys = producer.keys(conv)
    _no_publish(producer)
    scripts = Scripts.register(producer.redis)
    producer.add_messages(_messages("c", 3), conversation_id=conv)
    store = ConversationStore(producer.redis, scripts, settings, tenant, conv)
    assert store.acquire()
    snap = sync_with_database(store, store.snapshot(), _connect(settings, store.tenant))
    drain(store, settings, RulesOnlyDetector(), None, lambda _: None, snap)
    store.release()
    saved = _dump(producer, keys)  # c1-c3 numbered 1-3 in the open event

    producer.add_messages(_messages("c", 5)[3:], conversation_id=conv)  # c4, c5: in the window about to be lost
    producer.flush(conv)
    closed: list[str] = []
    assert store.acquire()
    snap = store.snapshot()
    assert snap.synced
    drain(store, settings, RulesOnlyDetector(), None, closed.append, snap)
    store.release()
    assert len(closed) == 1
    in_flight = Segment.decode(producer.redis.hget(keys.segments, closed[0]))  # an episode task has read it...
    assert [m["id"] for m in in_flight.messages] == ["c1", "c2", "c3", "c4", "c5"]

    _restore_as_after_restart(producer, keys, saved)  # ...and Redis crashes, losing c4, c5 and the cut
    producer.add_messages(_messages("d", 2), conversation_id=conv)  # numbered 4, 5: the in-flight segment's numbers
    producer.flush(conv)
    assert store.acquire()
    snap = sync_with_database(store, store.snapshot(), _connect(settings, store.tenant))
    recut: list[str] = []
    drain(store, settings, RulesOnlyDetector(), None, recut.append, snap)
    store.release()

    with pytest.raises(StaleSegment):  # the in-flight copy, written late
        store_episode(
            db,
            tenant=tenant,
            conversation_id=conv,
            fence=in_flight.fence,
            messages=in_flight.messages,
            expected=check_stored(db, tenant, conv, in_flight.messages),
            row=None,
        )
    assert create_episode(store, db, recut[0], settings, embedder).status == "created"
    assert stored_message_ids(db, tenant, conv) == ["c1", "c2", "c3", "d1", "d2"]
    with pytest.raises(StaleSegment):  # and after the new episode too
        store_episode(
            db,
            tenant=tenant,
            conversation_id=conv,
            fence=in_flight.fence,
            messages=in_flight.messages,
            expected=check_stored(db, tenant, conv, in_flight.messages),
            row=None,
        )
    assert_every_message_in_exactly_one_episode(db, producer.redis, settings, tenant, conv, 5)


def test_gaps_are_found_below_what_postgresql_holds(producer, db, tenant):
    """Numbers handed out in a lost Redis state that PostgreSQL neither stores nor knows
    as gaps are recorded when the conversation re-syncs, wherever they are."""
    from memq.shared.db.conversations import raise_fence

    conv = "gap-scan"
    with db.transaction():
        raise_fence(db, tenant, conv, 0)
    db.execute(
        "INSERT INTO episodic_memory (id, tenant_id, conversation_id, messages, message_count, first_seq, "
        "last_seq, title, summary, embedding, stability, difficulty, fsrs_card, boundary_reason, boundary_source, "
        "detector, summary_source, embedding_model, start_at, end_at) "
        "VALUES (gen_random_uuid(), %s, %s, '[]', 4, 1, 12, 't', 's', "
        "array_fill(0.1, ARRAY[384])::vector, 1, 1, '{}', 'flush', 'flush', 'rules', 'extractive', 'm', now(), now()) "
        "RETURNING id",
        (tenant, conv),
    )
    eid = db.execute("SELECT id FROM episodic_memory WHERE tenant_id = %s", (tenant,)).fetchone()[0]
    for seq in (1, 2, 6, 12):
        db.execute(
            "INSERT INTO episode_message (tenant_id, conversation_id, seq, message_id, episode_id, role, content, ts) "
            "VALUES (%s, %s, %s, %s, %s, 'user', 'x', now())",
            (tenant, conv, seq, f"m{seq}", eid),
        )
    db.execute(
        "INSERT INTO seq_gap (tenant_id, conversation_id, first_seq, last_seq, reason) "
        "VALUES (%s, %s, 8, 9, 'duplicate')",
        (tenant, conv),
    )
    db.execute("UPDATE conversation SET last_seq = 12 WHERE tenant_id = %s AND conversation_id = %s", (tenant, conv))
    with db.transaction():
        plan = raise_fence(db, tenant, conv, 0)  # Redis lost everything (or it expired)
    assert plan.retired == [(3, 5), (7, 7), (10, 11)]
    with db.transaction():
        again = raise_fence(db, tenant, conv, 0)
    assert again.retired == [] and again.fence > plan.fence
    with db.transaction():
        assert raise_fence(db, tenant, conv, 6).retired == []  # above Redis' counter only
