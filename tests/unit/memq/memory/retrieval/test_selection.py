"""Selection fits the ranked episodes into the caller's token budget: the budget holds on
exactly the returned text (tiktoken), detail levels decide which episodes may show
messages, and messages are chosen by priority (never a blind prefix) with markers for
the rest. Headers and messages compete for the budget by priority: a header at its
episode's final score, a message at its ``relevance`` (the service puts both on one scale,
a message never below its own episode's header). A message that asks comes with its
answer, or its answer's first sentences, or not at all."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from memq.memory.retrieval.model import EpisodeHit, MessageView
from memq.memory.retrieval.render import GAP, episode_block, markdown, message_line
from memq.memory.retrieval.selection import SelectionParams, answer_to, select
from memq.shared.tokens import count_tokens

NOW = datetime(2023, 5, 24, 15, 30, tzinfo=UTC)
WORDS = [
    "tomato",
    "garden",
    "bed",
    "seed",
    "water",
    "rain",
    "sun",
    "basil",
    "compost",
    "spring",
    "plan",
    "budget",
    "trip",
    "Lisbon",
    "flight",
    "hotel",
]


def text(n: int, salt: int = 0) -> str:
    return " ".join(WORDS[(i * 7 + salt) % len(WORDS)] for i in range(n))


def episode(
    rank: int,
    messages: int = 10,
    *,
    surprise: float = 0.1,
    own=None,
    words: int = 12,
    summary_words: int = 30,
    final: float | None = None,
) -> EpisodeHit:
    """An episode as the service hands it over: ``final`` falls with rank, and each
    message's priority is the episode's score plus its own relevance (``own(i)``)."""
    start = NOW - timedelta(days=rank)
    final = 1.0 / (60 + rank) if final is None else final
    own = own or (lambda i: 0.01 / (i + 1))
    views = [
        MessageView(
            seq=i,
            role="user" if i % 2 == 0 else "assistant",
            speaker=None,
            content=f"m{rank}.{i} " + text(words, i),
            ts=start + timedelta(minutes=i),
            relevance=final + own(i),
        )
        for i in range(messages)
    ]
    return EpisodeHit(
        id=f"e{rank}",
        conversation_id="c",
        title=f"Episode {rank} about {text(4, rank)}",
        summary=text(summary_words, rank),
        start_at=start,
        end_at=start + timedelta(minutes=messages),
        surprise=surprise,
        message_count=messages,
        first_seq=0,
        last_seq=messages - 1,
        summary_source="extractive",
        rank=rank,
        final=final,
        messages=views,
    )


def run(hits, detail: str, max_tokens: int = 4000, query: str = "tomato", **kw):
    """``select`` with explicit parameters (the defaults are the product's to tune)."""
    params = {
        "low_messages": 3,
        "auto_rank": 2,
        "auto_message_rank": kw.get("auto_rank", 2),
        "key_moment_surprise": 0.7,
        "summary_tokens_with_messages": 40,
    } | kw
    selection = select(hits, SelectionParams(detail=detail, max_tokens=max_tokens, **params), NOW, count_tokens, query)
    assert selection.tokens == count_tokens(selection.text)
    return selection.chosen, selection.text


def shown(chosen) -> dict[str, list[int]]:
    return {s.hit.id: sorted(m.seq for m in s.shown) for s in chosen}


# --- the budget ------------------------------------------------------------------

_free_text = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=300)
_message = st.tuples(
    st.integers(0, 10_000), _free_text, st.floats(0, 0.2), st.sampled_from(["user", "assistant", "tool"])
)


