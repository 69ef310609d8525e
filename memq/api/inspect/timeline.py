"""Where things sit on a time axis drawn as an inline SVG, and the axis' ticks. Pure
geometry: the templates draw what this computes.

Two axes. ``Axis.over`` is linear (the facts page: valid and recorded time). ``Axis.fit``
is the conversation timeline's: a conversation runs over days with hours of silence
between its bursts of talk, so a linear axis would make a five-minute event a sliver.
``fit`` keeps time linear within each run of talk and cuts every idle gap longer than
``CUT`` down to a fixed ``BREAK`` (drawn as a break mark with the idle time), and widens a
chapter too short to be read to ``MIN_BAND``. ``lay_out`` puts chapters on it as labelled
bands and the events inside them as bars, stacked in lanes so that no two bars overlap."""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

WIDTH = 1000  # the SVG's viewBox width, at least (a conversation of many chapters is wider); it scales to the page
LEFT = RIGHT = 12
INNER = WIDTH - LEFT - RIGHT
MIN_BLOCK = 4  # an episode of one message is still a block one can see and click
CUT = timedelta(minutes=30)  # idle time longer than this is cut out of the conversation's axis
BREAK = 30  # the width a cut takes
MIN_BAND = 56  # the narrowest a chapter's band is drawn
TIGHT_BAND = 44  # as narrow as one may be before the drawing grows wider than the page
TICK_SPACE = 64  # round ticks are at least this far apart
LABEL_GAP = 10  # the least room between two tick labels
TICK_SIZE = 13  # the tick labels' font size
PAD = 3  # the least room between two bars in one lane
MAX_LANES = 8

# round tick steps: (unit, how many); the smallest that leaves TICK_SPACE between ticks
STEPS = (
    *(("minute", n) for n in (1, 5, 10, 15, 30)),
    *(("hour", n) for n in (1, 3, 6, 12)),
    ("day", 1),
    ("day", 2),
    ("week", 1),
    *(("month", n) for n in (1, 3, 6)),
    *(("year", n) for n in (1, 2, 5, 10, 20, 50, 100)),
)
_SECONDS = {"minute": 60, "hour": 3600, "day": 86400, "week": 7 * 86400, "month": 30.44 * 86400, "year": 365.25 * 86400}


def utc(at: datetime) -> datetime:
    return at.astimezone(UTC)


def day_label(at: datetime) -> str:
    """``Fri 14 Mar``."""
    at = utc(at)
    return f"{at:%a} {at.day} {at:%b}"


def clock(at: datetime) -> str:
    return f"{utc(at):%H:%M}"


def idle_label(idle: timedelta) -> str:
    """A cut's length in a few characters: ``38m``, ``8h``, ``3d``."""
    minutes = idle.total_seconds() / 60
    if minutes < 60:
        return f"{round(minutes)}m"
    if minutes < 48 * 60:
        return f"{round(minutes / 60)}h"
    return f"{round(minutes / 1440)}d"


def idle_words(idle: timedelta) -> str:
    """``7 h 49 min``."""
    minutes = round(idle.total_seconds() / 60)
    days, rest = divmod(minutes, 1440)
    hours, minutes = divmod(rest, 60)
    parts = [f"{days} d"] * bool(days) + [f"{hours} h"] * bool(hours) + [f"{minutes} min"] * bool(minutes or not rest)
    return " ".join(parts[:2])


def span_label(start: datetime, end: datetime) -> str:
    """``07:31–07:56``; with the weekday when it runs over midnight."""
    if utc(start).date() == utc(end).date():
        return f"{clock(start)}–{clock(end)}"
    return f"{utc(start):%a} {clock(start)}–{utc(end):%a} {clock(end)}"


@dataclass(frozen=True)
class Tick:
    x: float
    label: str
    day: str = ""  # the day (or year), where it changes
    anchor: str = "middle"
    day_x: float = 0.0  # where the day's label starts (anchored at its start)


@dataclass(frozen=True)
class Piece:
    """A stretch of the axis where time is linear."""

    start: datetime
    end: datetime
    x: float
    width: float
    after_cut: bool = False  # a cut lies before it: it begins a run


