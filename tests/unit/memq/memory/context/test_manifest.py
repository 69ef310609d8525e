"""The manifest tree (MIRA): grouped by relative day in the caller's time zone, newest
first, the open segment marked Active, at most ``depth`` entries, titles cut short."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from memq.memory.context.manifest import build_manifest, day_label, render_markdown, short, to_json
from memq.memory.context.model import EpisodeListing, OpenSpan, Said

NOW = datetime(2026, 3, 10, 15, 30, tzinfo=UTC)


def episode(i: int, start: datetime, minutes: int = 40, title: str | None = None) -> EpisodeListing:
    return EpisodeListing(
        f"e{i}", title or f"Episode number {i}", f"summary {i}", start, start + timedelta(minutes=minutes), 12
    )


def build(episodes, span=None, depth=30, tz=UTC, name="UTC", chars=60):
    return build_manifest("conv", episodes, span, now=NOW, tz=tz, tz_name=name, depth=depth, title_chars=chars)


def test_the_seed_tree():
    episodes = [
        episode(1, datetime(2026, 3, 10, 9, 0, tzinfo=UTC), 75, "Morning standup notes"),
        episode(2, datetime(2026, 3, 9, 8, 0, tzinfo=UTC), 27, "Arduino servo debugging"),
        episode(3, datetime(2026, 1, 18, 15, 0, tzinfo=UTC), 72, "Nacho recipe research"),
    ]
    first = Said("user", None, "Manifest architecture discussion", datetime(2026, 3, 10, 14, 15, tzinfo=UTC))
    span = OpenSpan(first, Said("assistant", None, "ok", datetime(2026, 3, 10, 15, 0, tzinfo=UTC)), 7)
    m = build(episodes, span)
    assert render_markdown(m, UTC) == "\n".join(
        [
            "CONVERSATION MANIFEST",
            "├─ Today",
            "│  ├─ [14:15 - Active] Manifest architecture discussion",
            "│  └─ [09:00 - 10:15] Morning standup notes",
            "├─ Yesterday",
            "│  └─ [08:00 - 08:27] Arduino servo debugging",
            "└─ Jan 18",
            "   └─ [15:00 - 16:12] Nacho recipe research",
        ]
    )
    data = to_json(m)
    assert [g["label"] for g in data["groups"]] == ["Today", "Yesterday", "Jan 18"]
    active = data["groups"][0]["segments"][0]
    assert active["status"] == "active" and active["id"] is None and active["message_count"] == 7
    assert data["total_episodes"] == 3 and data["timezone"] == "UTC"


def test_days_are_the_callers_days():
    late = episode(1, datetime(2026, 3, 9, 23, 30, tzinfo=UTC))  # 00:30 on the 10th in Berlin
    berlin = ZoneInfo("Europe/Berlin")
    assert render_markdown(build([late], tz=berlin, name="Europe/Berlin"), berlin).splitlines()[1] == "└─ Today"
    assert render_markdown(build([late]), UTC).splitlines()[1] == "└─ Yesterday"


def test_depth_keeps_the_newest_and_says_how_many_are_older():
    episodes = [episode(i, NOW - timedelta(days=i + 1)) for i in range(10)]
    m = build(episodes, depth=4)
    assert [e.id for e in m.entries] == ["e0", "e1", "e2", "e3"]
    assert render_markdown(m, UTC).endswith("(6 older episodes not shown; search them with retrieve_memory)")


def test_labels_titles_and_an_empty_conversation():
    assert day_label(datetime(2025, 12, 1).date(), NOW.date()) == "Dec 1, 2025"  # another year says which
    assert day_label(datetime(2026, 2, 3).date(), NOW.date()) == "Feb 3"
    assert short("a very long title " * 10, 20) == "a very long title a…" and len(short("x" * 100, 20)) == 20
    assert render_markdown(build([]), UTC) == "CONVERSATION MANIFEST\n└─ (no episodes yet)"
    spanning = render_markdown(build([episode(1, datetime(2026, 3, 8, 23, 0, tzinfo=UTC), 120)]), UTC)
    assert "[23:00 - Mar 9 01:00]" in spanning


def test_chapters_are_what_the_tree_shows_and_the_json_keeps_both_levels():
    from memq.memory.chapters.chapter import Chapter

    day = datetime(2026, 3, 10, 9, 0, tzinfo=UTC)
    episodes = [episode(i, day + timedelta(minutes=10 * i), 9) for i in range(4)]
    chapters = [
        Chapter(
            "e0",
            "conv",
            "Lisbon trip: flights and the flat",
            "extractive",
            day,
            day + timedelta(minutes=29),
            24,
            ("e0", "e1", "e2"),
        ),
        Chapter(
            "e3",
            "conv",
            "Episode number 3",
            "episode",
            day + timedelta(minutes=30),
            day + timedelta(minutes=39),
            8,
            ("e3",),
        ),
    ]
    m = build_manifest(
        "conv",
        episodes,
        None,
        now=NOW,
        tz=UTC,
        tz_name="UTC",
        depth=30,
        title_chars=60,
        total_episodes=6,
        chapters=chapters,
    )
    assert render_markdown(m, UTC).splitlines() == [
        "CONVERSATION MANIFEST",
        "└─ Today",
        "   ├─ [09:30 - 09:39] Episode number 3",
        "   └─ [09:00 - 09:29] Lisbon trip: flights and the flat (3 events)",
        "(2 older episodes not shown; search them with retrieve_memory)",
    ]
    data = to_json(m)
    assert [len(g["segments"]) for g in data["groups"]] == [4]  # every event, as before
    assert [c["episode_ids"] for c in data["chapters"]] == [["e3"], ["e0", "e1", "e2"]]
    assert data["chapters"][1]["title"] == "Lisbon trip: flights and the flat"
