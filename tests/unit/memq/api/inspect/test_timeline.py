"""The inspector's timeline geometry (memq/api/inspect/timeline.py), pure: a conversation
like the demo's (three days, eleven chapters, 44 events of 2 to 20 minutes, hours of
silence between the bursts) laid out with no two bars overlapping, every event inside its
chapter's band, idle gaps cut with their length written, an axis of round times with the
day where it changes, and band labels that neither overlap nor leave the drawing."""

from __future__ import annotations

import itertools
import random
import re
from datetime import UTC, datetime, timedelta

import pytest

from memq.api.inspect.timeline import (
    CUT,
    LEFT,
    MAX_LANES,
    MIN_BAND,
    MIN_BLOCK,
    RIGHT,
    TICK_SIZE,
    TIGHT_BAND,
    TITLE_SIZE,
    WHEN_SIZE,
    WIDTH,
    Axis,
    Group,
    Layout,
    idle_label,
    idle_words,
    lay_out,
    overlapping,
    span_label,
    text_width,
)

DAY = datetime(2025, 3, 14, tzinfo=UTC)  # a Friday
M = timedelta(minutes=1)

# (minutes from the first day's midnight, [(event minutes, pause before the next), ...], title)
DEMO = [
    (7 * 60 + 31, [(8, 1), (10, 1), (5, 0)], "Lisbon trip: Jonas and Príncipe Real"),
    (10 * 60 + 2, [(3, 1), (10, 2), (3, 2), (7, 2), (3, 2), (2, 2)], "asyncio: lock and worker"),
    (10 * 60 + 41, [(3, 2), (6, 1), (5, 0)], "Starter: dough and Gerald"),
    (18 * 60 + 47, [(2, 2), (11, 2), (3, 1), (22, 1), (4, 0)], "Bike: Cube Attain GTC SL and Canyon"),
    (24 * 60 + 8 * 60 + 12, [(8, 1), (9, 0)], "Leaves: Monstera and chunky aroid mix"),
    (24 * 60 + 8 * 60 + 31, [(3, 2), (2, 0)], "Interview: system design round and Lena"),
    (24 * 60 + 8 * 60 + 39, [(4, 1), (3, 2), (4, 1), (2, 1), (2, 4), (3, 0)], "Payments: merchant and UNKNOWN"),
    (24 * 60 + 9 * 60 + 44, [(4, 1), (15, 1), (6, 0)], "climbing: Drop Zone and Nuremberg"),
    (24 * 60 + 10 * 60 + 11, [(2, 1), (3, 1), (5, 1), (2, 0)], "Portuguese: obrigado and RTP"),
    (48 * 60 + 9 * 60 + 5, [(3, 1), (2, 1), (3, 1), (4, 1), (2, 1), (2, 1), (2, 1), (2, 0)], "Backup: NAS"),
    (48 * 60 + 9 * 60 + 33, [(3, 1), (8, 0)], "Lisbon: May 8 and Príncipe Real"),
]  # fmt: skip


def demo() -> tuple[list[tuple[datetime, datetime]], list[Group]]:
    events: list[tuple[datetime, datetime]] = []
    groups = []
    for begins, spans, title in DEMO:
        at, first = DAY + begins * M, len(events)
        for length, pause in spans:
            events.append((at, at + length * M))
            at += (length + pause) * M
        groups.append(Group(title, events[first][0], events[-1][1], tuple(range(first, len(events)))))
    return events, groups


def boxes(layout: Layout) -> list[tuple[float, float, float, float]]:
    return [(b.x, b.y, b.width, b.height) for b in layout.bars]


def test_the_demo_has_eleven_chapters_of_44_events_over_three_days():
    events, groups = demo()
    assert len(events) == 44 and len(groups) == 11
    assert (events[-1][1] - events[0][0]) > timedelta(days=2)
    assert min(e - s for s, e in events) == 2 * M and max(e - s for s, e in events) == 22 * M


def test_no_two_bars_overlap_at_the_demos_density():
    events, groups = demo()
    layout = lay_out(events, groups)
    assert layout is not None and len(layout.bars) == 44 and layout.width == WIDTH  # no scrolling
    assert overlapping(boxes(layout)) == []
    for bar in layout.bars:
        assert bar.width >= MIN_BLOCK and bar.x >= LEFT and bar.x + bar.width <= WIDTH - RIGHT
    assert layout.lanes <= 2  # stacked only where two events nearly touch