@dataclass(frozen=True)
class Break:
    """An idle gap cut out of the axis."""

    x: float
    width: float
    idle: timedelta

    @property
    def label(self) -> str:
        return idle_label(self.idle)

    @property
    def words(self) -> str:
        return idle_words(self.idle)

    @property
    def middle(self) -> float:
        return round(self.x + self.width / 2, 1)


# --- round ticks ---------------------------------------------------------------------


def _step(px_per_second: float) -> tuple[str, int] | None:
    if px_per_second <= 0:
        return None
    return next((s for s in STEPS if _SECONDS[s[0]] * s[1] * px_per_second >= TICK_SPACE), STEPS[-1])


def _round_times(start: datetime, end: datetime, step: tuple[str, int]) -> list[datetime]:
    """The round times of ``step`` after ``start`` up to ``end``, in UTC."""
    unit, n = step
    start, end = utc(start), utc(end)
    out: list[datetime] = []
    if unit in ("minute", "hour", "day", "week"):
        size = timedelta(seconds=_SECONDS[unit] * n)
        origin = datetime(2000, 1, 3, tzinfo=UTC)  # a Monday at midnight: weeks start on Mondays
        at = origin + size * math.floor((start - origin) / size)
        while at <= end:
            if at > start:
                out.append(at)
            at += size
        return out
    if unit == "month":
        year, month = start.year, start.month - (start.month - 1) % n
        while True:
            at = datetime(year, month, 1, tzinfo=UTC)
            if at > end:
                return out
            if at > start:
                out.append(at)
            year, month = (year + 1, month + n - 12) if month + n > 12 else (year, month + n)
    year = start.year - start.year % n
    while (at := datetime(year, 1, 1, tzinfo=UTC)) <= end:
        if at > start:
            out.append(at)
        year += n
    return out


def _label(at: datetime, unit: str, exact: bool) -> tuple[str, str]:
    """(the tick's label, the key of its second line: its day or year)."""
    at = utc(at)
    if unit in ("minute", "hour"):
        return clock(at), at.date().isoformat()
    if unit in ("day", "week") or (exact and unit == "month"):
        return f"{at.day} {at:%b}", str(at.year)
    if unit == "month":
        return f"{at:%b}", str(at.year)
    return (f"{at:%b %Y}" if exact else str(at.year)), ""


def _second_line(at: datetime, unit: str) -> str:
    return day_label(at) if unit in ("minute", "hour") else str(utc(at).year)


# Character widths in ems of a wide sans-serif (DejaVu Sans, what a Linux browser falls
# back to; the system fonts of other platforms are narrower): (regular, bold).
_EM = {
    **dict.fromkeys("ijlIJ'.,:;!|", (0.30, 0.37)),
    **dict.fromkeys("frt()-/", (0.40, 0.49)),
    " ": (0.32, 0.35),
    **dict.fromkeys("mwMW…", (1.0, 1.1)),
    **dict.fromkeys("0123456789", (0.64, 0.70)),
}


def _em(c: str, bold: bool) -> float:
    if c in _EM:
        return _EM[c][bold]
    if c.isupper():
        return 0.79 if bold else 0.74
    return 0.72 if bold else 0.64


def text_width(text: str, size: float = 12.0, bold: bool = False) -> float:
    """About how wide ``text`` is drawn at ``size`` (viewBox units; on the generous side)."""
    return sum(_em(c, bold) for c in text) * size


