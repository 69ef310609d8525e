"""What of the ranked episodes fits the caller's token budget. Pure: the caller passes
a token counter (tiktoken's, so the budget is on exactly what is returned).

Detail levels (seed 001): ``none`` shows each episode's title, time and summary;
``low`` adds its few most relevant messages; ``high`` as many as fit; ``auto`` is
``high`` for the top ranks and key moments and ``none`` for the rest. Messages are
chosen by relevance, never as a blind prefix, and shown in their order with a marker
where messages are left out.

Headers and messages compete for the budget by priority (see ``select``), so a
lower-ranked episode's best message can come before a higher-ranked episode's tenth.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from shared.retrieval.model import EpisodeHit, MessageView
from shared.retrieval.render import GAP, episode_block, episode_lines, gap_count, markdown, message_line, shown_header

Counter = Callable[[str], int]


@dataclass(frozen=True)
class SelectionParams:
    detail: str
    max_tokens: int
    low_messages: int = 3
    auto_rank: int = 2
    key_moment_surprise: float = 0.7
    summary_tokens_with_messages: int = 0  # summary shown (shortened) above messages; 0 = none
    # an episode shown without messages competes at this x its final score: the priority of
    # one of its messages that matched nothing itself (MEMQ_MESSAGE_EPISODE_WEIGHT)
    header_weight: float = 1.0
    title_words: int = 8  # display title of an episode shown with messages (MEMQ_DISPLAY_TITLE_WORDS)


@dataclass
class Selected:
    hit: EpisodeHit
    summary: str | None
    cap: int  # messages it may show
    shown: list[MessageView] = field(default_factory=list)


def message_cap(hit: EpisodeHit, p: SelectionParams) -> int:
    """How many messages the detail level lets the episode show."""
    if p.detail == "none":
        return 0
    if p.detail == "low":
        return p.low_messages
    if p.detail == "high":
        return hit.message_count
    return hit.message_count if hit.rank <= p.auto_rank or hit.key_moment(p.key_moment_surprise) else 0


def _shorten(text: str, tokens: int, count: Counter) -> str | None:
    if tokens <= 0 or not text:
        return None
    if count(text) <= tokens:
        return text
    words = text.split()
    lo, hi = 1, len(words)
    while lo < hi:  # the longest prefix of words within the limit
        mid = (lo + hi + 1) // 2
        if count(" ".join(words[:mid]) + " …") <= tokens:
            lo = mid
        else:
            hi = mid - 1
    return " ".join(words[:lo]) + " …"


@dataclass
class Selection:
    chosen: list[Selected]  # in rank order
    text: str  # the markdown
    tokens: int  # ``count(text)``, at most ``max_tokens``


def select(hits: Sequence[EpisodeHit], p: SelectionParams, now: datetime, count: Counter, query: str) -> Selection:
    """The episodes (with their shown messages) and the markdown that fits ``p.max_tokens``.

    Items compete for the budget by priority: an episode shown without messages (its
    detail level allows none) as its header (title, time, summary) at the episode's final
    score, otherwise each message its detail level allows at its own priority (``MessageView.relevance``, set by the caller on the same scale). Items are
    taken best first while they fit; a message brings its episode's header with it (the
    summary then cut to ``summary_tokens_with_messages``). Episodes are shown in rank
    order, messages in their order with markers for what is left out.

    While filling, a block's cost is the sum of its lines' token counts (each line
    counted once) plus one per line break; the joined text is then counted exactly and
    trimmed until it fits, so the budget holds on exactly what is returned."""
    separator = count("\n\n")
    memo: dict[str, int] = {}

    def line_cost(line: str) -> int:
        cost = memo.get(line)
        if cost is None:
            cost = memo[line] = count(line)
        return cost

    gap = count(GAP)
    message_costs: dict[tuple[str, int], int] = {}
    header_costs: dict[str, int] = {}

    def estimate(s: Selected) -> int:
        """What ``block(s)`` costs, from its parts (``episode_lines`` without the strings)."""
        if not s.shown:
            lines = episode_lines(s.hit, [], now=now, summary=s.summary, key_moment_surprise=p.key_moment_surprise,
                                  title_words=p.title_words)
            return sum(line_cost(x) for x in lines) + len(lines) - 1 + separator
        hit = s.hit
        cost = header_costs.get(hit.id)
        if cost is None:
            cost = header_costs[hit.id] = count(shown_header(hit, now, key_moment_surprise=p.key_moment_surprise,
                                                        title_words=p.title_words))
        lines = 1 + len(s.shown)
        if s.summary:
            cost += line_cost(f"Summary: {s.summary}")
            lines += 1
        for m in s.shown:
            key = (hit.id, m.seq)
            c = message_costs.get(key)
            if c is None:
                c = message_costs[key] = count(message_line(m))
            cost += c
        gaps = gap_count(sorted(m.seq for m in s.shown), hit.first_seq, hit.last_seq)
        return cost + gaps * gap + lines + gaps - 1 + separator

    def block(s: Selected) -> str:
        return episode_block(s.hit, s.shown, now=now, summary=s.summary, key_moment_surprise=p.key_moment_surprise,
                             title_words=p.title_words)

    shortened: dict[tuple[str, int], str | None] = {}

    def shorten(text: str, tokens: int) -> str | None:
        key = (text, tokens)
        if key not in shortened:
            shortened[key] = _shorten(text, tokens, count)
        return shortened[key]

    smallest = count("- a: b") + 1

    items: list[tuple[float, int, int, EpisodeHit, MessageView | None]] = []
    for hit in hits:
        cap = message_cap(hit, p)
        # an episode that may show messages competes through them; its header alone (with the
        # summary) comes after every message, for when none of its messages fits
        items.append((p.header_weight * hit.final if cap == 0 or not hit.messages else -1.0, hit.rank, -1, hit, None))
        for m in sorted(hit.messages, key=lambda m: (-m.relevance, m.seq))[:cap]:
            items.append((m.relevance, hit.rank, m.seq, hit, m))
    items.sort(key=lambda it: (-it[0], it[1], it[2]))
    headers = [it for it in items if it[4] is None]
    # no budget holds more than max_tokens / (tokens of the shortest line) messages: past a
    # few times that, the rest of the ranking cannot be reached
    reach = 4 * p.max_tokens // smallest
    items = [it for it in items if it[4] is not None][:reach] + [it for it in headers if it[0] >= 0]
    items.sort(key=lambda it: (-it[0], it[1], it[2]))
    items += [it for it in headers if it[0] < 0]

    entries: dict[str, Selected] = {}
    costs: dict[str, int] = {}
    added: list[str] = []  # the entry each message went to, in order, to undo the last ones
    used = 0
    misses = 0  # items in a row that did not fit: past a few dozen, nothing later will
    for _, _, _, hit, message in items:
        if p.max_tokens - used < smallest:
            break
        if misses > 48 and message is not None:
            continue  # past a few dozen misses in a row no message fits; a header alone still may
        entry = entries.get(hit.id)
        if entry is None:
            if message is None:
                entry = Selected(hit, hit.summary, 0)
            else:
                entry = Selected(hit, shorten(hit.summary, p.summary_tokens_with_messages), message_cap(hit, p))
        elif message is None:
            continue  # its header came with one of its messages
        if message is not None:
            entry.shown.append(message)
            if entry.summary == hit.summary and entry.summary:
                entry.summary = shorten(hit.summary, p.summary_tokens_with_messages)
        cost = estimate(entry)
        previous = costs.get(hit.id, 0)
        if used - previous + cost > p.max_tokens and message is None and entry.summary:
            room = p.max_tokens - used - (cost - count(entry.summary))
            entry.summary = shorten(hit.summary, room) if room >= 20 else None
            cost = estimate(entry)
        if used - previous + cost > p.max_tokens:
            if message is not None:
                entry.shown.pop()
            misses += 1
            continue
        misses = 0
        used += cost - previous
        costs[hit.id] = cost
        entries[hit.id] = entry
        if message is not None:
            added.append(hit.id)

    chosen = sorted(entries.values(), key=lambda s: s.hit.rank)
    text = markdown([block(s) for s in chosen], query)
    tokens = count(text)
    while tokens > p.max_tokens and added:  # joining may tokenise a little differently
        entries[added.pop()].shown.pop()
        chosen = [s for s in chosen if s.shown or s.cap == 0 or s.summary]
        text = markdown([block(s) for s in chosen], query)
        tokens = count(text)
    while tokens > p.max_tokens and chosen:
        chosen.pop()
        text = markdown([block(s) for s in chosen], query)
        tokens = count(text)
    if tokens > p.max_tokens:  # nothing chosen, and the query it echoes is too long
        text = "No memories match the query."
        tokens = count(text)
    return Selection(chosen, text, tokens)