def test_every_event_is_inside_its_chapters_band_and_the_bands_are_apart():
    events, groups = demo()
    layout = lay_out(events, groups)
    assert layout is not None and len(layout.bands) == len(groups)
    for band in layout.bands:
        assert band.width >= MIN_BAND
        for i in groups[band.group].events:
            bar = layout.bars[i]
            assert bar.band == band.group
            assert band.x <= bar.x and bar.x + bar.width <= band.x + band.width + 1e-6
            assert band.y <= bar.y and bar.y + bar.height <= band.y + band.height
    ordered = sorted(layout.bands, key=lambda b: b.x)
    assert [b.group for b in ordered] == list(range(len(groups)))
    assert all(a.x + a.width <= b.x for a, b in itertools.pairwise(ordered))


def test_readable_widths_idle_time_is_cut_and_the_cut_says_how_long():
    events, groups = demo()
    layout = lay_out(events, groups)
    assert layout is not None
    gaps = [b[0] - a[1] for a, b in itertools.pairwise(events) if b[0] - a[1] > CUT]
    assert [b.idle for b in layout.axis.breaks] == gaps
    assert [b.label for b in layout.axis.breaks] == ["2h", "8h", "13h", "38m", "23h"]
    # a linear axis over the three days would give a five-minute event under 2 units
    linear = Axis.over([events[0][0], events[-1][1]])
    assert linear is not None and linear.span(*events[2])[1] == MIN_BLOCK
    assert layout.bars[2].width > 10  # the same event, five minutes
    assert layout.axis.px_per_second * 60 > 2.5


def test_the_axis_shows_round_times_and_each_day_once():
    events, groups = demo()
    layout = lay_out(events, groups)
    assert layout is not None
    ticks = layout.ticks
    assert all(re.fullmatch(r"\d\d:\d\d", t.label) for t in ticks), ticks
    assert [t.day for t in ticks if t.day] == ["Fri 14 Mar", "Sat 15 Mar", "Sun 16 Mar"]
    # each run of talk starts with its exact time; the others are round (here every 30 minutes)
    starts = [t.label for t in ticks if t.anchor == "start"]
    assert starts[:3] == ["07:31", "10:02", "18:47"]
    assert all(t.label.endswith((":00", ":30")) for t in ticks if t.anchor != "start")
    assert any(t.anchor != "start" for t in ticks)
    xs = [t.x for t in ticks]
    assert xs == sorted(xs)
    spans = []
    for t in ticks:
        width = text_width(t.label, TICK_SIZE)
        left = t.x - width * {"start": 0, "middle": 0.5, "end": 1}[t.anchor]
        spans.append((left, left + width))
        assert left >= LEFT - 0.1 and left + width <= WIDTH - RIGHT + 0.1
    assert all(a[1] < b[0] for a, b in itertools.pairwise(spans)), spans


def test_band_labels_show_title_and_time_without_overlapping():
    events, groups = demo()
    layout = lay_out(events, groups)
    assert layout is not None and 1 <= layout.rows <= 3
    drawn = []
    for band in layout.bands:
        group = groups[band.group]
        assert band.when == span_label(group.start, group.end)
        assert band.title == group.title or (band.title.endswith("…") and group.title.startswith(band.title[:-1]))
        assert len(band.title) >= min(16, len(group.title))
        width = max(text_width(band.title, TITLE_SIZE, bold=True), text_width(band.when, WHEN_SIZE))
        assert band.label_x >= LEFT and band.label_x + width <= WIDTH - RIGHT + 0.1
        assert band.label_x <= band.x  # it starts over its band, or left of it at the right edge
        drawn.append((band.label_x, band.title_y - 12, width, band.when_y - band.title_y + 14))
    assert overlapping(drawn) == []
    assert layout.bands[0].when == "07:31–07:56"


@pytest.mark.parametrize(
    ("span", "step"),
    [
        (timedelta(minutes=50), 5),
        (timedelta(hours=3), 15),
        (timedelta(hours=10), 60),
        (timedelta(hours=30), 180),
        (timedelta(days=3), 360),
        (timedelta(days=9), 1440),
    ],
)
def test_round_tick_steps_follow_the_span(span, step):
    start = DAY + timedelta(hours=7, minutes=13)
    axis = Axis.over([start, start + span])
    assert axis is not None
    ticks = axis.ticks()
    assert ticks[0].x == LEFT and ticks[0].anchor == "start"
    rounds = [t for t in ticks if t.anchor != "start"]
    assert len(rounds) >= 2
    if step < 1440:
        minutes = [int(t.label[:2]) * 60 + int(t.label[3:]) for t in rounds]
        assert all(m % step == 0 for m in minutes), [t.label for t in rounds]
    else:
        assert all(re.fullmatch(r"\d{1,2} [A-Z][a-z]{2}", t.label) for t in rounds), rounds