@dataclass(frozen=True)
class Axis:
    """Time to x: linear within each piece, cut between pieces a break lies between."""

    start: datetime
    end: datetime
    pieces: tuple[Piece, ...]
    breaks: tuple[Break, ...] = ()
    px_per_second: float = 0.0  # the scale of the linear stretches not widened
    width: float = WIDTH  # of the drawing: the axis runs from LEFT to width - RIGHT

    @property
    def right(self) -> float:
        return self.width - RIGHT

    @classmethod
    def over(cls, times: Sequence[datetime]) -> Axis | None:
        """A linear axis spanning ``times`` (a minute at least), None without any."""
        if not times:
            return None
        start, end = min(times), max(times)
        end = max(end, start + timedelta(minutes=1))
        return cls(start, end, (Piece(start, end, LEFT, INNER),), (), INNER / (end - start).total_seconds())

    @classmethod
    def fit(
        cls,
        groups: Sequence[tuple[datetime, datetime]],
        *,
        cut: timedelta = CUT,
        min_width: float = MIN_BAND,
        gap: float = BREAK,
        width: float = WIDTH,
    ) -> Axis | None:
        """A compressed axis over ``groups`` (chapters, events outside any chapter, the
        open event): each at least ``min_width`` wide, idle gaps longer than ``cut`` cut
        to ``gap``, the rest linear at one scale, the whole filling the width."""
        if not groups:
            return None
        merged: list[list[datetime]] = []
        for s, e in sorted((s, max(s, e)) for s, e in groups):
            if merged and s < merged[-1][1]:  # overlapping: one group (touching ones stay two)
                merged[-1][1] = max(merged[-1][1], e)
            else:
                merged.append([s, e])
        # the stretches in order: ("group" | "idle" | "cut", start, end)
        parts: list[tuple[str, datetime, datetime]] = []
        for i, (s, e) in enumerate(merged):
            if i:
                idle = s - parts[-1][2]
                if idle > cut:
                    parts.append(("cut", parts[-1][2], s))
                elif idle > timedelta(0):
                    parts.append(("idle", parts[-1][2], s))
            parts.append(("group", s, e))
        cuts = sum(kind == "cut" for kind, _, _ in parts)
        inner = width - LEFT - RIGHT
        gap = min(gap, inner / 4 / cuts) if cuts else gap
        avail = inner - cuts * gap
        seconds = [(e - s).total_seconds() for _, s, e in parts]
        n = len(merged)
        floor = min(min_width, 0.9 * avail / n)
        linear = sum(d for (kind, _, _), d in zip(parts, seconds, strict=True) if kind != "cut")

        def widths(scale: float) -> list[float]:
            out = []
            for (kind, _, _), d in zip(parts, seconds, strict=True):
                out.append(gap if kind == "cut" else max(floor, scale * d) if kind == "group" else scale * d)
            return out

        if linear <= 0:  # only instants: share the width out evenly
            scale = 0.0
            floor = avail / n
        else:
            low, high = 0.0, avail / linear
            for _ in range(60):
                middle = (low + high) / 2
                low, high = (middle, high) if sum(widths(middle)) < inner else (low, middle)
            scale = low
        x = float(LEFT)
        pieces: list[Piece] = []
        breaks: list[Break] = []
        for k, ((kind, s, e), w) in enumerate(zip(parts, widths(scale), strict=True)):
            if kind == "cut":
                breaks.append(Break(round(x, 1), round(w, 1), e - s))
            else:
                pieces.append(Piece(s, e, x, w, k > 0 and parts[k - 1][0] == "cut"))
            x += w
        # the float sum a hair off the width: the last piece ends at the edge
        pieces[-1] = replace(pieces[-1], width=width - RIGHT - pieces[-1].x)
        return cls(merged[0][0], merged[-1][1], tuple(pieces), tuple(breaks), scale, width)

    def x(self, at: datetime) -> float:
        pieces = self.pieces
        if at <= pieces[0].start:
            return round(pieces[0].x, 1)
        i = bisect.bisect_right([p.start for p in pieces], at) - 1
        p = pieces[i]
        if at <= p.end:
            if p.end == p.start:
                return round(p.x + p.width / 2, 1)
            return round(p.x + (at - p.start) / (p.end - p.start) * p.width, 1)
        if i + 1 < len(pieces):  # in a cut: its middle
            return round((p.x + p.width + pieces[i + 1].x) / 2, 1)
        return round(p.x + p.width, 1)

    def span(self, start: datetime, end: datetime) -> tuple[float, float]:
        """(x, width) of a block from ``start`` to ``end``: ``MIN_BLOCK`` wide at least,
        centred where it is narrower, within the axis."""
        left, right = self.x(start), self.x(max(start, end))
        width = max(right - left, MIN_BLOCK)
        if right - left < MIN_BLOCK:
            left = (left + right - MIN_BLOCK) / 2
        return round(min(max(left, LEFT), self.right - width), 1), round(width, 1)

    def extent(self, start: datetime, end: datetime) -> tuple[float, float]:
        """(x, width) of a group the axis was fitted to: the whole of its piece (a group
        of no duration too); of anything else, its span."""
        i = bisect.bisect_left([p.start for p in self.pieces], start)
        if i < len(self.pieces) and self.pieces[i].start == start and self.pieces[i].end == end:
            p = self.pieces[i]
            return round(p.x, 1), round(p.width, 1)
        return self.span(start, end)

    def runs(self) -> list[tuple[Piece, Piece]]:
        """Each run of pieces no cut lies within: (its first piece, its last piece)."""
        out: list[tuple[Piece, Piece]] = []
        for p in self.pieces:
            if out and not p.after_cut:
                out[-1] = (out[-1][0], p)
            else:
                out.append((p, p))
        return out

    def ticks(self) -> list[Tick]:
        """A label where each run begins (its exact time), round ticks within the runs
        (``STEPS``), and the day (or the year) under the first tick of each."""
        step = _step(self.px_per_second)
        unit = step[0] if step else "minute"
        placed: list[tuple[Tick, datetime, str]] = []  # with its time and its day's (or year's) key
        for first, last in self.runs():
            at = first.start
            label, key = _label(at, unit, exact=True)
            placed.append((Tick(round(first.x, 1), label, anchor="start"), at, key))
            for t in _round_times(at, last.end, step) if step else []:
                label, key = _label(t, unit, exact=False)
                x = self.x(t)
                anchor = "end" if x > self.right - text_width(label, TICK_SIZE) / 2 else "middle"
                placed.append((Tick(x, label, anchor=anchor), t, key))
        # no two labels closer than LABEL_GAP: a run's start label goes before a round tick
        kept: list[tuple[Tick, datetime, str]] = []
        for item in placed:
            while kept and _extent(kept[-1][0])[1] + LABEL_GAP > _extent(item[0])[0]:
                if item[0].anchor == "start" and kept[-1][0].anchor != "start":
                    kept.pop()
                    continue
                break
            else:
                kept.append(item)
        placed = kept
        out: list[Tick] = []
        seen, day_end = "", -math.inf
        for tick, at, key in placed:
            if key and key != seen:
                day = _second_line(at, unit)
                width = text_width(day, 12, bold=True)
                left = tick.x - width * {"start": 0.0, "middle": 0.5, "end": 1.0}[tick.anchor]
                left = max(left, day_end + 8, LEFT)
                left = min(left, self.right - width)
                tick = Tick(tick.x, tick.label, day, tick.anchor, round(left, 1))
                day_end, seen = left + width, key
            out.append(tick)
        return out


