"""Chapters: the cues, the rules, the learned scorer's peaks, and how events are grouped."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from memq.memory.chapters.chapter import Chapter, draw_chapters
from memq.memory.chapters.cues import announces_new_topic, follows_up, greets, opens_an_aside, says_farewell
from memq.memory.chapters.detector import StreamMessage, chapter_starts, load_model, peaks, rule_starts
from memq.memory.chapters.features import NAMES, feature_rows, window_cosines
from memq.shared.episode_listing import EpisodeListing

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
GAP = timedelta(minutes=30)


def axis(k: int, dim: int = 16) -> np.ndarray:
    v = np.zeros(dim, dtype=np.float32)
    v[k] = 1.0
    return v


def stream(topics: list[int], *, texts: list[str] | None = None, minutes: Sequence[float] | None = None, conv="c"):
    texts = texts or [f"message {i}" for i in range(len(topics))]
    at = [T0 + timedelta(minutes=m) for m in (minutes or range(len(topics)))]
    rng = np.random.default_rng(0)
    return [
        StreamMessage(conv, "user" if i % 2 == 0 else "assistant", texts[i], at[i], axis(t) + 0.05 * rng.random(16))
        for i, t in enumerate(topics)
    ]


@pytest.mark.parametrize(
    "text",
    [
        "Totally unrelated, but my sourdough came out flat",
        "Anyway, switching gears. I have an interview",
        "ok so, different question: how do I",
        "On another note, the bike",
    ],
)
def test_an_announced_topic_is_recognised(text):
    assert announces_new_topic(text)


@pytest.mark.parametrize(
    "text",
    [
        "One more thing. sometimes it hangs",
        "anyway it works now",
        "so the other thing",
        "I changed the topic",
        "By the way, Jonas booked the flights",  # an aside: weighed by the scorer, no rule
    ],
)
def test_staying_on_topic_is_not_an_announcement(text):
    assert not announces_new_topic(text)


def test_wording_cues():
    assert greets("Good morning! Nerd project for the Sunday")
    assert not greets("Say hello to Gerald")
    assert follows_up("and what about the flights?")
    assert says_farewell("great, thanks a lot!")
    assert opens_an_aside("By the way, Jonas booked the flights") and not opens_an_aside("the way to go")


def test_rules_start_a_chapter_at_a_gap_a_new_conversation_and_an_announcement():
    messages = stream([0] * 8, minutes=[0, 1, 2, 40, 41, 42, 43, 44])
    messages[6] = StreamMessage("c", "user", "Totally unrelated: my plant", messages[6].at, messages[6].embedding)
    other = stream([0, 0], conv="d", minutes=[45, 46])
    assert rule_starts(messages + other, GAP) == {3, 6, 8}


def test_an_assistant_announcing_nothing_new_is_no_rule():
    messages = stream([0] * 4)
    messages[1] = StreamMessage("c", "assistant", "Unrelated: the lock is reentrant", messages[1].at, axis(0))
    assert rule_starts(messages, GAP) == set()


def test_peaks_keep_their_distance_from_each_other_and_from_rule_starts():
    p = np.array([0, 0.9, 0.8, 0.1, 0.1, 0.7, 0.6, 0.1, 0.1, 0.95, 0.1])
    assert peaks(p, 0.5, 4, set()) == {1, 5, 9}
    assert peaks(p, 0.5, 4, {8}) == {1}  # 5 would be 3 from 8, 9 is 1 from it


def test_window_cosines_drop_where_the_meaning_shifts():
    vectors = np.stack([axis(0)] * 6 + [axis(1)] * 6)
    s = window_cosines(vectors, 3)
    assert s[0] == 1.0 and s[6] == pytest.approx(0.0) and s[3] == pytest.approx(1.0)


def test_feature_rows_have_one_row_per_possible_start_in_the_order_of_names():
    messages = stream([0, 0, 0, 1, 1, 1])
    rows = feature_rows(
        [m.content for m in messages], [m.role for m in messages], np.stack([m.embedding for m in messages])
    )
    assert rows.shape == (5, len(NAMES))
    assert feature_rows(["one"], ["user"], np.zeros((1, 4))).shape == (0, len(NAMES))


def test_the_shipped_scorer_loads_and_finds_a_greeted_new_topic():
    model = load_model()
    assert model.features == "chapter" and 0 < model.high < 1
    topics = [0] * 12 + [1] * 12
    texts = (
        [f"more about the garden beds, part {i}" for i in range(12)]
        + ["hi! how are you? I need help with my tax return"]
        + [f"the tax return, item {i}" for i in range(11)]
    )
    assert 12 in chapter_starts(stream(topics, texts=texts), model, gap=GAP, min_messages=4)


def _episode(i: int, first: int, last: int, title: str, source: str = "extractive") -> EpisodeListing:
    return EpisodeListing(
        f"00000000-0000-0000-0000-{i:012d}",
        title,
        "summary",
        T0 + timedelta(minutes=first),
        T0 + timedelta(minutes=last),
        last - first + 1,
        summary_source=source,
    )


def _with_episodes(messages, spans, episodes):
    out = []
    for (first, last), e in zip(spans, episodes, strict=True):
        for i in range(first, last + 1):
            m = messages[i]
            out.append(StreamMessage(m.conversation_id, m.role, m.content, m.at, m.embedding, e.id))
    return out


def test_events_are_grouped_whole_into_chapters_by_where_most_of_their_messages_are():
    # a time gap before message 9; event 2 (8..11) has most of its messages after it
    minutes = [0, 1, 2, 3, 4, 5, 6, 7, 8, 60, 61, 62, 63, 64]
    spans = [(0, 2), (3, 7), (8, 11), (12, 13)]
    episodes = [_episode(k, minutes[a], minutes[b], f"event {k}") for k, (a, b) in enumerate(spans)]
    messages = _with_episodes(stream([0] * 14, minutes=minutes), spans, episodes)
    chapters = draw_chapters(episodes, messages, load_model(), gap=GAP, min_messages=4)
    groups = [c.episode_ids for c in chapters]
    assert groups == [(episodes[0].id, episodes[1].id), (episodes[2].id, episodes[3].id)]
    assert chapters[0].start_at == T0 and chapters[1].start_at == T0 + timedelta(minutes=60)
    assert chapters[0].id == episodes[0].id and chapters[0].message_count == 9


def test_a_chapter_of_one_event_keeps_its_title_and_an_llm_title_is_reused():
    minutes = [0, 1, 2, 60, 61, 62, 63, 64, 65]
    spans = [(0, 2), (3, 5), (6, 8)]
    episodes = [
        _episode(0, 0, 2, "Garden beds"),
        _episode(1, 60, 62, "Tax return basics", "llm"),
        _episode(2, 63, 65, "Tax return deductions and receipts", "llm"),
    ]
    messages = _with_episodes(stream([0] * 9, minutes=minutes), spans, episodes)
    first, second = draw_chapters(episodes, messages, load_model(), gap=GAP, min_messages=4)
    assert (first.title, first.title_source) == ("Garden beds", "episode")
    assert second.title_source == "llm" and second.title in {e.title for e in episodes[1:]}


def test_chapters_round_trip_through_json():
    c = Chapter("id", "conv", "Lisbon trip: flights", "extractive", T0, T0 + GAP, 12, ("a", "b"), ("web_search",))
    assert Chapter.from_json(c.to_json()) == c


def test_no_messages_no_chapters():
    assert draw_chapters([], [], load_model(), gap=GAP, min_messages=4) == []
