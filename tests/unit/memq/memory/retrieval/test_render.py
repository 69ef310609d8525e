"""What an LLM reads (markdown) and what a user inspects (JSON with every score): each
memory says what it is, when it happened in absolute and relative time, and why it ranked."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from memq.memory.retrieval.model import EpisodeHit, MessageView
from memq.memory.retrieval.render import (
    GAP,
    episode_block,
    gap_count,
    hit_record,
    markdown,
    relative,
    short_title,
    sitting_header,
    sitting_lines,
    when,
)

NOW = datetime(2023, 5, 24, 15, 30, tzinfo=UTC)
START = datetime(2023, 5, 7, 14, 5, tzinfo=UTC)


def hit(surprise: float = 0.2, messages: int = 6, **kw) -> EpisodeHit:
    views = [
        MessageView(
            seq=10 + i,
            role="user" if i % 2 == 0 else "assistant",
            speaker="Ana" if i == 0 else None,
            content=f"message {i}  about\nthe   garden",
            ts=START + timedelta(minutes=i),
            relevance=i / 10,
            ranks={"vector": i + 1},
        )
        for i in range(messages)
    ]
    fields: dict[str, Any] = {
        "id": "e-1",
        "conversation_id": "c-1",
        "title": "Planting tomatoes in raised beds",
        "summary": "They planned the beds.",
        "start_at": START,
        "end_at": START + timedelta(minutes=40),
        "surprise": surprise,
        "message_count": messages,
        "first_seq": 10,
        "last_seq": 10 + messages - 1,
        "summary_source": "extractive",
        "ranks": {"episode_vector": 3, "message_lexical": 1},
        "rrf": 0.0325,
        "retrievability": 0.8123456,
        "time_boost": 1.5,
        "final": 0.0396,
        "rank": 2,
        "messages": views,
    }
    fields.update(kw)
    return EpisodeHit(**fields)


@pytest.mark.parametrize(
    "moment, says",
    [
        (NOW - timedelta(hours=1), "today"),
        (NOW - timedelta(days=1), "yesterday"),
        (NOW - timedelta(days=3), "3 days ago"),
        (NOW - timedelta(days=17), "2 weeks ago"),
        (NOW - timedelta(days=95), "3 months ago"),
        (NOW - timedelta(days=800), "2 years ago"),
        (NOW + timedelta(days=1), "later than now"),
    ],
)
def test_relative_time(moment, says):
    assert relative(moment, NOW) == says


ABSOLUTE = re.compile(r"^7 May 2023,? 14:05 ?– ?(8 May )?(14:45|02:05) UTC \(2 weeks ago\)$")


def test_when_gives_absolute_and_relative_time():
    assert ABSOLUTE.match(when(hit(), NOW)), when(hit(), NOW)  # day, start–end, UTC, relative
    overnight = when(hit(end_at=START + timedelta(hours=12)), NOW)
    assert ABSOLUTE.match(overnight) and "8 May 02:05" in overnight, overnight  # the end's day when it differs


def test_times_in_another_zone_are_shown_in_utc():
    """A database session in another TimeZone (or a caller's now in one) gives the same
    instants in another zone: the text says UTC, so it shows UTC."""
    berlin = timezone(timedelta(hours=2))
    local = hit(start_at=START.astimezone(berlin), end_at=(START + timedelta(minutes=40)).astimezone(berlin))
    assert when(local, NOW.astimezone(berlin)) == when(hit(), NOW)
    late = hit(start_at=datetime(2023, 5, 7, 23, 30, tzinfo=UTC), end_at=datetime(2023, 5, 7, 23, 50, tzinfo=UTC))
    next_day = datetime(2023, 5, 8, 12, 0, tzinfo=UTC)  # yesterday's episode: its time of day is shown
    header = sitting_header([late], next_day, key_moment_surprise=0.7, title_words=8)
    assert (
        sitting_header(
            [hit(start_at=late.start_at.astimezone(berlin), end_at=late.end_at.astimezone(berlin))],
            next_day.astimezone(berlin),
            key_moment_surprise=0.7,
            title_words=8,
        )
        == header
    )
    assert header.startswith("### 7 May 2023 23:30 UTC")  # not 8 May 01:30


def test_markdown_block_has_title_time_and_summary():
    block = episode_block(hit(), [], now=NOW, summary="They planned the beds.", key_moment_surprise=0.7)
    lines = block.splitlines()
    assert lines[0] == "### Planting tomatoes in raised beds"
    assert lines[1] == when(h := hit(), NOW) and ABSOLUTE.match(lines[1]) and h.title in lines[0]
    assert lines[2] == "Summary: They planned the beds."
    assert len(lines) == 3 and "key moment" not in block


@pytest.mark.parametrize("surprise, marked", [(0.69, False), (0.7, True), (0.95, True)])
def test_a_surprising_episode_is_marked_as_a_key_moment(surprise, marked):
    block = episode_block(hit(surprise=surprise), [], now=NOW, summary="s", key_moment_surprise=0.7)
    assert ("· key moment" in block.splitlines()[1]) is marked


def test_shown_messages_are_in_their_order_with_markers_for_what_is_left_out():
    h = hit(messages=8)
    shown = [h.messages[5], h.messages[2]]  # chosen by relevance, given out of order
    lines = episode_block(h, shown, now=NOW, summary=None, key_moment_surprise=0.7).splitlines()
    assert lines[1:] == [
        GAP,
        "- user: message 2 about the garden",
        GAP,
        "- assistant: message 5 about the garden",
        GAP,
    ]
    assert gap_count([12, 15], 10, 17) == 3 == lines.count(GAP)


def test_with_messages_one_header_line_says_when_and_a_short_title():
    h = hit(title="Planting tomatoes in raised beds after the long and rainy spring", surprise=0.8)
    head = episode_block(h, h.messages[:1], now=NOW, summary=None, key_moment_surprise=0.7).splitlines()[0]
    assert head == "### 7 May 2023 (2 weeks ago) · key moment · Planting tomatoes in raised beds after the long …"
    assert short_title("a b c", 8) == "a b c" and short_title("a b c d", 2) == "a b …"


def test_the_time_of_day_is_shown_for_an_episode_of_today_or_yesterday_only():
    def head(days_before: float) -> str:
        start = NOW - timedelta(days=days_before, hours=1)
        h = hit(start_at=start, end_at=start + timedelta(minutes=40))
        return episode_block(h, h.messages[:1], now=NOW, summary=None, key_moment_surprise=0.7).splitlines()[0]

    assert re.match(r"### \d+ \w+ \d{4} \d\d:\d\d UTC \(today\) · ", head(0))
    assert re.match(r"### \d+ \w+ \d{4} \d\d:\d\d UTC \(yesterday\) · ", head(1))
    assert re.match(r"### \d+ \w+ \d{4} \(2 days ago\) · ", head(2))


def test_a_sittings_episodes_read_as_one_run_of_talk_under_one_header():
    """Episodes of one sitting: one header (the first's time, the best ranked's title, a
    key-moment mark when any is one), markers over the whole span, none at the cut."""
    first = hit(messages=4)  # seqs 10-13
    later = START + timedelta(minutes=41)
    second = hit(id="e-2", title="Watering schedule", start_at=later, end_at=later + timedelta(minutes=9), surprise=0.9)
    second.first_seq, second.last_seq = 14, 17
    second.messages = [MessageView(14 + i, "user", None, f"water {i}", later) for i in range(4)]
    lines = sitting_lines(
        [second, first],
        [second.messages[1], first.messages[3], second.messages[0]],
        now=NOW,
        summary=None,
        key_moment_surprise=0.7,
    )
    assert lines == [
        "### 7 May 2023 (2 weeks ago) · key moment · Watering schedule",
        GAP,
        "- assistant: message 3 about the garden",
        "- user: water 0",
        "- user: water 1",
        GAP,
    ]
    assert gap_count([13, 14, 15], 10, 17) == 2
    assert sitting_lines([first], first.messages[:1], now=NOW, summary=None, key_moment_surprise=0.7) == (
        episode_block(first, first.messages[:1], now=NOW, summary=None, key_moment_surprise=0.7).splitlines()
    )


def test_adjacent_messages_need_no_marker_between_them():
    h = hit(messages=6)
    lines = episode_block(h, h.messages[1:3], now=NOW, summary=None, key_moment_surprise=0.7).splitlines()
    assert lines[1:] == [GAP, "- assistant: message 1 about the garden", "- user: message 2 about the garden", GAP]
    assert gap_count([], 10, 15) == 1 and gap_count([10, 11, 12], 10, 12) == 0 and gap_count([12], 10, 12) == 1


def test_the_speaker_name_is_shown_when_the_producer_gave_one():
    h = hit()
    assert "- Ana: message 0 about the garden" in episode_block(
        h, h.messages[:1], now=NOW, summary=None, key_moment_surprise=0.7
    )


def test_every_message_shown_means_no_marker():
    h = hit(messages=3)
    assert GAP not in episode_block(h, h.messages, now=NOW, summary=None, key_moment_surprise=0.7).splitlines()


def test_nothing_found_says_so_with_the_query():
    assert markdown([], "tomatoes") == "No memories match “tomatoes”."
    assert markdown(["a", "b"], "q") == "a\n\nb"


def test_hit_record_has_every_score_and_is_json_ready():
    h = hit()
    record = hit_record(h, [h.messages[4], h.messages[1]], summary_shown=True)
    assert record["scores"] == {
        "lexical_rank": None,
        "vector_rank": 3,
        "message_lexical_rank": 1,
        "message_vector_rank": None,
        "rrf": 0.0325,
        "retrievability": 0.8123,
        "time_boost": 1.5,
        "final": 0.0396,
    }
    assert (record["id"], record["conversation_id"], record["rank"], record["title"]) == (
        "e-1",
        "c-1",
        2,
        "Planting tomatoes in raised beds",
    )
    assert record["start_at"] == "2023-05-07T14:05:00+00:00" and record["summary_shown"] is True
    assert [m["seq"] for m in record["messages"]] == [11, 14]
    assert record["messages"][0] == {
        "seq": 11,
        "role": "assistant",
        "speaker": None,
        "content": "message 1  about\nthe   garden",
        "timestamp": "2023-05-07T14:06:00+00:00",
        "relevance": 0.1,
        "vector_rank": 2,
        "lexical_rank": None,
        "speaker_named": False,
        "excerpt": False,
    }
    assert json.loads(json.dumps(record)) == record