def _extent(tick: Tick) -> tuple[float, float]:
    """Where a tick's label is drawn: (left, right)."""
    width = text_width(tick.label, TICK_SIZE)
    left = tick.x - width * {"start": 0.0, "middle": 0.5, "end": 1.0}[tick.anchor]
    return left, left + width


# --- the conversation timeline -------------------------------------------------------

ROW = 34  # a band label's row: its title and its time
STARS = 14  # above the lanes: the key-moment marks
LANE = 24  # a lane of bars
LANE_GAP = 4
TITLE_SIZE, WHEN_SIZE = 12.0, 11.5
MAX_LABEL = 300
MAX_ROWS = 3  # of band labels
KEEP = 16  # characters of a title a label should keep, else another row of labels
KEEP_WIDTH = KEEP * TITLE_SIZE * 0.72
MAX_SHIFT = 100  # the furthest left of its band a label at the right edge starts


@dataclass(frozen=True)
class Group:
    """A chapter as the layout needs it: the events it holds (indices into the events)."""

    title: str
    start: datetime
    end: datetime
    events: tuple[int, ...]


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    lane: int
    band: int | None  # the band it is inside

    @property
    def middle(self) -> float:
        return round(self.x + self.width / 2, 1)


@dataclass(frozen=True)
class Band:
    group: int  # the index of its group
    x: float
    y: float
    width: float
    height: float
    title: str  # as shown: truncated to the room its label has
    when: str  # as shown
    label_x: float
    row: int
    title_y: float
    when_y: float
    bracket_y: float


@dataclass(frozen=True)
class Layout:
    axis: Axis
    bars: tuple[Bar, ...]  # one per event, in the events' order
    bands: tuple[Band, ...]
    open: Bar | None
    ticks: tuple[Tick, ...]
    lanes: int
    rows: int  # of band labels
    band_top: float
    band_bottom: float
    star_y: float
    gap_y: float  # where a cut's idle time is written
    axis_y: float
    height: float

    @property
    def width(self) -> float:
        return self.axis.width

    @property
    def runs(self) -> list[tuple[float, float]]:
        return [(round(a.x, 1), round(b.x + b.width, 1)) for a, b in self.axis.runs()]