@st.composite
def hit_lists(draw) -> list[EpisodeHit]:
    hits = []
    finals = sorted(draw(st.lists(st.floats(0, 0.1), max_size=6)), reverse=True)
    for rank, final in enumerate(finals, start=1):
        raw = draw(st.lists(_message, max_size=12, unique_by=lambda m: m[0]))
        start = NOW - timedelta(days=draw(st.integers(-2, 4000)), minutes=draw(st.integers(0, 1440)))
        leg_ranks = st.dictionaries(st.sampled_from(["vector", "lexical"]), st.integers(1, 40), max_size=2)
        views = [
            MessageView(seq=s, role=r, speaker=None, content=c, ts=start, relevance=rel, ranks=draw(leg_ranks))
            for s, c, rel, r in sorted(raw)
        ]
        hits.append(
            EpisodeHit(
                id=f"e{rank}",
                conversation_id="c",
                title=draw(st.text(max_size=120)),
                summary=draw(_free_text),
                start_at=start,
                end_at=start + timedelta(minutes=draw(st.integers(0, 3000))),
                final=final,
                surprise=draw(st.floats(0, 1)),
                message_count=len(views),
                summary_source="extractive",
                rank=rank,
                messages=views,
                first_seq=views[0].seq if views else 1,
                last_seq=views[-1].seq + draw(st.integers(0, 3)) if views else 1,
            )
        )
    if draw(st.booleans()):  # one sitting: each episode begins with the message after the last one's end
        after, at = 0, NOW - timedelta(days=draw(st.integers(0, 400)))
        for h in sorted(hits, key=lambda _: draw(st.integers(0, 5))):
            shift = after - h.first_seq
            h.messages = [replace(m, seq=m.seq + shift) for m in h.messages]
            h.first_seq, h.last_seq = after, h.last_seq + shift
            h.end_at, h.start_at = at + (h.end_at - h.start_at), at
            after, at = h.last_seq + 1, h.end_at + timedelta(minutes=draw(st.integers(0, 20)))
    return hits


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    hits=hit_lists(),
    detail=st.sampled_from(["none", "low", "high", "auto"]),
    max_tokens=st.integers(50, 4000),
    query=st.text(min_size=1, max_size=2000),
    low=st.integers(1, 5),
    summary_tokens=st.integers(0, 80),
    sitting_gap=st.sampled_from([None, timedelta(minutes=15)]),
    long_tokens=st.sampled_from([0, 15, 60]),
    excerpt_tokens=st.integers(10, 40),
)
@example(
    hits=[],
    detail="auto",
    max_tokens=50,
    query="tomato " * 300,
    low=3,
    summary_tokens=40,
    sitting_gap=None,
    long_tokens=0,
    excerpt_tokens=40,
)
def test_the_budget_is_never_exceeded(
    hits, detail, max_tokens, query, low, summary_tokens, sitting_gap, long_tokens, excerpt_tokens
):
    chosen, out = run(
        hits,
        detail,
        max_tokens,
        query,
        low_messages=low,
        summary_tokens_with_messages=summary_tokens,
        sitting_gap=sitting_gap,
        long_tokens=long_tokens,
        excerpt_tokens=excerpt_tokens,
    )
    assert count_tokens(out) <= max_tokens
    for s in chosen:  # every message chosen is in the text, each once, whole or as its excerpt
        assert all(message_line(m) in out for m in s.shown)
        assert len({m.seq for m in s.shown}) == len(s.shown)
        whole = {m.seq: m.content for m in s.hit.messages}
        assert all(m.excerpt or m.content == whole[m.seq] for m in s.shown)
    ranks = [s.hit.rank for s in chosen]
    assert ranks == sorted(set(ranks))  # shown in rank order, each once
    allowed = {"none": 0, "low": low}
    for s in chosen:
        assert {m.seq for m in s.shown} <= {m.seq for m in s.hit.messages}
        cap = allowed.get(detail, len(s.hit.messages))
        best_match = any(0 < r <= 2 for m in s.hit.messages for r in m.ranks.values())
        if detail == "auto" and not (s.hit.rank <= 2 or s.hit.surprise >= 0.7 or best_match):
            cap = 0
        assert len(s.shown) <= cap
    if detail in ("high", "auto"):  # a question shown has its answer shown, when its episode holds it
        for s in chosen:
            at = {m.seq: m for m in s.hit.messages}
            seqs = {m.seq for m in s.shown}
            answers = [(m, answer_to(at[m.seq], at.get)) for m in s.shown]
            brought = {a.seq for _, a in answers if a is not None}  # an answer that asks comes for its question
            assert all(a.seq in seqs for m, a in answers if a is not None and m.seq not in brought)


_LONG_ANSWER = (
    "A relational database like PostgreSQL is the defensible default. You need transactions, unique "
    "constraints and strong consistency. At 2,000 requests per second peak, a well-tuned primary with "
    "read replicas handles it. Mention sharding by merchant id as the scale-out path."
)
_TURNS = [
    "what db would you pick for this?",
    "Shall we start with the framework?",
    "yes",
    "",
    "PostgreSQL.",
    _LONG_ANSWER,
    " ".join([_LONG_ANSWER] * 4),
    "I moved here four years ago. Who supports you?",
    "do I need double-entry? and what about the outbox?",
]


