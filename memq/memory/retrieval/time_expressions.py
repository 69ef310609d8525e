"""Times a query names, as a window relative to the moment it is asked.

"yesterday", "last week", "this month", "3 days ago", "in May 2023", "May 7, 2023",
"on 7 May", "2023-05-07", "in 2022", "last Friday", "last summer"... Pure: the caller
passes ``now``. The first phrase found wins; a query naming no time gives ``None``.
Weeks start on Monday; months and seasons are the northern calendar's; everything is
in UTC.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from memq.memory.retrieval.request import TimeRange

FULL_MONTHS = {name.lower() for name in calendar.month_name if name}
MONTHS = {name.lower(): i for i, name in enumerate(calendar.month_name) if name}
MONTHS.update({name.lower(): i for i, name in enumerate(calendar.month_abbr) if name})
MONTHS["sept"] = 9
WEEKDAYS = {name.lower(): i for i, name in enumerate(calendar.day_name)}
SEASONS = {"spring": (3, 6), "summer": (6, 9), "autumn": (9, 12), "fall": (9, 12), "winter": (12, 15)}
NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "couple of": 2,
    "few": 3,
    "several": 3,
}
_MONTH = "(" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_NUM = r"(\d+|" + "|".join(sorted(NUMBERS, key=len, reverse=True)) + ")"


# Every phrase below holds a digit or one of these words: a query without any names no
# time, and is answered without running the phrases (most queries).
_TRIGGERS = re.compile(
    r"\d|\b(?:"
    + "|".join(
        sorted(
            {
                *MONTHS,
                *SEASONS,
                *WEEKDAYS,
                "today",
                "tonight",
                "yesterday",
                "morning",
                "afternoon",
                "evening",
                "night",
                "day",
                "days",
                "week",
                "weeks",
                "weekend",
                "month",
                "months",
                "year",
                "years",
            },
            key=len,
            reverse=True,
        )
    )
    + r")\b"
)


@dataclass(frozen=True)
class NamedTime:
    phrase: str
    window: TimeRange


def _day(d: datetime) -> datetime:
    return datetime(d.year, d.month, d.day, tzinfo=UTC)


def _month(year: int, month: int) -> TimeRange:
    start = datetime(year + (month - 1) // 12, (month - 1) % 12 + 1, 1, tzinfo=UTC)
    nxt = datetime(start.year + start.month // 12, start.month % 12 + 1, 1, tzinfo=UTC)
    return TimeRange(start, nxt)


def _year(year: int) -> TimeRange:
    return TimeRange(datetime(year, 1, 1, tzinfo=UTC), datetime(year + 1, 1, 1, tzinfo=UTC))


def _number(text: str) -> int:
    return int(text) if text.isdigit() else NUMBERS[text]


def _shift_months(d: datetime, months: int) -> datetime:
    index = d.year * 12 + d.month - 1 + months
    year, month = divmod(index, 12)
    return datetime(year, month + 1, min(d.day, calendar.monthrange(year, month + 1)[1]), tzinfo=UTC)


def _relative(now: datetime) -> list[tuple[str, Callable[[re.Match[str]], TimeRange]]]:
    today = _day(now)
    week = today - timedelta(days=today.weekday())
    return [
        (
            r"\btoday\b|\bthis (?:morning|afternoon|evening)\b|\btonight\b",
            lambda m: TimeRange(today, today + timedelta(days=1)),
        ),
        (r"\byesterday\b|\blast night\b", lambda m: TimeRange(today - timedelta(days=1), today)),
        (r"\bday before yesterday\b", lambda m: TimeRange(today - timedelta(days=2), today - timedelta(days=1))),
        (r"\bthis week\b", lambda m: TimeRange(week, week + timedelta(days=7))),
        (r"\blast week\b|\bprevious week\b", lambda m: TimeRange(week - timedelta(days=7), week)),
        (r"\blast weekend\b", lambda m: TimeRange(week - timedelta(days=2), week)),
        (r"\bthis month\b", lambda m: _month(today.year, today.month)),
        (
            r"\blast month\b|\bprevious month\b",
            lambda m: _month(today.year, today.month - 1) if today.month > 1 else _month(today.year - 1, 12),
        ),
        (r"\bthis year\b", lambda m: _year(today.year)),
        (r"\blast year\b|\bprevious year\b", lambda m: _year(today.year - 1)),
        (
            rf"\b(?:the )?(?:last|past) {_NUM} days?\b",
            lambda m: TimeRange(today - timedelta(days=_number(m.group(1))), today + timedelta(days=1)),
        ),
        (
            rf"\b(?:the )?(?:last|past) {_NUM} weeks?\b",
            lambda m: TimeRange(today - timedelta(weeks=_number(m.group(1))), today + timedelta(days=1)),
        ),
        (
            rf"\b(?:the )?(?:last|past) {_NUM} months?\b",
            lambda m: TimeRange(_shift_months(today, -_number(m.group(1))), today + timedelta(days=1)),
        ),
        (rf"\b{_NUM} days? ago\b", lambda m: _around(today - timedelta(days=_number(m.group(1))), 1)),
        (rf"\b{_NUM} weeks? ago\b", lambda m: _around(today - timedelta(weeks=_number(m.group(1))), 4)),
        (rf"\b{_NUM} months? ago\b", lambda m: _around(_shift_months(today, -_number(m.group(1))), 16)),
        (rf"\b{_NUM} years? ago\b", lambda m: _year(today.year - _number(m.group(1)))),
    ]


def _around(day: datetime, days: int) -> TimeRange:
    return TimeRange(day - timedelta(days=days), day + timedelta(days=days + 1))


def _most_recent_month(now: datetime, month: int) -> int:
    """The year of the latest ``month`` not after now."""
    return now.year if month <= now.month else now.year - 1


def find_time(query: str, now: datetime) -> NamedTime | None:
    """The first time the query names, as a window; None when it names none."""
    text = query.lower()
    return _scan(text, now.astimezone(UTC)) if _TRIGGERS.search(text) else None


def _scan(text: str, now: datetime) -> NamedTime | None:
    found: list[tuple[int, str, TimeRange]] = []

    def add(m: re.Match[str], window: TimeRange | None) -> None:
        if window is not None:
            found.append((m.start(), m.group(0), window))

    for m in re.finditer(r"\b(\d{4})-(\d{2})-(\d{2})\b", text):
        try:
            day = datetime(int(m.group(1)), int(m.group(2)), int(m.group(3)), tzinfo=UTC)
            add(m, TimeRange(day, day + timedelta(days=1)))
        except ValueError:
            pass
    # "May 7, 2023", "May 7th 2023", "7 May 2023", "7th of May, 2023", with or without the year
    for m in re.finditer(rf"\b{_MONTH} (\d{{1,2}})(?:st|nd|rd|th)?(?:,? (\d{{4}}))?\b", text):
        add(m, _date(MONTHS[m.group(1)], int(m.group(2)), m.group(3), now))
    for m in re.finditer(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?(?: of)? {_MONTH}(?:,? (\d{{4}}))?\b", text):
        add(m, _date(MONTHS[m.group(2)], int(m.group(1)), m.group(3), now))
    for m in re.finditer(rf"\b(?:in |during |of )?(?:early |late |mid-?)?{_MONTH}(?:,? (\d{{4}}))?\b", text):
        month = MONTHS[m.group(1)]
        if not m.group(2) and m.group(1) not in FULL_MONTHS:
            continue  # "jan", "mar", "sep" alone are names and words more often than months
        if m.group(1) in ("may", "march") and not m.group(2) and not re.match(r"(?:in|during|of) ", m.group(0)):
            continue  # the verbs "may" and "march"
        year = int(m.group(2)) if m.group(2) else _most_recent_month(now, month)
        add(m, _month(year, month))
    for m in re.finditer(r"\b(?:(last|this) )?(spring|summer|autumn|fall|winter)(?: (?:of )?(\d{4}))?\b", text):
        first, last = SEASONS[m.group(2)]
        if m.group(3):
            year = int(m.group(3))
        else:
            year = now.year if (now.month >= first or m.group(1) == "this") else now.year - 1
            if m.group(1) == "last" and now.month < last and now.month >= first:
                year -= 1
        add(m, TimeRange(_month(year, first).start, _month(year, last).start))
    for m in re.finditer(r"\b(?:in |during )(\d{4})\b", text):
        add(m, _year(int(m.group(1))))
    for m in re.finditer(r"\b(?:last |on |this past )(" + "|".join(WEEKDAYS) + r")\b", text):
        today = _day(now)
        back = (today.weekday() - WEEKDAYS[m.group(1)]) % 7 or 7
        day = today - timedelta(days=back)
        add(m, TimeRange(day, day + timedelta(days=1)))
    for pattern, make in _relative(now):
        for m in re.finditer(pattern, text):
            add(m, make(m))
    if not found:
        return None
    # Earliest in the query; at one position, the most specific (shortest window).
    found.sort(key=lambda f: (f[0], (f[2].end - f[2].start) if f[2].start and f[2].end else timedelta.max))
    return NamedTime(found[0][1], found[0][2])


def _date(month: int, day: int, year: str | None, now: datetime) -> TimeRange | None:
    try:
        if year:
            start = datetime(int(year), month, day, tzinfo=UTC)
        else:
            start = datetime(now.year, month, day, tzinfo=UTC)
            if start > now:
                start = datetime(now.year - 1, month, day, tzinfo=UTC)
    except ValueError:
        return None
    return TimeRange(start, start + timedelta(days=1))