def test_a_linear_axis_over_years_labels_months_and_years():
    axis = Axis.over([datetime(2024, 5, 1, tzinfo=UTC), datetime(2026, 2, 3, tzinfo=UTC)])
    assert axis is not None
    ticks = axis.ticks()
    assert ticks[0].label == "1 May" and ticks[0].day == "2024"
    assert {t.day for t in ticks if t.day} == {"2024", "2025", "2026"}
    assert all(re.fullmatch(r"[A-Z][a-z]{2}|\d{1,2} [A-Z][a-z]{2}", t.label) for t in ticks), ticks


def test_events_outside_any_chapter_and_the_open_event_are_drawn_too():
    events, groups = demo()
    loose = lay_out(events, [])
    assert loose is not None and loose.bands == () and loose.rows == 0
    assert overlapping(boxes(loose)) == []
    opened = (events[-1][1] + 2 * M, events[-1][1] + 9 * M)
    some = lay_out(events, groups[:3], opened)
    assert some is not None and some.open is not None
    assert overlapping([*boxes(some), (some.open.x, some.open.y, some.open.width, some.open.height)]) == []
    assert [b.band for b in some.bars[:12]] == [0] * 3 + [1] * 6 + [2] * 3
    assert all(b.band is None for b in some.bars[12:])


def test_single_and_instant_events():
    at = DAY + 9 * 60 * M
    one = lay_out([(at, at)], [Group("hello", at, at, (0,))])
    assert one is not None and one.bars[0].width == MIN_BLOCK and one.ticks[0].label == "09:00"
    assert one.bands[0].x <= one.bars[0].x and one.bars[0].x + MIN_BLOCK <= one.bands[0].x + one.bands[0].width
    assert lay_out([], []) is None
    only_open = lay_out([], [], (at, at + 3 * M))  # messages accepted, no episode yet
    assert only_open is not None and only_open.open is not None and only_open.bars == ()
    assert only_open.open.width > MIN_BLOCK and only_open.ticks[0].label == "09:00"


def test_no_overlap_however_dense():
    """300 events, many of one message (no duration) a few seconds apart; a chapter ends at
    a pause of 30 minutes (MEMQ_CHAPTER_GAP_MINUTES) or after ten events."""
    rng = random.Random(7)
    events: list[tuple[datetime, datetime]] = []
    groups: list[Group] = []
    at, first = DAY, 0
    for i in range(300):
        pause = timedelta(seconds=rng.choice([0, 5, 30, 60, 600, 5000, 90000]))
        if i and (pause >= CUT or i - first == 10):
            groups.append(Group(f"chapter {len(groups)}", events[first][0], events[-1][1], tuple(range(first, i))))
            first = i
        at += pause
        end = at + timedelta(seconds=rng.choice([0, 10, 60, 300, 1200]))
        events.append((at, end))
        at = end
    groups.append(Group("last", events[first][0], events[-1][1], tuple(range(first, 300))))
    layout = lay_out(events, groups)
    assert layout is not None and len(layout.bands) == len(groups)
    assert overlapping(boxes(layout)) == []
    assert layout.lanes <= MAX_LANES
    assert layout.width > WIDTH  # wider than the page: it scrolls
    assert all(b.x >= LEFT and b.x + b.width <= layout.width - RIGHT + 1e-6 for b in layout.bars)
    assert all(band.width >= TIGHT_BAND for band in layout.bands)


def test_idle_time_in_words():
    assert idle_label(timedelta(minutes=38)) == "38m"
    assert idle_label(timedelta(hours=7, minutes=49)) == "8h"
    assert idle_label(timedelta(days=3, hours=2)) == "3d"
    assert idle_words(timedelta(hours=7, minutes=49)) == "7 h 49 min"
    assert idle_words(timedelta(days=1, minutes=5)) == "1 d 5 min"
    assert span_label(DAY + 23 * 60 * M, DAY + 24 * 60 * M + 20 * M) == "Fri 23:00–Sat 00:20"