@st.composite
def dialogues(draw) -> list[EpisodeHit]:
    """Episodes of one sitting or apart, their messages questions and answers of every length."""
    hits = []
    after, at = 0, NOW - timedelta(days=draw(st.integers(0, 400)))
    for rank in range(1, draw(st.integers(1, 4)) + 1):
        size = draw(st.integers(1, 8))
        views = [
            MessageView(
                seq=after + i,
                role=draw(st.sampled_from(["user", "assistant", "tool"])),
                speaker=None,
                content=draw(st.sampled_from(_TURNS)),
                ts=at,
                relevance=draw(st.floats(0, 0.2)),
                ranks=draw(st.dictionaries(st.sampled_from(["vector", "lexical"]), st.integers(1, 40), max_size=2)),
            )
            for i in range(size)
            if draw(st.integers(0, 5))  # now and then a message not at hand
        ]
        hits.append(
            EpisodeHit(
                id=f"e{rank}",
                conversation_id="c",
                title=f"Episode {rank}",
                summary=text(20, rank),
                start_at=at,
                end_at=at + timedelta(minutes=size),
                final=0.1 / rank,
                surprise=0.1,
                message_count=size,
                summary_source="extractive",
                rank=rank,
                messages=views,
                first_seq=after,
                last_seq=after + size - 1,
            )
        )
        after += size + draw(st.integers(0, 1))  # the next one begins right after, or not
        at += timedelta(minutes=size + draw(st.integers(0, 20)))
    return hits


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    hits=dialogues(),
    detail=st.sampled_from(["low", "high", "auto"]),
    max_tokens=st.integers(50, 700),
    sitting_gap=st.sampled_from([None, timedelta(minutes=15)]),
    long_tokens=st.sampled_from([0, 30, 150]),
    excerpt_tokens=st.integers(10, 40),
)
def test_questions_come_with_their_answers_within_the_budget(
    hits, detail, max_tokens, sitting_gap, long_tokens, excerpt_tokens
):
    chosen, out = run(
        hits,
        detail,
        max_tokens,
        "which database",
        sitting_gap=sitting_gap,
        long_tokens=long_tokens,
        excerpt_tokens=excerpt_tokens,
        low_messages=2,
    )
    assert count_tokens(out) <= max_tokens
    shown_at = {(s.hit.id, m.seq) for s in chosen for m in s.shown}
    for s in chosen:
        assert len({m.seq for m in s.shown}) == len(s.shown)
        if detail == "low":
            assert len(s.shown) <= 2
            continue
        at = {m.seq: m for m in s.hit.messages}
        answers = [(m, answer_to(at[m.seq], at.get)) for m in s.shown]
        brought = {a.seq for _, a in answers if a is not None}
        for m, a in answers:
            if a is not None and m.seq not in brought:
                assert (s.hit.id, a.seq) in shown_at


@pytest.mark.parametrize("max_tokens", [50, 51, 57, 64, 80, 100, 128, 150, 200, 333, 500, 777, 1000, 1500, 2500, 4000])
@pytest.mark.parametrize("detail", ["none", "low", "high", "auto"])
def test_the_budget_holds_for_many_long_episodes(detail, max_tokens):
    hits = [
        episode(rank, messages=30, words=25, summary_words=80, surprise=0.9 if rank == 5 else 0.1)
        for rank in range(1, 11)
    ]
    chosen, out = run(hits, detail, max_tokens)
    assert count_tokens(out) <= max_tokens
    assert chosen, "some memory always fits within 50 tokens"
    assert out.startswith("### ")


def test_a_long_query_with_nothing_found_stays_within_budget():
    chosen, out = run([], "auto", 50, query="tomato " * 300)
    assert chosen == [] and count_tokens(out) <= 50 and out.startswith("No memories match")
    assert run([], "auto", 50)[1] == markdown([], "tomato")


@pytest.mark.parametrize("detail", ["none", "low", "high", "auto"])
def test_with_a_small_budget_the_best_memory_is_still_returned(detail):
    # 60 messages rank ahead of every header here: none fits, the headers still must be tried
    hits = [episode(1, messages=30, words=40, summary_words=120), episode(2, messages=30, words=40, summary_words=120)]
    for budget in (50, 64, 100):
        chosen, out = run(hits, detail, budget)
        assert [s.hit.id for s in chosen][:1] == ["e1"], (detail, budget)
        assert "Episode 1 about" in out.splitlines()[0] and count_tokens(out) <= budget


def test_more_budget_never_shows_less():
    hits = [episode(rank) for rank in range(1, 6)]
    sizes = []
    for budget in (100, 300, 900, 4000):
        chosen, _ = run(hits, "high", budget)
        sizes.append(sum(len(s.shown) for s in chosen) + len(chosen))
    assert sizes == sorted(sizes) and sizes[0] < sizes[-1]


# --- detail levels ---------------------------------------------------------------


def test_none_shows_title_time_and_whole_summary_in_rank_order_and_no_messages():
    hits = [episode(rank) for rank in range(1, 6)]
    chosen, out = run(hits, "none")
    assert shown(chosen) == {f"e{r}": [] for r in range(1, 6)}
    assert f"Summary: {hits[0].summary}" in out and "- user:" not in out and GAP not in out.splitlines()
    header_only = count_tokens(run(hits[:2], "none")[1])
    assert [s.hit.id for s in run(hits, "none", header_only + 5)[0]] == ["e1", "e2"]  # headers by rank