def _fit_text(text: str, room: float, size: float, bold: bool = False) -> str:
    """``text``, or as much of it as fits in ``room`` with an ellipsis (nothing when
    fewer than three characters would)."""
    if text_width(text, size, bold) <= room:
        return text
    shown = text
    while shown and text_width(shown.rstrip() + "…", size, bold) > room:
        shown = shown[:-1]
    return shown.rstrip() + "…" if len(shown.rstrip()) >= 3 else ""


def _label_width(title: str, when: str) -> float:
    return max(text_width(title, TITLE_SIZE, bold=True), text_width(when, WHEN_SIZE))


def _labels(
    boxes: list[tuple[float, float]], titles: list[str], whens: list[str], rows: int, right: float
) -> tuple[list[tuple[float, int, str, str]], bool]:
    """Each band's label in one of ``rows`` rows: (x, row, title, when), the title and time
    as much as fits before the next label of its row; and whether every label kept its
    time and ``KEEP`` characters of its title at least.

    A label goes to the first row that is free where its band begins, else to the row
    that frees up first; it starts where its band does. One that would run past the right
    edge ends there instead, starting up to ``MAX_SHIFT`` left of its band, in the row
    where it can start furthest left (the label before it kept to ``KEEP`` characters)."""
    needs = [min(MAX_LABEL, _label_width(t, w)) for t, w in zip(titles, whens, strict=True)]
    ends = [-math.inf] * rows
    lasts: list[int | None] = [None] * rows
    row_of: list[int] = []
    lefts = [x for x, _ in boxes]

    def least(row: int) -> float:
        """The furthest left a label may start in ``row``, after the one there now."""
        j = lasts[row]
        return LEFT if j is None else lefts[j] + min(needs[j], KEEP_WIDTH) + 8

    for i, ((x, _), need) in enumerate(zip(boxes, needs, strict=True)):
        if x + need > right:  # at the right edge
            row = min(range(rows), key=lambda r: (max(least(r), ends[r] + 8 if ends[r] + 8 <= x else -math.inf), r))
            lefts[i] = max(min(x, right - need), least(row), x - MAX_SHIFT, LEFT)
        else:
            row = next((r for r in range(rows) if ends[r] + 8 <= x), min(range(rows), key=lambda r: ends[r]))
        row_of.append(row)
        ends[row] = max(lefts[i], ends[row] + 8) + need
        lasts[row] = i
    out: list[tuple[float, int, str, str]] = []
    whole = True
    for i, (title, when) in enumerate(zip(titles, whens, strict=True)):
        after = next((j for j in range(i + 1, len(boxes)) if row_of[j] == row_of[i]), None)
        room = min((right if after is None else lefts[after] - 8) - lefts[i], MAX_LABEL)
        shown = _fit_text(title, room, TITLE_SIZE, bold=True)
        start = when.split("–")[0]
        at = when if text_width(when, WHEN_SIZE) <= room else start if text_width(start, WHEN_SIZE) <= room else ""
        whole = whole and at == when and len(shown) >= min(len(title), KEEP)
        out.append((round(lefts[i], 1), row_of[i], shown, at))
    return out, whole


def _lanes(spans: list[tuple[float, float]]) -> list[int]:
    """The lowest lane each span fits in without touching another (spans in x order); past
    ``MAX_LANES`` the lane that frees up first (only where no two events could be told
    apart anyway: a band of dozens of events within a few minutes)."""
    ends: list[float] = []
    out = []
    for x, w in spans:
        lane = next((i for i, end in enumerate(ends) if end + PAD <= x), len(ends))
        if lane == MAX_LANES:
            lane = min(range(MAX_LANES), key=lambda i: ends[i])
        if lane == len(ends):
            ends.append(x + w)
        else:
            ends[lane] = x + w
        out.append(lane)
    return out


def needed_width(spans: Sequence[tuple[datetime, datetime]], events: int) -> float:
    """How wide a drawing of these groups and events is (``WIDTH`` at least): room for
    every group's band at ``TIGHT_BAND``, every cut, and the events in a few lanes."""
    ordered = sorted(spans)
    cuts = sum(b[0] - a[1] > CUT for a, b in itertools.pairwise(ordered))
    by_groups = len(ordered) * TIGHT_BAND / 0.9 + cuts * BREAK
    by_events = events * (MIN_BLOCK + PAD) / 2
    return round(max(WIDTH, LEFT + RIGHT + max(by_groups, by_events)))


