"""A message or segment that keeps failing is quarantined (visible in `memq status` and
`memq quarantine list`, put back with `memq quarantine retry`) and the rest of its
conversation carries on: no silent drop, no endless block.

The failures are injected into the in-process worker: a detector that cannot handle a
message containing "POISON", an episode builder that cannot handle one containing
"BAD-EPISODE" (inputs the validator accepts, so only a bug could fail on them).
"""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from stored import stored_message_ids
from waiting import wait_until

from memq.audit import audit
from memq.cli import main
from memq.worker import resources
from memq.worker.segmentation.detectors.rules_only import RulesOnlyDetector


class Allergic(RulesOnlyDetector):
    def check(self, data):
        if "POISON" in data.new.content:
            raise ValueError("detector cannot handle this message")
        return super().check(data)

    def observe(self, message, embedding, state):
        if "POISON" in message.content:
            raise ValueError("detector cannot handle this message")
        return super().observe(message, embedding, state)


@pytest.fixture
def fast_retries(settings, monkeypatch):
    monkeypatch.setattr(settings, "retry_backoff_seconds", 0.1)
    monkeypatch.setattr(settings, "retry_backoff_max_seconds", 0.5)


def _cli(tenant, *args):
    return CliRunner().invoke(main, [*args, "--tenant", tenant])


def test_a_poison_message_is_quarantined_and_the_conversation_carries_on(
    worker, producer, db, settings, tenant, monkeypatch, fast_retries
):
    monkeypatch.setattr(resources, "detector", lambda: Allergic())
    conv = "poisoned"
    texts = ["hello there, a first message", "a second one", "POISON pill here", "a fourth message", "and the fifth"]
    producer.add_messages(
        [{"role": "user", "content": t, "message_id": f"p{i}"} for i, t in enumerate(texts)], conversation_id=conv
    )
    producer.flush(conv)
    producer.wait_idle(conv, timeout=60)

    assert stored_message_ids(db, tenant, conv) == ["p0", "p1", "p3", "p4"]  # the rest carried on
    status = producer.status(conv)
    (entry,) = status.quarantined
    assert (entry.kind, entry.id, entry.failures) == ("message", "p2", settings.quarantine_after_failures)
    assert "detector cannot handle this message" in entry.error
    out = _cli(tenant, "status", conv)
    assert "quarantined=1" in out.output and "quarantined message p2 after 3 failures" in out.output
    listed = _cli(tenant, "quarantine", "list")
    assert listed.exit_code == 0 and "m:p2" in listed.output and "ValueError" in listed.output
    assert audit(producer.redis, db, settings, [(tenant, conv)], expect_flushed=True).ok  # accounted for

    monkeypatch.setattr(resources, "detector", lambda: RulesOnlyDetector())  # the bug is fixed
    retried = _cli(tenant, "quarantine", "retry", conv, "m:p2")
    assert retried.exit_code == 0 and "retrying message p2" in retried.output
    producer.flush(conv)
    producer.wait_idle(conv, timeout=60)
    assert sorted(stored_message_ids(db, tenant, conv)) == ["p0", "p1", "p2", "p3", "p4"]
    assert producer.status(conv).quarantined == []
    assert _cli(tenant, "quarantine", "list").output.strip() == "quarantine is empty"


def test_a_segment_that_cannot_become_an_episode_is_quarantined(
    worker, producer, db, settings, tenant, monkeypatch, fast_retries
):
    import memq.worker.episodes.job as episode_job

    real = episode_job.build_episode  # type: ignore[attr-defined]  # patched where create_episode finds it

    def fragile(segment, *args, **kwargs):
        if any("BAD-EPISODE" in m["content"] for m in segment.messages):
            raise RuntimeError("summariser crashed on this segment")
        return real(segment, *args, **kwargs)

    monkeypatch.setattr(episode_job, "build_episode", fragile)
    conv = "bad-segment"
    producer.add_messages(
        [{"role": "user", "content": f"BAD-EPISODE part {i}"} for i in range(3)], conversation_id=conv
    )
    producer.flush(conv)
    wait_until(lambda: producer.status(conv).quarantined, 60, interval=0.2)
    (entry,) = producer.status(conv).quarantined
    assert entry.kind == "segment" and entry.seqs == [1, 2, 3] and "summariser crashed" in entry.error
    producer.wait_idle(conv, timeout=30)
    assert stored_message_ids(db, tenant, conv) == []
    assert audit(producer.redis, db, settings, [(tenant, conv)], expect_flushed=True).ok

    # Later messages of the conversation are not blocked.
    producer.add_messages(
        [{"role": "user", "content": f"a healthy message {i}"} for i in range(2)], conversation_id=conv
    )
    producer.flush(conv)
    producer.wait_idle(conv, timeout=60)
    assert len(stored_message_ids(db, tenant, conv)) == 2

    monkeypatch.setattr(episode_job, "build_episode", real)
    assert _cli(tenant, "quarantine", "retry", conv).exit_code == 0
    producer.wait_idle(conv, timeout=60)
    wait_until(lambda: len(stored_message_ids(db, tenant, conv)) == 5, 60, interval=0.2)
    assert producer.status(conv).quarantined == []
    assert audit(producer.redis, db, settings, [(tenant, conv)], expect_flushed=True).ok


def test_audit_command_passes_a_healthy_conversation_and_fails_a_damaged_one(worker, producer, db, tenant):
    conv = "audited"
    producer.add_messages(
        [{"role": "user", "content": f"message {i} to audit"} for i in range(6)], conversation_id=conv
    )
    producer.flush(conv)
    producer.wait_idle(conv, timeout=60)
    ok = _cli(tenant, "audit", "--flushed")
    assert ok.exit_code == 0 and "audit passed" in ok.output
    db.execute("DELETE FROM episode_message WHERE tenant_id = %s AND conversation_id = %s AND seq = 3", (tenant, conv))
    bad = _cli(tenant, "audit", conv)
    assert bad.exit_code == 1 and "lost" in bad.output and "audit failed" in bad.output