def test_low_shows_the_few_most_relevant_messages():
    hits = [episode(1, own=lambda i: i / 1000), episode(2, own=lambda i: 0.05 if i in (3, 6, 8) else 0.0)]
    chosen, out = run(hits, "low")
    assert shown(chosen) == {"e1": [7, 8, 9], "e2": [3, 6, 8]}  # not the first three
    block = out.split("\n\n")[1].splitlines()
    assert block[0].startswith("### ") and block[1].startswith("Summary: ")
    assert block[2:] == [
        GAP,
        f"- assistant: {hits[1].messages[3].content}",
        GAP,
        f"- user: {hits[1].messages[6].content}",
        GAP,
        f"- user: {hits[1].messages[8].content}",
        GAP,
    ]


def test_low_takes_its_count_from_the_parameters():
    assert shown(run([episode(1)], "low", low_messages=5)[0]) == {"e1": [0, 1, 2, 3, 4]}


def test_high_shows_every_message_when_the_budget_allows():
    chosen, out = run([episode(1), episode(2)], "high")
    assert shown(chosen) == {"e1": list(range(10)), "e2": list(range(10))}
    assert GAP not in out.splitlines()


def test_auto_is_high_for_the_top_ranks_and_key_moments_and_none_for_the_rest():
    hits = [episode(1), episode(2), episode(3), episode(4, surprise=0.7), episode(5, surprise=0.69)]
    chosen, out = run(hits, "auto", auto_rank=2, key_moment_surprise=0.7)
    assert shown(chosen) == {"e1": list(range(10)), "e2": list(range(10)), "e3": [], "e4": list(range(10)), "e5": []}
    assert "· key moment" in out.split("\n\n")[3].splitlines()[0]


def test_auto_opens_the_episode_holding_one_of_the_best_message_matches():
    # re-ranking (FSRS, time) put the episode whose message matched best at rank 4: its
    # message is shown; an episode whose best message ranked 3rd stays a summary
    holder, other = episode(4), episode(5)
    holder.messages[6] = replace(holder.messages[6], ranks={"vector": 1, "lexical": 4})
    other.messages[2] = replace(other.messages[2], ranks={"lexical": 3})
    chosen, _ = run([episode(1), episode(2), episode(3), holder, other], "auto", auto_rank=2)
    assert shown(chosen)["e4"] and 6 in shown(chosen)["e4"]
    assert shown(chosen)["e3"] == [] and shown(chosen)["e5"] == []


def test_auto_by_default_opens_every_episode_a_message_leg_found():
    # auto_message_rank 0 (the default): any message rank opens its episode; an episode
    # found by its title or summary alone (no message ranked) stays a summary
    found, alone = episode(4), episode(5)
    found.messages[2] = replace(found.messages[2], ranks={"lexical": 17})
    chosen, _ = run([episode(1), episode(2), episode(3), found, alone], "auto", auto_rank=2, auto_message_rank=0)
    assert 2 in shown(chosen)["e4"]
    assert shown(chosen)["e3"] == [] and shown(chosen)["e5"] == []


def test_summary_is_shortened_above_messages_and_whole_without_them():
    hits = [episode(1, summary_words=200), episode(3, summary_words=200)]
    chosen, _ = run(hits, "auto", auto_rank=1, summary_tokens_with_messages=40)
    with_messages, without = chosen
    assert with_messages.summary.endswith(" …") and count_tokens(with_messages.summary) <= 40
    assert without.summary == hits[1].summary
    chosen, _ = run(hits, "auto", auto_rank=1, summary_tokens_with_messages=0)
    assert chosen[0].summary is None and chosen[0].shown


# --- what wins when the budget is tight -------------------------------------------


def test_the_most_relevant_messages_win_under_a_tight_budget():
    hit = episode(1, messages=20, own=lambda i: 0.05 if i in (4, 15) else 0.0001 * i, summary_words=5)

    def cost(*seqs):
        return count_tokens(
            episode_block(hit, [hit.messages[i] for i in seqs], now=NOW, summary=hit.summary, key_moment_surprise=0.7)
        )

    assert shown(run([hit], "high", cost(4) + 5)[0]) == {"e1": [4]}  # room for one message: the best
    assert shown(run([hit], "high", cost(4, 15) + 5)[0]) == {"e1": [4, 15]}  # two: the two best, not 0 and 1


