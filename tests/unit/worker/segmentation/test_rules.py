"""Plast Mem's rule layer and agent-memory's token budget, rule by rule and in order."""

from datetime import UTC, datetime, timedelta

import pytest

from memq.worker.segmentation.rules import RuleAction, RuleParams, Unit, decide

T0 = datetime(2026, 1, 1, tzinfo=UTC)
P = RuleParams()


def u(minute: float = 0, chars: int = 40, tokens: int = 10) -> Unit:
    return Unit(T0 + timedelta(minutes=minute), chars, tokens)


def test_defaults_are_the_seeds_values():
    assert (P.min_messages, P.max_messages, P.time_gap, P.token_budget, P.min_total_chars, P.min_message_chars) == (
        3,
        50,
        timedelta(minutes=15),
        4000,
        100,
        5,
    )


def test_fewer_than_three_messages_skip_even_across_a_time_gap():
    assert decide([u(0)], u(60), P) is RuleAction.SKIP


def test_fifty_messages_force_create_before_any_other_rule():
    buffer = [u(i * 0.1) for i in range(49)]
    assert decide(buffer, u(500), P) is RuleAction.FORCE_CREATE
    assert decide(buffer[:-1], u(5), P) is RuleAction.DETECT


@pytest.mark.parametrize("gap, expected", [(15, RuleAction.DETECT), (15.01, RuleAction.TIME_BOUNDARY)])
def test_time_gap_must_exceed_fifteen_minutes(gap, expected):
    assert decide([u(0), u(1)], u(1 + gap), P) is expected


def test_token_budget_cuts_before_the_message_that_would_exceed_it():
    buffer = [u(0, tokens=2000), u(1, tokens=1990)]
    assert decide(buffer, u(2, tokens=10), P) is RuleAction.DETECT
    assert decide(buffer, u(2, tokens=11), P) is RuleAction.TOKEN_BOUNDARY


def test_time_gap_wins_over_token_budget():
    assert decide([u(0, tokens=3000), u(1, tokens=1000)], u(30, tokens=500), P) is RuleAction.TIME_BOUNDARY


def test_short_content_skips():
    assert decide([u(0, chars=30), u(1, chars=30)], u(2, chars=39), P) is RuleAction.SKIP  # 99 chars
    assert decide([u(0, chars=30), u(1, chars=30)], u(2, chars=40), P) is RuleAction.DETECT  # 100 chars


def test_short_latest_message_skips():
    assert decide([u(0, chars=100), u(1, chars=100)], u(2, chars=4), P) is RuleAction.SKIP
    assert decide([u(0, chars=100), u(1, chars=100)], u(2, chars=5), P) is RuleAction.DETECT


def test_only_time_and_token_boundaries_keep_the_edge_message():
    assert {a for a in RuleAction if a.keeps_edge} == {RuleAction.TIME_BOUNDARY, RuleAction.TOKEN_BOUNDARY}
