"""Per-tenant quotas, held by the enqueue script on a real Redis: exact at the limit
whatever shards the conversations fall in, a refusal that names the limit and writes
nothing of the refused part, no way round it for a producer that skips the lease, the
day's turn, and forget giving stored messages back."""

from __future__ import annotations

import json

import pytest
from drains import publish_drains_with

from memq.shared.errors import QuotaExceeded
from memq.shared.mailbox import quota
from memq.shared.mailbox.keys import quota_key
from memq.shared.mailbox.replies import LeaseNeeded, decode_enqueue


@pytest.fixture(autouse=True)
def no_drains(producer):
    """Nothing here needs a worker: publish no drain task."""
    publish_drains_with(producer, lambda tenant, conversation_id: None)


def _messages(conversations: int, each: int, tag: str = "m") -> list[dict]:
    return [
        {"conversation_id": f"c{c}", "role": "user", "content": f"message {i} of c{c}", "message_id": f"{tag}{c}-{i}"}
        for i in range(each)
        for c in range(conversations)
    ]


def _set(producer, **limits):
    quota.set_limits(producer.redis, producer.scripts, producer.settings, producer.settings.tenant, limits)


def _accepted_everywhere(producer, conversations: int) -> int:
    return sum(producer.redis.llen(producer.keys(f"c{c}").inbox) for c in range(conversations))


def test_without_limits_every_batch_is_taken_and_the_shard_holds_an_unlimited_lease(producer):
    results = producer.add_messages(_messages(3, 4))
    assert all(r.status == "accepted" for r in results)
    shard = producer.keys("c0").shard
    assert producer.redis.hmget(shard.quota_lease(producer.settings.tenant), "day_left", "stored_left") == ["-1", "-1"]
    assert quota.usage(producer.redis, producer.settings, producer.settings.tenant).messages_per_day is None


def test_a_daily_quota_is_exact_across_shards_and_its_refusal_names_the_limit(producer):
    _set(producer, messages_per_day=25)
    # 12 conversations (spread over many of the 64 shards), 3 messages each: 36 offered, 25 allowed.
    accepted = 0
    refusals: list[QuotaExceeded] = []
    for c in range(12):
        batch = [m for m in _messages(12, 3) if m["conversation_id"] == f"c{c}"]
        try:
            accepted += sum(r.accepted for r in producer.add_messages(batch))
        except QuotaExceeded as exc:
            refusals.append(exc)
            assert {r.status for r in exc.results} == {"rejected"}
            assert producer.redis.llen(producer.keys(f"c{c}").inbox) == 0  # nothing of the refused part written
    # Whole batches are refused: 8 batches of 3 fit (24), the 9th would make 27.
    assert accepted == 24 == _accepted_everywhere(producer, 12)
    assert len(refusals) == 4
    first = refusals[0]
    assert first.limit == "messages_per_day" and first.setting == "MEMQ_QUOTA_MESSAGES_PER_DAY"
    assert "quota of 25 messages a day is used (24)" in str(first) and "the day turns" in str(first)
    # One message still fits, exactly, wherever its conversation lives.
    assert producer.add_messages([{"conversation_id": "c11", "role": "user", "content": "the last one"}])[0].accepted
    with pytest.raises(QuotaExceeded):
        producer.add_messages([{"conversation_id": "c5", "role": "user", "content": "one too many"}])
    used = quota.usage(producer.redis, producer.settings, producer.settings.tenant)
    assert (used.messages_per_day, used.used_today + used.leased_today, used.own) == (25, 25, ("messages_per_day",))


def test_a_duplicate_costs_nothing_and_a_batch_over_the_limit_takes_nothing(producer):
    _set(producer, messages_per_day=5)
    batch = _messages(1, 5)
    assert all(r.accepted for r in producer.add_messages(batch))
    assert all(r.status == "duplicate" for r in producer.add_messages(batch))  # re-sent: no quota needed
    with pytest.raises(QuotaExceeded) as refused:
        producer.add_messages(_messages(1, 2, tag="n"))
    assert [r.status for r in refused.value.results] == ["rejected", "rejected"]
    assert producer.redis.llen(producer.keys("c0").inbox) == 5


