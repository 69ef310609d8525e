"""The audit's rules on hand-made facts: each violation is found, and a healthy
conversation (including one repaired after a Redis rewind) passes."""

from datetime import UTC, datetime, timedelta

from memq.audit import Facts, check
from memq.shared.mailbox.status import QuarantineEntry

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def healthy(n: int = 6) -> Facts:
    f = Facts("t", "c", state_exists=True, accepted=n, numbered=n, pg_last_seq=n, active=False)
    f.stored = [(s, f"m{s}", "e1" if s <= 3 else "e2", T0 + timedelta(minutes=s)) for s in range(1, n + 1)]
    f.episodes = [("e1", 1, 3, 3), ("e2", 4, n, n - 3)]
    return f


def names(findings):
    return sorted({x.check for x in findings})


def test_a_healthy_conversation_passes_even_when_flushed_is_required():
    assert check(healthy(), stalled_after=60, expect_flushed=True) == []


def test_a_conversation_repaired_after_a_rewind_passes():
    f = healthy(6)
    # 7-9 were numbered in a Redis state that was lost (recorded as rewind gaps), their
    # messages renumbered 10-12 and stored; 13 is a second acceptance of m2 (duplicate gap).
    f.gaps = [(7, 9, "rewind"), (13, 13, "duplicate")]
    f.stored += [(s, f"m{s}", "e3", T0 + timedelta(minutes=s)) for s in (10, 11, 12)]
    f.episodes.append(("e3", 10, 12, 3))
    f.numbered, f.accepted, f.pg_last_seq = 13, 7, 12
    assert check(f, stalled_after=60) == []


def test_a_number_nobody_holds_is_lost():
    f = healthy()
    f.stored = [s for s in f.stored if s[0] != 4]
    f.episodes = [("e1", 1, 3, 3), ("e2", 4, 6, 2)]
    found = check(f, stalled_after=60)
    assert names(found) == ["lost"] and "4" in found[0].detail


def test_open_waiting_and_quarantined_numbers_are_accounted_for():
    f = healthy(3)
    f.episodes = [("e1", 1, 3, 3)]
    f.numbered = f.accepted = 9
    f.buffer_seqs = [8, 9]
    f.segments = {"s1": [4, 5]}
    f.pending_ages = {"s1": 5.0}
    seg = '1 {"messages": [{"seq": 6}, {"seq": 7}]}'
    f.quarantine = [QuarantineEntry("s:q", "segment", "q", "boom", 3, 0, seg)]
    f.in_quarantine_index = True
    f.drain_flag, f.drain_age = True, 1.0
    assert check(f, stalled_after=60) == []
    assert names(check(f, stalled_after=60, expect_flushed=True)) == ["flushed"]


def test_duplicates_and_disorder_are_found():
    f = healthy()
    f.stored[4] = (5, "m1", "e2", T0 + timedelta(minutes=5))
    assert "duplicate" in names(check(f, stalled_after=60))
    g = healthy()
    g.stored[2] = (3, "m3", "e1", T0 - timedelta(days=1))
    assert names(check(g, stalled_after=60)) == ["order"]
    h = healthy()
    h.episodes = [("e1", 1, 4, 3), ("e2", 4, 6, 3)]
    assert "order" in names(check(h, stalled_after=60))


def test_accepted_messages_must_be_numbered_queued_or_quarantined():
    f = healthy()
    f.accepted = 8
    assert names(check(f, stalled_after=60)) == ["accepted"]
    f.inbox, f.drain_flag, f.drain_age = 1, True, 2.0
    f.quarantine = [QuarantineEntry("m:x", "message", "x", "boom", 3, 0, "raw")]
    f.in_quarantine_index = True
    assert check(f, stalled_after=60) == []


def test_stuck_work_is_found():
    f = healthy()
    f.inbox = 2  # work, but no queued drain and not active
    assert names(check(f, stalled_after=60)) == ["stuck"]
    f.active = True  # the inactivity collapse will reach it
    assert "stuck" not in names(check(f, stalled_after=60))
    g = healthy()
    g.drain_flag, g.drain_age = True, 500.0
    assert names(check(g, stalled_after=60)) == ["stuck"]
    h = healthy()
    h.drain_flag = True  # flagged but invisible to the sweeper
    assert names(check(h, stalled_after=60)) == ["stuck"]
    s = healthy()
    s.segments = {"x": []}
    assert names(check(s, stalled_after=60)) == ["stuck"]


def test_quarantine_must_be_indexed():
    f = healthy()
    f.quarantine = [QuarantineEntry("m:x", "message", "x", "boom", 3, 0, "raw")]
    f.accepted += 1
    assert names(check(f, stalled_after=60)) == ["quarantine"]