def test_a_lower_ranked_episodes_best_message_beats_a_higher_ranked_ones_weak_message():
    top = episode(1, messages=20, own=lambda i: 0.0, summary_words=5)
    second = episode(2, messages=20, own=lambda i: 0.2 if i == 7 else 0.0, summary_words=5)
    best = second.messages[7]
    room = count_tokens(episode_block(second, [best], now=NOW, summary=second.summary, key_moment_surprise=0.7))
    chosen, _ = run([top, second], "high", room + 5)  # room for that block and no other
    assert 7 in shown(chosen)["e2"]
    assert shown(chosen).get("e1", []) == []  # none of the top episode's weak messages got in


def test_a_message_brings_its_episodes_header():
    hits = [episode(1, summary_words=5), episode(2, summary_words=5, own=lambda i: 0.5 if i == 0 else 0.0)]
    chosen, out = run(hits, "high", 90)
    assert 0 in shown(chosen)["e2"]  # the best item of all
    assert [line for line in out.splitlines() if line.startswith("### ")][-1].endswith(
        f"· {hits[1].title}"
    )  # with its header


# --- a sitting's episodes under one header ------------------------------------------

FIFTEEN = timedelta(minutes=15)


def sitting(*sizes: int, pause: timedelta = timedelta(0), conversation: str = "c") -> list[EpisodeHit]:
    """Episodes of ``sizes`` messages, one after another in one conversation: each begins
    with the message after the last one's end, ``pause`` later. Ranked in that order."""
    hits, after, at = [], 0, NOW - timedelta(days=3)
    for rank, size in enumerate(sizes, start=1):
        h = episode(rank, messages=size, summary_words=5)
        h.id, h.conversation_id = f"{conversation}{rank}", conversation
        h.messages = [replace(m, seq=m.seq + after, ts=at + timedelta(minutes=m.seq)) for m in h.messages]
        h.first_seq, h.last_seq, h.start_at, h.end_at = after, after + size - 1, at, at + timedelta(minutes=size)
        hits.append(h)
        after, at = after + size, h.end_at + pause
    return hits


def headers(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith("### ")]


def test_a_sittings_episodes_show_their_messages_under_one_header():
    hits = sitting(4, 4)
    chosen, out = run(hits, "high", sitting_gap=FIFTEEN, summary_tokens_with_messages=0)
    assert shown(chosen) == {"c1": [0, 1, 2, 3], "c2": [4, 5, 6, 7]}  # each episode's own, as data
    assert headers(out) == [headers(run(hits[:1], "high", summary_tokens_with_messages=0)[1])[0]]  # the first's
    assert GAP not in out.splitlines()  # one run of talk: nothing left out between them
    assert [line for line in out.splitlines() if line.startswith("- ")] == [
        message_line(m) for h in hits for m in h.messages
    ]
    separate = run(hits, "high", summary_tokens_with_messages=0)[1]  # MEMQ_SITTING_BLOCKS off
    assert len(headers(separate)) == 2


def test_the_block_is_titled_by_its_best_ranked_episode_and_dated_by_its_first():
    first, second = sitting(4, 4)
    first.rank, second.rank = 2, 1
    first.final, second.final = second.final, first.final
    _, out = run([second, first], "high", sitting_gap=FIFTEEN, summary_tokens_with_messages=40)
    assert len(headers(out)) == 1
    assert headers(out)[0].startswith(f"### {first.start_at.day} May 2023") and headers(out)[0].endswith(
        f"· {second.title}"
    )
    assert f"Summary: {second.summary}" in out and f"Summary: {first.summary}" not in out


def test_a_message_of_a_sittings_next_episode_costs_no_second_header():
    hits = sitting(6, 6)
    for h in hits:  # messages 3 to 8 matter most, across the cut between the episodes
        h.messages = [replace(m, relevance=m.relevance + (0.5 if 3 <= m.seq <= 8 else 0.0)) for m in h.messages]
    one_each = run(hits, "high", 10_000, sitting_gap=FIFTEEN, summary_tokens_with_messages=0)[1]
    wanted = [message_line(m) for h in hits for m in h.messages if 3 <= m.seq <= 8]
    assert all(line in one_each for line in wanted)
    # room for one header, the six and the markers around them, as selection counts while
    # filling (line by line, one token per line break, and the block separator)
    lines = [headers(one_each)[0], GAP, *wanted, GAP]
    budget = sum(count_tokens(line) + 1 for line in lines) - 1 + count_tokens("\n\n")
    together, out = run(hits, "high", budget, sitting_gap=FIFTEEN, summary_tokens_with_messages=0)
    assert shown(together) == {"c1": [3, 4, 5], "c2": [6, 7, 8]} and len(headers(out)) == 1
    apart, out = run(hits, "high", budget, summary_tokens_with_messages=0)
    assert sum(len(s.shown) for s in apart) < 6 and len(headers(out)) == 2  # a second header took a message's room


