"""The session context (MIRA): collapse marker, summaries, continuity, boundary marker
with the time gap, open segment, in that order and within the budget, the newest open
messages kept first when not everything fits."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memq.memory.context.model import EpisodeListing, OpenSegment, Said
from memq.memory.context.session import SessionParams, build_session_context, human_gap
from memq.shared.tokens import count_tokens

NOW = datetime(2026, 3, 10, 15, 30, tzinfo=UTC)


def episodes(n: int) -> list[EpisodeListing]:
    return [
        EpisodeListing(
            f"e{i}",
            f"Episode {i}",
            f"What happened in episode {i}, told in a sentence.",
            NOW - timedelta(days=n - i, hours=2),
            NOW - timedelta(days=n - i, hours=1),
            10,
        )
        for i in range(n)
    ]


def said(n: int, start: datetime, prefix: str = "m") -> list[Said]:
    return [
        Said("user" if i % 2 == 0 else "assistant", None, f"{prefix}{i} " + "word " * 12, start + timedelta(minutes=i))
        for i in range(n)
    ]


def build(recent, total, before, active, max_tokens=2000, **kw):
    params = SessionParams(
        max_tokens=max_tokens, summary_count=kw.pop("summaries", 3), continuity_messages=kw.pop("continuity", 6)
    )
    return build_session_context(
        "conv",
        recent,
        total,
        before,
        OpenSegment(tuple(active)),
        now=NOW,
        tz=UTC,
        tz_name="UTC",
        params=params,
        count=count_tokens,
        **kw,
    )


def test_the_parts_in_the_seeds_order():
    last_stored = NOW - timedelta(days=1)
    ctx = build(
        episodes(5), 5, said(10, last_stored - timedelta(minutes=9), "old"), said(2, NOW - timedelta(minutes=5), "new")
    )
    text = ctx.text
    order = [
        text.index(x)
        for x in (
            "[Earlier conversation: 5 episodes are stored",
            "## Recent episodes",
            "## Last messages before this session",
            "[Session boundary:",
            "## Open segment (not yet in an episode)",
        )
    ]
    assert order == sorted(order)
    assert [e.id for e in ctx.summaries] == ["e2", "e3", "e4"]  # the newest three, oldest first
    assert len(ctx.continuity) == 6 and ctx.continuity[-1].content.startswith("old9")
    assert ctx.gap == (NOW - timedelta(minutes=5)) - last_stored
    assert "23 hours 55 minutes since the last message" in text
    assert ctx.tokens == count_tokens(text) <= 2000
    assert ctx.to_json()["gap_seconds"] == int(ctx.gap.total_seconds())


def test_a_new_conversation_has_only_its_open_segment():
    ctx = build([], 0, [], said(3, NOW - timedelta(minutes=3)))
    assert ctx.text.startswith("## Open segment") and "[Earlier" not in ctx.text and ctx.gap is None
    assert build([], 0, [], []).text == ""


def test_without_an_open_segment_the_boundary_says_a_new_session_begins():
    ctx = build(episodes(2), 2, said(4, NOW - timedelta(hours=3)), [])
    assert "[Session boundary: new session, 2 hours 57 minutes since the last message" in ctx.text
    assert "## Open segment" not in ctx.text


def test_a_tight_budget_keeps_the_newest_open_messages_and_says_what_is_left_out():
    ctx = build(
        episodes(5), 5, said(6, NOW - timedelta(days=1)), said(40, NOW - timedelta(hours=1), "new"), max_tokens=300
    )
    assert ctx.tokens == count_tokens(ctx.text) <= 300
    assert ctx.active and ctx.active[-1].content.startswith("new39")  # the newest is kept
    assert ctx.left_out["open_segment"] == 40 - len(ctx.active) > 0
    assert f"({ctx.left_out['open_segment']} earlier messages left out)" in ctx.text
    assert ctx.summaries == [] and ctx.left_out["summaries"] == 3


def test_unread_open_messages_are_counted_as_left_out():
    ctx = build([], 0, [], said(5, NOW - timedelta(minutes=5)), open_count=120)
    assert ctx.left_out == {"open_segment": 115} and "(115 earlier messages left out)" in ctx.text


@pytest.mark.parametrize(
    "gap, says",
    [
        (timedelta(seconds=20), "less than a minute"),
        (timedelta(minutes=1), "1 minute"),
        (timedelta(days=2, hours=1, minutes=5), "2 days 1 hour"),
    ],
)
def test_human_gap(gap, says):
    assert human_gap(gap) == says


@settings(max_examples=60, deadline=None)
@given(
    n_eps=st.integers(0, 6),
    n_before=st.integers(0, 10),
    n_active=st.integers(0, 30),
    budget=st.integers(100, 1500),
    long=st.booleans(),
)
def test_the_budget_always_holds(n_eps, n_before, n_active, budget, long):
    active = said(n_active, NOW - timedelta(hours=1))
    if long and active:
        active[-1] = Said("user", "Ana", "very long message " * 400, active[-1].at)
    ctx = build(episodes(n_eps), n_eps, said(n_before, NOW - timedelta(days=1)), active, max_tokens=budget)
    assert ctx.tokens == count_tokens(ctx.text) <= budget


def test_facts_come_after_the_collapse_marker_and_before_summaries():
    ctx = build(
        episodes(3),
        3,
        said(2, NOW - timedelta(days=1)),
        said(1, NOW - timedelta(minutes=1)),
        facts=["- Ana lives in Porto. (identity, since 1 Mar 2026)"],
    )
    text = ctx.text
    assert text.index("[Earlier conversation") < text.index("## Known facts") < text.index("## Recent episodes")
    assert ctx.facts == ["- Ana lives in Porto. (identity, since 1 Mar 2026)"] and ctx.to_json()["facts"] == ctx.facts
    tight = build(
        episodes(3), 3, [], said(1, NOW - timedelta(minutes=1)), max_tokens=100, facts=["- a long fact " + "word " * 60]
    )
    assert tight.tokens <= 100 and tight.facts == []


def test_the_topics_so_far_are_the_newest_chapters_a_line_each_within_the_budget():
    from memq.memory.chapters.chapter import Chapter

    eps = episodes(8)
    chapters = [
        Chapter(e.id, "conv", f"Topic {i}: what and why", "extractive", e.start_at, e.end_at, 20, (e.id, f"x{i}"))
        for i, e in enumerate(eps)
    ]
    ctx = build(eps, 8, [], said(2, NOW), chapters=chapters)
    assert ctx.chapters == [
        f"- {c.start_at.day} {c.start_at:%b %H:%M}-{c.end_at:%H:%M} · {c.title} (2 events)" for c in chapters[-5:]
    ]
    assert ctx.text.index("## Topics so far") < ctx.text.index("## Recent episodes")
    tight = build(eps, 8, [], said(2, NOW), max_tokens=150, chapters=chapters)
    assert tight.tokens <= 150 and len(tight.chapters) < 5 and tight.left_out.get("chapters")