def lay_out(
    events: Sequence[tuple[datetime, datetime]],
    groups: Sequence[Group],
    open_span: tuple[datetime, datetime] | None = None,
) -> Layout | None:
    """The timeline of a conversation: ``events`` (start, end) oldest first, the chapters
    (``groups``, in order, each with its events; an event in none is drawn alone) and the
    open event not yet stored."""
    inside: dict[int, int] = {}
    kept: list[tuple[int, Group]] = []
    for g, group in enumerate(groups):
        mine = [i for i in group.events if 0 <= i < len(events) and i not in inside]
        if mine:
            inside.update(dict.fromkeys(mine, g))
            kept.append((g, group))
    members: dict[int, list[int]] = {}
    for i, g in inside.items():
        members.setdefault(g, []).append(i)
    extents = {g: (min(events[i][0] for i in m), max(events[i][1] for i in m)) for g, m in members.items()}
    spans = [*extents.values(), *(e for i, e in enumerate(events) if i not in inside)]
    spans += [open_span] if open_span else []
    axis = Axis.fit(spans, width=needed_width(spans, len(events)))
    if axis is None:
        return None
    boxes = {g: axis.extent(*extents[g]) for g, _ in kept}
    # the bars, kept within their band, and their lanes
    flat: list[tuple[float, float, int | None]] = []
    for i, (s, e) in enumerate(events):
        x, w = axis.span(s, e)
        band = inside.get(i)
        if band is not None:
            bx, bw = boxes[band]
            w = min(w, bw)
            x = min(max(x, bx), bx + bw - w)
        flat.append((x, w, band))
    if open_span:
        flat.append((*axis.span(*open_span), None))
    order = sorted(range(len(flat)), key=lambda k: (flat[k][0], k))
    lane_of = dict(zip(order, _lanes([flat[k][:2] for k in order]), strict=True))
    lanes = max(lane_of.values(), default=0) + 1
    # the labels: one row if every label fits, else two
    titles = [group.title or "(untitled)" for _, group in kept]
    whens = [span_label(group.start, group.end) for _, group in kept]
    places = [boxes[g] for g, _ in kept]
    rows = 0
    labels: list[tuple[float, int, str, str]] = []
    for rows in range(1, MAX_ROWS + 1) if kept else ():  # the fewest rows that show every label well enough
        labels, whole = _labels(places, titles, whens, rows, axis.right)
        if whole:
            break
    band_top = 2 + rows * ROW + (4 if rows else 0)
    star_y = band_top + STARS - 2
    lanes_top = band_top + STARS + 2
    band_bottom = lanes_top + lanes * LANE + (lanes - 1) * LANE_GAP + 5
    bands = []
    for (g, _), (x, w), (lx, row, title, when) in zip(kept, places, labels, strict=True):
        top = 2 + row * ROW
        bands.append(
            Band(g, x, band_top, w, band_bottom - band_top, title, when, lx, row, top + 12, top + 26, top + ROW - 3)
        )
    bars = [Bar(x, lanes_top + lane_of[k] * (LANE + LANE_GAP), w, LANE, lane_of[k], band)
            for k, (x, w, band) in enumerate(flat)]  # fmt: skip
    axis_y = band_bottom + 8
    return Layout(
        axis,
        tuple(bars[: len(events)]),
        tuple(bands),
        bars[-1] if open_span else None,
        tuple(axis.ticks()),
        lanes,
        rows,
        band_top,
        band_bottom,
        star_y,
        round((band_top + band_bottom) / 2 + 4, 1),
        axis_y,
        axis_y + 40,
    )


def overlapping(boxes: Sequence[tuple[float, float, float, float]]) -> list[tuple[int, int]]:
    """The pairs of (x, y, width, height) boxes that overlap (sharing more than an edge)."""
    out = []
    for i, (x1, y1, w1, h1) in enumerate(boxes):
        for j in range(i + 1, len(boxes)):
            x2, y2, w2, h2 = boxes[j]
            if x1 < x2 + w2 and x2 < x1 + w1 and y1 < y2 + h2 and y2 < y1 + h1:
                out.append((i, j))
    return out