@pytest.mark.parametrize(
    "hits",
    [
        sitting(4, 4, pause=timedelta(minutes=16)),  # a pause longer than the time gap: two sittings
        [*sitting(4, conversation="a"), *sitting(4, conversation="b")],  # two conversations
    ],
    ids=["pause", "conversations"],
)
def test_episodes_apart_keep_their_own_headers(hits):
    for rank, h in enumerate(hits, start=1):
        h.rank = rank
    assert len(headers(run(hits, "high", sitting_gap=FIFTEEN)[1])) == 2


def test_a_skipped_episode_between_two_of_a_sitting_keeps_them_apart():
    first, _, third = sitting(4, 4, 4)
    third.rank = 2
    assert len(headers(run([first, third], "high", sitting_gap=FIFTEEN)[1])) == 2


def test_a_block_stands_where_its_best_ranked_episode_does():
    first, second = sitting(4, 4)
    other = episode(2, messages=3, summary_words=5)
    other.id, other.conversation_id, second.rank = "other", "elsewhere", 3
    _, out = run([first, other, second], "high", sitting_gap=FIFTEEN)
    assert [h.split(" · ")[-1] for h in headers(out)] == [first.title, other.title]
    assert out.index(message_line(second.messages[0])) < out.index(other.title)


def test_nothing_to_select_says_no_memories_match():
    assert run([], "auto") == ([], "No memories match “tomato”.")


def test_an_episode_shown_alone_is_priced_apart_from_its_sittings_block():
    """The first episode of a sitting names its block; when none of its own messages fits
    and it is shown as its header alone, that header is counted on its own, not against
    the block's cost (which would leave room for a header that does not fit, and the
    block's message trimmed to make room for it)."""
    first, second = sitting(2, 2)
    first.rank, second.rank = 2, 1
    first.messages = [replace(m, content=m.content + " " + text(300), relevance=0.0) for m in first.messages]
    second.messages = [replace(m, relevance=1.0) for m in second.messages]
    other = episode(3, messages=2, words=300, summary_words=5)
    other.id, other.conversation_id = "other", "elsewhere"
    other.messages = [replace(m, relevance=0.0) for m in other.messages]
    alone, fitting = run([second, first], "high", 200, sitting_gap=FIFTEEN, summary_tokens_with_messages=0)
    assert shown(alone) == {"c2": [2, 3], "c1": []}  # the first episode's long messages do not fit
    budget = count_tokens(fitting) + 3  # the block and the first episode's header: no room for another
    chosen, out = run([second, first, other], "high", budget, sitting_gap=FIFTEEN, summary_tokens_with_messages=0)
    assert shown(chosen) == {"c2": [2, 3], "c1": []}
    assert "other" not in {s.hit.id for s in chosen} and count_tokens(out) <= budget


# --- long messages: an excerpt first, all of it when there is room --------------------

ESSAY = (
    "Chicago! The Windy City! "
    + " ".join(f"Paragraph {i} describes the weather in month {i} with many numbers." for i in range(30))
    + " Rachel moved to the Lincoln Park neighbourhood last spring."
)


def _long_episode() -> EpisodeHit:
    """A question, a long answer holding one relevant sentence, and a short user message."""
    hit = episode(1, messages=3)
    contents = ["where did Rachel move to?", ESSAY, "She loves Lincoln Park, the lake is close."]
    relevances = [0.05, 0.045, 0.04]
    roles = ["user", "assistant", "user"]
    hit.messages = [
        replace(m, content=c, relevance=r, role=role)
        for m, c, r, role in zip(hit.messages, contents, relevances, roles)
    ]
    return hit


def test_a_long_message_is_first_an_excerpt_around_the_query_and_the_short_one_after_it_fits():
    chosen, out = run([_long_episode()], "high", 120, query="Rachel moved", long_tokens=60, excerpt_tokens=30)
    (s,) = chosen
    assert [m.seq for m in s.shown] == [0, 1, 2]  # without excerpts, the essay alone would not fit
    essay = s.shown[1]
    assert essay.excerpt and "Rachel moved to the Lincoln Park" in essay.content and essay.content.startswith(GAP)
    assert count_tokens(essay.content) <= 30 and ESSAY not in out
    assert not s.shown[0].excerpt and not s.shown[2].excerpt


def test_the_whole_message_replaces_its_excerpt_when_the_budget_has_room():
    chosen, out = run([_long_episode()], "high", 4000, query="Rachel moved", long_tokens=60, excerpt_tokens=30)
    (s,) = chosen
    assert [(m.seq, m.excerpt) for m in s.shown] == [(0, False), (1, False), (2, False)]
    assert " ".join(ESSAY.split()) in out and GAP not in out