def test_the_settings_default_applies_to_tenants_without_their_own(producer):
    producer.settings = producer.settings.model_copy(update={"quota_messages_per_day": 4})
    assert sum(r.accepted for r in producer.add_messages(_messages(2, 2))) == 4
    with pytest.raises(QuotaExceeded, match="MEMQ_QUOTA_MESSAGES_PER_DAY"):
        producer.add_message("c0", "user", "a fifth")
    _set(producer, messages_per_day=0)  # the tenant's own: no limit, whatever the default
    assert producer.add_message("c0", "user", "a fifth").accepted


def test_a_producer_that_skips_the_lease_writes_nothing(producer):
    """The limit is in the enqueue script: a caller without a lease (a hand-rolled or older
    producer) is told to get one and nothing is written, so the quota cannot be bypassed."""
    _set(producer, messages_per_day=1)
    producer.add_message("c0", "user", "uses the one allowed")
    keys = producer.keys("c0")
    lease_key = keys.shard.quota_lease(producer.settings.tenant)
    assert producer.redis.hget(lease_key, "day_left") == "0"
    reply = producer.scripts.enqueue(
        keys=[keys.inbox, keys.state, keys.ids, keys.shard.active, keys.shard.drains, lease_key],
        args=["clamp", 60_000, keys.member, 'x1  {"role": "user", "content": "sneaked in"}', ""],
    )
    assert decode_enqueue(reply) == LeaseNeeded(1)
    assert producer.redis.llen(keys.inbox) == 1


def test_the_day_turns(producer):
    _set(producer, messages_per_day=3)
    producer.add_messages(_messages(1, 3))
    with pytest.raises(QuotaExceeded):
        producer.add_message("c0", "user", "a fourth")
    # Yesterday, as Redis' clock will see it tomorrow: the tenant's day and every lease's.
    tenant = producer.settings.tenant
    key = quota_key(producer.settings.key_prefix, tenant)
    producer.redis.hincrby(key, "day", -1)
    producer.redis.hincrby(producer.keys("c0").shard.quota_lease(tenant), "day", -1)
    assert sum(r.accepted for r in producer.add_messages(_messages(1, 3, tag="n"))) == 3


def test_stored_messages_come_back_when_a_conversation_is_forgotten(producer, db):
    from memq.shared.forget import forget_conversation

    _set(producer, stored_messages=6)
    producer.add_messages(_messages(2, 3))
    with pytest.raises(QuotaExceeded) as refused:
        producer.add_message("c2", "user", "a seventh")
    assert refused.value.limit == "stored_messages"
    assert "forgets conversations" in str(refused.value)
    forget_conversation(producer.redis, db, producer.keys("c0"))
    assert sum(r.accepted for r in producer.add_messages(_messages(1, 3, tag="n"))) == 3
    used = quota.usage(producer.redis, producer.settings, producer.settings.tenant)
    assert used.stored + used.leased_stored == 6


def test_the_command_line_sets_shows_and_recounts_a_tenants_quotas(producer, db):
    from click.testing import CliRunner

    from memq.cli import main

    tenant = ["--tenant", producer.settings.tenant]
    run = CliRunner().invoke
    assert run(main, ["quota", "set", "--messages-per-day", "0", *tenant]).exit_code == 2  # says what to give
    out = run(main, ["quota", "set", "--messages-per-day", "3", "--stored-messages", "none", *tenant])
    assert out.exit_code == 0, out.output
    assert "3 messages a day, no limit stored messages" in out.output
    sent = [run(main, ["send", "c0", "user", f"message {i}", *tenant]) for i in range(4)]
    assert [s.exit_code for s in sent] == [0, 0, 0, 2]  # a memq error: exit 2, saying why
    assert "quota of 3 messages a day is used (3)" in sent[3].output
    shown = run(main, ["quota", "show", "--json", *tenant])
    used = json.loads(shown.output)
    assert (used["messages_per_day"], used["used_today"] + used["leased_today"]) == (3, 3)
    assert used["own"] == ["messages_per_day", "stored_messages"]
    # Stored messages counted again: the three in the inbox (nothing in PostgreSQL yet).
    recount = run(main, ["quota", "recount", *tenant])
    assert recount.exit_code == 0 and "3 stored messages" in recount.output
    back = run(main, ["quota", "set", "--messages-per-day", "default", *tenant])
    assert back.exit_code == 0 and "no limit messages a day" in back.output
    assert run(main, ["send", "c0", "user", "a fourth", *tenant]).exit_code == 0