def test_without_a_long_message_limit_every_message_is_whole():
    chosen, _ = run([_long_episode()], "high", 4000, query="Rachel moved", long_tokens=0)
    assert not any(m.excerpt for s in chosen for m in s.shown)
    # the essay does not fit whole: alone it is left out; after its question, its lead comes
    chosen, _ = run([_long_episode()], "high", 120, query="Rachel moved", long_tokens=0, answers=False)
    assert [m.seq for s in chosen for m in s.shown] == [0, 2]
    chosen, _ = run([_long_episode()], "high", 120, query="Rachel moved", long_tokens=0)
    assert [(m.seq, m.excerpt) for s in chosen for m in s.shown][:2] == [(0, False), (1, True)]
    assert chosen[0].shown[1].content.startswith("Chicago! The Windy City!")


# --- a question and its answer --------------------------------------------------------


def dialogue(*turns: tuple[str, str, float], rank: int = 1, first_seq: int = 0) -> EpisodeHit:
    """An episode of ``turns`` (role, content, own relevance), one a minute."""
    hit = episode(rank, messages=len(turns), summary_words=5)
    hit.messages = [
        replace(m, seq=first_seq + i, role=role, content=content, relevance=hit.final + own)
        for i, (m, (role, content, own)) in enumerate(zip(hit.messages, turns))
    ]
    hit.first_seq, hit.last_seq = first_seq, first_seq + len(turns) - 1
    return hit


POSTGRES = (
    "A relational database like PostgreSQL is the defensible default. You need transactions, unique "
    "constraints and strong consistency. At 2,000 requests per second peak, a well-tuned primary with read "
    "replicas handles it. Mention sharding by merchant id as the scale-out path."
)


def ledger() -> EpisodeHit:
    """The demo's ledger talk: the question matches best, its answer least."""
    return dialogue(
        ("user", "we went over the ledger part and double-entry bookkeeping for the payments service", 0.04),
        ("assistant", "Every money movement is recorded as entries that sum to zero, append-only.", 0.03),
        ("user", "what db would you pick for this?", 0.05),
        ("assistant", POSTGRES, 0.0),
        ("user", "the outbox table lives in the same database as the ledger entries", 0.02),
        ("assistant", "Then a relay publishes the outbox rows to Kafka for the webhooks.", 0.01),
    )


def lines(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith("- ") or line == GAP]


def test_a_question_brings_its_answer_whatever_the_answers_own_priority():
    hit = ledger()
    budget = count_tokens(run([hit], "high", 10_000, summary_tokens_with_messages=0)[1]) - 1  # all but one
    alone, out = run([hit], "high", budget, summary_tokens_with_messages=0, answers=False)
    assert shown(alone) == {"e1": [0, 1, 2, 4, 5]}  # the answer ranks last: the question alone before a gap
    assert lines(out)[2:4] == [message_line(hit.messages[2]), GAP]
    together, out = run([hit], "high", budget, summary_tokens_with_messages=0)
    assert shown(together) == {"e1": [0, 1, 2, 3, 4]}  # what ranks last is left out now
    answer = together[0].shown[1]
    assert answer.seq == 3 and not answer.excerpt and answer.content == POSTGRES  # whole: it fits
    assert lines(out)[2:4] == [message_line(hit.messages[2]), message_line(hit.messages[3])]


@pytest.mark.parametrize("budget", [64, 70, 80])
def test_under_a_tight_budget_the_question_comes_with_its_answers_first_sentence(budget):
    hit = ledger()
    chosen, out = run([hit], "high", budget, query="which database for the ledger", excerpt_tokens=30)
    assert count_tokens(out) <= budget
    (s,) = chosen
    assert [m.seq for m in s.shown][:2] == [2, 3]  # the question first (it ranks first), its answer with it
    answer = s.shown[1]
    assert answer.excerpt and answer.content.startswith("A relational database like PostgreSQL")
    assert answer.content.endswith(f" {GAP}") and count_tokens(answer.content) <= 30
    text = lines(out)
    assert text[text.index(message_line(s.shown[0])) + 1] == message_line(answer)  # never the question alone


def test_a_question_whose_answer_cannot_follow_it_is_not_shown():
    hit = ledger()
    question = hit.messages[2]
    with_question = count_tokens(episode_block(hit, [question], now=NOW, summary=None, key_moment_surprise=0.7))
    budget = with_question + 6  # the question fits, its answer's first words do not
    _, out = run([hit], "high", budget, query="which database", summary_tokens_with_messages=0)
    assert message_line(question) not in out and count_tokens(out) <= budget
    _, out = run([hit], "high", budget, query="which database", summary_tokens_with_messages=0, answers=False)
    assert message_line(question) in out  # as it was: the question alone


@pytest.mark.parametrize("detail", ["low", "high", "auto"])
@pytest.mark.parametrize("budget", [60, 100, 150, 300, 1000])
def test_without_questions_nothing_changes(detail, budget):
    hits = [episode(rank, messages=8, words=20) for rank in range(1, 5)]
    for gap, long in ((None, 0), (FIFTEEN, 15)):
        on = run(hits, detail, budget, sitting_gap=gap, long_tokens=long, excerpt_tokens=10)
        assert on == run(hits, detail, budget, sitting_gap=gap, long_tokens=long, excerpt_tokens=10, answers=False)


def test_a_statement_with_a_question_tacked_on_competes_alone():
    hit = dialogue(
        (
            "user",
            "I've known these friends for 4 years, since I moved from my home country. Their love and help have "
            "been so important after that tough breakup. Who supports you, Mel?",
            0.05,
        ),
        ("assistant", "My family and my husband, always.", 0.0),
        ("user", "we also talked about the picnic in the park last week with the whole group", 0.03),
    )
    for budget in range(60, 120, 2):
        assert run([hit], "high", budget) == run([hit], "high", budget, answers=False)
    assert shown(run([hit], "high", 100)[0]) == {"e1": [0, 2]}


def test_assistants_ask_too():
    hit = dialogue(
        ("user", "60 minutes, online with Excalidraw, something related to payments and reliability", 0.05),
        ("assistant", "Likely candidates: a payment processing service or an idempotent payments API.", 0.04),
        ("assistant", "Shall we start with the framework?", 0.03),
        ("user", "yes, the framework first", 0.0),
        ("assistant", "A 60-minute structure: clarify requirements, then estimate the load.", 0.02),
    )
    alone = []
    for budget in range(60, 120):
        if 2 in shown(run([hit], "high", budget, answers=False)[0]).get("e1", []):
            alone.append(3 not in shown(run([hit], "high", budget, answers=False)[0])["e1"])
        with_it = shown(run([hit], "high", budget)[0]).get("e1", [])
        assert 2 not in with_it or 3 in with_it, budget
    assert any(alone)  # there are budgets where the question came alone


def test_the_answer_is_the_next_other_speakers_message_past_tool_calls():
    hit = dialogue(
        ("user", "which region should we deploy the ledger to?", 0.05),
        ("assistant", "", 0.0),  # a bare tool call
        ("tool", '{"regions": ["eu-west-1", "us-east-1"], "latency_ms": [12, 95]}', 0.0),
        ("assistant", "eu-west-1: it is the closest to your users.", 0.0),
        ("user", "the ledger entries are append-only and never updated in place", 0.04),
    )
    budget = count_tokens(run([hit], "high", 10_000, answers=False)[1]) - 25  # no room for every message
    chosen, _ = run([hit], "high", budget)
    assert {0, 3} <= set(shown(chosen)["e1"]) and 2 not in shown(chosen)["e1"]
    assert answer_to(hit.messages[0], {m.seq: m for m in hit.messages}.get) is hit.messages[3]
    later = dialogue(("user", "what db would you pick?", 0.05), ("user", "for the ledger I mean", 0.0))
    assert answer_to(later.messages[0], {m.seq: m for m in later.messages}.get) is None  # no one answered yet


def test_an_answer_at_the_start_of_the_next_episode_of_the_sitting_comes_too():
    first, second = sitting(3, 3)
    first.messages = [*first.messages[:2], replace(first.messages[2], content="what db would you pick?")]
    first.messages[2].relevance += 0.5  # the best match of all
    second.messages = [
        replace(second.messages[0], role="assistant", content="PostgreSQL, the defensible default.", relevance=0.0),
        *second.messages[1:],
    ]
    budget = count_tokens(run([first, second], "high", 10_000, sitting_gap=FIFTEEN)[1]) // 2
    chosen, out = run([first, second], "high", budget, sitting_gap=FIFTEEN)
    assert 2 in shown(chosen)["c1"] and shown(chosen)["c2"][:1] == [3]
    assert len(headers(out)) == 1 and "PostgreSQL, the defensible default." in out


def test_at_low_detail_a_question_counts_with_its_answer():
    hit = ledger()
    assert shown(run([hit], "low", 4000, low_messages=2, answers=False)[0]) == {"e1": [0, 2]}
    assert shown(run([hit], "low", 4000, low_messages=2)[0]) == {"e1": [2, 3]}
    assert shown(run([hit], "low", 4000, low_messages=1)[0]) == {"e1": [0]}  # no room for the pair
