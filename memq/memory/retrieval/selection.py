"""What of the ranked episodes fits the caller's token budget. Pure: the caller passes
a token counter (tiktoken's, so the budget is on exactly what is returned).

Detail levels (Plast Mem): ``none`` shows each episode's title, time and summary;
``low`` adds its few most relevant messages; ``high`` as many as fit; ``auto`` is
``high`` for the top ranks, key moments and the episodes holding the best message matches,
and ``none`` for the rest. Messages are
chosen by relevance, never as a blind prefix, and shown in their order with a marker
where messages are left out.

Headers and messages compete for the budget by priority (see ``select``), so a
lower-ranked episode's best message can come before a higher-ranked episode's tenth.
An answer travels with its question (``answer_to``): a message that asks is shown with
the message answering it, whole or, when that does not fit, its first sentences
(``excerpts.lead``), or not at all: never alone before the ``…`` where its answer was
left out.
The episodes of one sitting (``sittings.py``) that show messages are shown as one block
under one header, so the next episode of a stretch of talk costs no second header.
"""

from __future__ import annotations

import bisect
import functools
import heapq
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from memq.memory.retrieval.excerpts import asks, excerpt, lead, query_keys
from memq.memory.retrieval.model import EpisodeHit, MessageView
from memq.memory.retrieval.render import (
    GAP,
    episode_lines,
    gap_count,
    markdown,
    message_line,
    sitting_header,
    sitting_lines,
    with_break,
)
from memq.memory.retrieval.sittings import sittings
from memq.shared.tokens import count_chunks

Counter = Callable[[str], int]


@dataclass(frozen=True)
class SelectionParams:
    detail: str
    max_tokens: int
    low_messages: int = 3
    auto_rank: int = 2
    auto_message_rank: int = 2
    key_moment_surprise: float = 0.7
    summary_tokens_with_messages: int = 0  # summary shown (shortened) above messages; 0 = none
    # an episode shown without messages competes at this x its final score: the priority of
    # one of its messages that matched nothing itself (MEMQ_MESSAGE_EPISODE_WEIGHT)
    header_weight: float = 1.0
    title_words: int = 8  # display title of an episode shown with messages (MEMQ_DISPLAY_TITLE_WORDS)
    # episodes of one sitting (``sittings.py``, this the longest pause within one) show their
    # messages under one header; None: each episode under its own (MEMQ_SITTING_BLOCKS)
    sitting_gap: timedelta | None = None
    # a message whose line counts more than ``long_tokens`` is shown first as an excerpt of
    # at most ``excerpt_tokens`` (``excerpts.py``), and whole at ``full_weight`` x its
    # priority, once what ranks above that is in; 0 shows every message whole
    # (MEMQ_MESSAGE_LONG_TOKENS, MEMQ_MESSAGE_EXCERPT_TOKENS, MEMQ_MESSAGE_FULL_WEIGHT)
    long_tokens: int = 0
    excerpt_tokens: int = 40
    full_weight: float = 0.5
    # roles whose messages a leg found are shown whole at once, however long: the query
    # asks what that side said (``participants.asks_what_the_assistant_said``)
    whole_roles: frozenset[str] = frozenset()
    # a message that asks (``excerpts.asks``) is shown with its answer (``answer_to``), at
    # least the answer's first sentences (``excerpts.lead``, within ``excerpt_tokens``), or
    # not at all; False: every message competes alone
    answers: bool = True


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
    return hit.message_count if opens_at_auto(hit, p) else 0


def opens_at_auto(hit: EpisodeHit, p: SelectionParams) -> bool:
    """``auto`` shows the messages of the top ranks, of key moments and of the episodes that
    hold a message match of the search (a message leg's rank <= ``auto_message_rank``, any
    rank when 0): the episode re-ranking (FSRS, time) may move the episode holding the
    answer below the top ranks, and a summary rarely quotes it. Episodes found by their
    title or summary alone are shown as summaries."""
    if hit.rank <= p.auto_rank or hit.key_moment(p.key_moment_surprise):
        return True
    deepest = p.auto_message_rank or float("inf")  # 0: any rank a message leg gave
    return any(0 < rank <= deepest for m in hit.messages for rank in m.ranks.values())


# messages that are no speaker's turn: a tool's output, a system prompt (an assistant's tool
# call between a question and its answer is one)
PLUMBING = frozenset({"tool", "system"})
ANSWER_LOOK = 3  # how far past a question its answer is looked for (the asker's follow-ups, tool calls)
LEAD_MIN_TOKENS = 8  # an answer's lead shorter than this (or than ``excerpt_tokens``) says too little


def answer_to(question: MessageView, at: Callable[[int], MessageView | None]) -> MessageView | None:
    """The message answering ``question`` when it asks (``excerpts.asks``; in any role but
    a tool's or the system's): the first of the ``ANSWER_LOOK`` messages after it by
    another speaker, past tool and system messages, empty ones (a bare tool call) and the
    asker's own follow-ups. ``at``: the message of a seq, None when it is not at hand (the
    search hands over the messages it found and their neighbours, not every message);
    None when the question does not ask or its answer is not at hand."""
    if question.role in PLUMBING or not asks(question.content):
        return None
    for seq in range(question.seq + 1, question.seq + 1 + ANSWER_LOOK):
        m = at(seq)
        if m is None:
            return None
        if m.role in PLUMBING or not m.content.strip() or m.who == question.who:
            continue
        return m
    return None


def best_messages(messages: Sequence[MessageView], cap: int, answers: bool) -> list[MessageView]:
    """The ``cap`` most relevant of an episode's ``messages`` (in seq order), a question
    counting with its answer (``answer_to``): a question whose answer would not fit under
    the cap gives its place to the next message."""
    ranked = sorted(messages, key=lambda m: (-m.relevance, m.seq))
    if not answers:
        return sorted(ranked[:cap], key=lambda m: m.seq)
    by_seq = {m.seq: m for m in messages}
    chosen: set[int] = set()
    for m in ranked:
        if len(chosen) >= cap:
            break
        if m.seq in chosen:
            continue
        answer = answer_to(m, by_seq.get)
        wanted = {m.seq} if answer is None else {m.seq, answer.seq}
        if len(chosen | wanted) <= cap:
            chosen |= wanted
    return [m for m in messages if m.seq in chosen]


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


class _Costs:
    """What blocks cost while filling (``select``): each distinct line counted once
    (``count`` is cached) and one token per line break; a block of shown messages keeps
    its own running sums (``_Block``)."""

    def __init__(self, p: SelectionParams, now: datetime, count: Counter) -> None:
        self.p, self.now, self.count = p, now, count
        self.separator = count("\n\n")
        self.gap = count(GAP)

    def header_only(self, s: Selected) -> int:
        lines = episode_lines(
            s.hit,
            [],
            now=self.now,
            summary=s.summary,
            key_moment_surprise=self.p.key_moment_surprise,
            title_words=self.p.title_words,
        )
        return sum(self.count(x) for x in lines) + len(lines) - 1 + self.separator

    def header(self, hits: Sequence[EpisodeHit]) -> int:
        p = self.p
        return self.count(
            sitting_header(hits, self.now, key_moment_surprise=p.key_moment_surprise, title_words=p.title_words)
        )

    def summary(self, summary: str | None) -> int:
        return self.count(f"Summary: {summary}") + 1 if summary else 0


@dataclass(frozen=True)
class _Whole:
    """A heap item's payload: the whole of a message shown as its excerpt."""

    message: MessageView
    excerpt_line: int  # what the excerpt's line costs


@dataclass
class _Block:
    """The shown messages of one episode, or of the episodes of one sitting, under one
    header (``render.sitting_lines``), with the running sums their cost is counted from:
    one more message costs its line, its line break and the ``…`` lines it adds or closes."""

    members: list[Selected] = field(default_factory=list)  # best ranked first
    summary: str | None = None  # the best ranked one's, shortened: the block shows it
    head: int = 0  # tokens of the header line and the summary's (with its line break)
    first_seq: int = 0  # the span the ``…`` lines are counted over: the members' first
    last_seq: int = -1  # and last seqs
    seqs: list[int] = field(default_factory=list)  # shown messages' seqs, sorted
    message_cost: int = 0  # their lines' tokens
    gaps: int = 0  # ``gap_count(seqs, first_seq, last_seq)``
    total: int = 0  # what the block costs as it stands (``cost`` when its last message came)

    def joined(self, s: Selected, costs: _Costs, summary: Callable[[str], str | None]) -> _Block:
        """The block's frame once ``s`` shows a message too (itself when ``s`` already
        does): its members, their summary, header's cost and span, no messages yet."""
        if any(m is s for m in self.members):
            return self
        members = sorted([*self.members, s], key=lambda m: m.hit.rank)
        hits = [m.hit for m in members]
        shown = summary(hits[0].summary)
        return _Block(
            members,
            shown,
            costs.header(hits) + costs.summary(shown),
            min(h.first_seq for h in hits),
            max(h.last_seq for h in hits),
        )

    def gaps_with(self, seq: int, frame: _Block) -> int:
        """``gap_count`` once ``seq`` is shown too (it is not yet), in ``frame``'s span."""
        seqs, first, last = self.seqs, frame.first_seq, frame.last_seq
        if frame is not self:  # a new episode widens the span: counted afresh
            return gap_count(sorted([*seqs, seq]), first, last)
        i = bisect.bisect_left(seqs, seq)
        before = seqs[i - 1] if i else first - 1
        after = seqs[i] if i < len(seqs) else None
        old = (after - before > 1) if after is not None else (before < last)
        new = (seq - before > 1) + ((after - seq > 1) if after is not None else (seq < last))
        return self.gaps - old + new

    def cost(self, frame: _Block, costs: _Costs, line: int, gaps: int) -> int:
        """The block's cost in ``frame`` once one more message (its line costing ``line``)
        is shown, with ``gaps`` markers then."""
        return frame.head + self.message_cost + line + len(self.seqs) + 1 + gaps * (costs.gap + 1) + costs.separator

    def preview(self, frame: _Block, seq: int, line: int, gaps: int, cost: int) -> _Block:
        """What ``add`` makes of the block (its frame, seqs and sums), as a new one: what a
        second message costs after a first is told by it. Its members' entries are not
        touched."""
        return _Block(
            frame.members,
            frame.summary,
            frame.head,
            frame.first_seq,
            frame.last_seq,
            sorted([*self.seqs, seq]),
            self.message_cost + line,
            gaps,
            cost,
        )

    def widen(self, s: Selected, whole: MessageView, extra: int) -> None:
        """Show all of ``whole`` where its excerpt is shown: ``extra`` tokens more."""
        s.shown[next(i for i, m in enumerate(s.shown) if m.seq == whole.seq)] = whole
        self.message_cost += extra
        self.total += extra

    def add(self, s: Selected, frame: _Block, m: MessageView, line: int, gaps: int, cost: int) -> None:
        """Show ``m`` (of ``s``) in ``frame``: the block's cost is then ``cost``; the
        summary of the best ranked member heads it, the others show none."""
        if frame is not self:
            self.members, self.summary, self.head = frame.members, frame.summary, frame.head
            self.first_seq, self.last_seq = frame.first_seq, frame.last_seq
            for member in self.members:
                member.summary = self.summary if member is self.members[0] else None
        bisect.insort(self.seqs, m.seq)
        s.shown.append(m)
        self.message_cost += line
        self.gaps = gaps
        self.total = cost


def select(hits: Sequence[EpisodeHit], p: SelectionParams, now: datetime, count: Counter, query: str) -> Selection:
    """The episodes (with their shown messages) and the markdown that fits ``p.max_tokens``.

    Items compete for the budget by priority: an episode shown without messages (its
    detail level allows none) as its header (title, time, summary) at the episode's final
    score, otherwise each message its detail level allows at its own priority
    (``MessageView.relevance``, set by the caller on the same scale). Items are taken best
    first while they fit; a message brings its block's header with it (its episode's, or
    with ``p.sitting_gap`` its sitting's: ``_Block``; the summary of the best ranked then
    cut to ``summary_tokens_with_messages``). Blocks are shown in the rank order of their
    best ranked episode, messages in their order with markers for what is left out.

    With ``p.answers``, a message that asks comes with its answer (``answer_to``, among the
    messages of its block), whatever the answer's own priority: as the answer would come
    alone (whole, or a long one as its excerpt), else its lead (``excerpts.lead``: its
    first sentences within ``excerpt_tokens``). When not even the lead fits, the question
    is not shown either.

    While filling, a block's cost is the sum of its lines' token counts plus one per line
    break (``_Costs``); the text is then counted exactly (``count_chunks``) and trimmed
    until it fits, so the budget holds on exactly what is returned."""
    costs = _Costs(p, now, count)
    shortened: dict[tuple[str, int], str | None] = {}

    def shorten(text: str, tokens: int) -> str | None:
        key = (text, tokens)
        if key not in shortened:
            shortened[key] = _shorten(text, tokens, count)
        return shortened[key]

    def shown_summary(text: str) -> str | None:
        return shorten(text, p.summary_tokens_with_messages)

    smallest = count("- a: b") + 1
    keys = query_keys(query) if p.long_tokens > 0 else frozenset()
    # items sort as (-priority, rank, seq): episode ranks are distinct and an episode's
    # seqs too (a header's is -1; a message's whole, after its excerpt, seq + 0.5), so the
    # hit and payload after them are never compared
    message_items: list[tuple[float, int, float, EpisodeHit, MessageView]] = []
    first_headers: list[tuple[float, int, float, EpisodeHit, None]] = []  # compete at their score
    last_headers: list[tuple[float, int, float, EpisodeHit, None]] = []  # after every message
    caps = {hit.id: message_cap(hit, p) for hit in hits}  # (at auto, a walk over the hit's messages)
    allowed: dict[str, set[int]] = {}  # the seqs an episode whose cap leaves some out may show
    for hit in hits:
        cap = caps[hit.id]
        # an episode that may show messages competes through them; its header alone (with the
        # summary) comes after every message, for when none of its messages fits
        if cap == 0 or not hit.messages:
            first_headers.append((-p.header_weight * hit.final, hit.rank, -1, hit, None))
        else:
            last_headers.append((1.0, hit.rank, -1, hit, None))
            best = hit.messages if cap >= len(hit.messages) else best_messages(hit.messages, cap, p.answers)
            if len(best) < len(hit.messages):
                allowed[hit.id] = {m.seq for m in best}
            rank = hit.rank
            message_items.extend([(-m.relevance, rank, m.seq, hit, m) for m in best])
    # no budget holds more than max_tokens / (tokens of the shortest line) messages: past a
    # few times that, the rest of the ranking cannot be reached
    message_items.sort()
    items: list[tuple[Any, ...]] = message_items[: 4 * p.max_tokens // smallest] + [
        h for h in first_headers if h[0] <= 0
    ]
    items.sort()
    items += sorted(h for h in first_headers if h[0] > 0) + sorted(last_headers)
    # a heap from here (a sorted list is one): a message shown as its excerpt pushes its whole

    # the episodes that may show messages, by the block their messages go to: one per
    # sitting (``sittings.py``) when ``p.sitting_gap`` is set, else one per episode
    opened = [h for h in hits if h.messages and caps[h.id] > 0]
    block_of = sittings(opened, p.sitting_gap) if p.sitting_gap is not None else {h.id: h.id for h in opened}
    entries: dict[str, Selected] = {}
    blocks: dict[str, _Block] = {}
    added: list[tuple[str, ...]] = []  # the entries each item's messages went to, in order, to undo the last ones
    # what follows a question is looked for among its block's messages (a question ending an
    # episode is answered at the start of the next one of its sitting)
    at: dict[tuple[str, int], tuple[EpisodeHit, MessageView]] = {}
    if p.answers:
        for h in opened:
            for m in h.messages:
                if h.id not in allowed or m.seq in allowed[h.id]:
                    at[(block_of[h.id], m.seq)] = (h, m)
    placed: set[tuple[str, int]] = set()  # (episode id, seq) of every message shown

    def message_at(key: str, seq: int) -> MessageView | None:
        found = at.get((key, seq))
        return found[1] if found is not None else None

    def shown_form(m: MessageView) -> tuple[MessageView, int, _Whole | None]:
        """How ``m`` is shown first: whole, or a long one as its excerpt with its whole to come."""
        line = count(message_line(m))
        # long: its excerpt first, all of it later; but a found message of a role the query
        # asks about is the answer itself ("the dish you recommended"): whole
        if 0 < p.long_tokens < line and not (m.role in p.whole_roles and bool(m.ranks)):
            short = replace(m, content=excerpt(m.content, keys, p.excerpt_tokens, count, long=True), excerpt=True)
            line_short = count(message_line(short))
            return short, line_short, _Whole(m, line_short)
        return m, line, None

    def answer_shown(
        after: _Block, entry: Selected, answer: MessageView, room: int
    ) -> tuple[MessageView, int, _Whole | None] | None:
        """How ``answer`` (of ``entry``) is shown after its question in ``after`` (the block
        with the question) within ``room`` tokens more: as it would be alone (whole, or a
        long one as its excerpt with its whole to come), else its lead (its first sentences
        within ``excerpt_tokens``; its whole cannot fit later either: what is used only
        grows); None when not even a lead of ``LEAD_MIN_TOKENS`` fits."""
        frame = after.joined(entry, costs, shown_summary)
        gaps = after.gaps_with(answer.seq, frame)

        def extra(line: int) -> int:
            return after.cost(frame, costs, line, gaps) - after.total

        shown, line, whole = shown_form(answer)
        if extra(line) <= room:
            return shown, line, whole
        tokens = min(p.excerpt_tokens, room - extra(count(message_line(replace(answer, content="")))))
        while tokens >= min(p.excerpt_tokens, LEAD_MIN_TOKENS):
            text = lead(answer.content, tokens, count)
            if not text:
                return None
            short = replace(answer, content=text, excerpt=True)
            line = count(message_line(short))
            if extra(line) <= room:
                return short, line, None
            tokens -= 1
        return None

    used = 0
    misses = 0  # items in a row that did not fit: past a few dozen, nothing later will
    while items:
        priority, _, order, hit, message = heapq.heappop(items)
        if p.max_tokens - used < smallest:
            break
        if misses > 48 and message is not None:
            continue  # past a few dozen misses in a row no message fits; a header alone still may
        entry = entries.get(hit.id)
        if isinstance(message, _Whole):  # its excerpt is shown: all of it now, if it fits
            assert entry is not None
            block = blocks[block_of[hit.id]]
            extra = count(message_line(message.message)) - message.excerpt_line
            if used + extra <= p.max_tokens:
                block.widen(entry, message.message, extra)
                used += extra
            continue
        if message is None:
            if entry is not None:
                continue  # its header came with one of its messages
            entry = Selected(hit, None, 0)
            cost = costs.header_only(entry)
            if used + cost > p.max_tokens:  # not even without its summary
                misses += 1
                continue
            entry.summary = hit.summary
            if entry.summary:
                cost = costs.header_only(entry)
                if used + cost > p.max_tokens:
                    room = p.max_tokens - used - (cost - count(entry.summary))
                    entry.summary = shorten(hit.summary, room) if room >= 20 else None
                    cost = costs.header_only(entry)
                    if used + cost > p.max_tokens:
                        misses += 1
                        continue
            used += cost
        else:
            if (hit.id, message.seq) in placed:
                continue  # it came with its question
            key = block_of[hit.id]
            found = None
            if p.answers:
                answer = answer_to(message, functools.partial(message_at, key))
                if answer is not None:
                    answered = at[(key, answer.seq)][0]
                    found = None if (answered.id, answer.seq) in placed else (answered, answer)
            message, line, whole = shown_form(message)
            if used + line - costs.gap > p.max_tokens:  # a message adds at least its line less one closed ``…``
                misses += 1
                continue
            block = blocks.get(key) or _Block()
            if entry is None:
                entry = Selected(hit, None, caps[hit.id])
            # an entry showing a message already is one of its block's members
            frame = block if entry.shown else block.joined(entry, costs, shown_summary)
            gaps = block.gaps_with(message.seq, frame)
            cost = block.cost(frame, costs, line, gaps)
            if used - block.total + cost > p.max_tokens:
                misses += 1
                continue
            paired = None
            if found is not None:  # the question comes with its answer, or not at all
                answered, answer = found
                other = entry if answered is hit else entries.get(answered.id)
                other = other or Selected(answered, None, caps[answered.id])
                after = block.preview(frame, message.seq, line, gaps, cost)
                shown = answer_shown(after, other, answer, p.max_tokens - (used - block.total + cost))
                if shown is None:
                    misses += 1
                    continue
                paired = (answered, other, answer, shown)
            used += cost - block.total
            block.add(entry, frame, message, line, gaps, cost)
            blocks[key] = block
            placed.add((hit.id, message.seq))
            group: tuple[str, ...] = (hit.id,)
            if whole is not None:
                heapq.heappush(items, (priority * p.full_weight, hit.rank, order + 0.5, hit, whole))
            if paired is not None:
                answered, other, answer, (shown_answer, line, later) = paired
                frame = block.joined(other, costs, shown_summary)
                gaps = block.gaps_with(answer.seq, frame)
                cost = block.cost(frame, costs, line, gaps)
                used += cost - block.total
                block.add(other, frame, shown_answer, line, gaps, cost)
                placed.add((answered.id, answer.seq))
                entries[answered.id] = other
                group += (answered.id,)
                if later is not None:  # a long one's excerpt: all of it later, as when it comes alone
                    later_item = (-answer.relevance * p.full_weight, answered.rank, answer.seq + 0.5, answered, later)
                    heapq.heappush(items, later_item)
            added.append(group)
        misses = 0
        entries[hit.id] = entry

    chosen: list[Selected] = sorted(entries.values(), key=lambda s: s.hit.rank)
    text, tokens = _render(chosen, block_of, p, now, count, query)
    while tokens > p.max_tokens and added:  # never expected: the costs above hold the text's count
        for entry_id in reversed(added.pop()):  # a question goes with its answer
            entries[entry_id].shown.pop()
        chosen = [s for s in chosen if s.shown or s.cap == 0 or s.summary]
        text, tokens = _render(chosen, block_of, p, now, count, query)
    while tokens > p.max_tokens and chosen:
        chosen.pop()
        text, tokens = _render(chosen, block_of, p, now, count, query)
    if tokens > p.max_tokens:  # nothing chosen, and the query it echoes is too long
        text = "No memories match the query."
        tokens = count(text)
    return Selection(chosen, text, tokens)


def _render(
    chosen: Sequence[Selected],
    block_of: Mapping[str, str],
    p: SelectionParams,
    now: datetime,
    count: Counter,
    query: str,
) -> tuple[str, int]:
    """The markdown of ``chosen`` and its exact token count (``count_chunks``: line by line).
    The episodes showing messages in one block (``block_of``) are shown as one, where the
    best ranked of them is."""
    if not chosen:
        text = markdown([], query)
        return text, count(text)
    together: dict[str, list[Selected]] = {}
    for s in chosen:
        if s.shown:
            together.setdefault(block_of[s.hit.id], []).append(s)
    chunks: list[str] = []
    for s in chosen:
        if not s.shown:
            lines = episode_lines(
                s.hit,
                [],
                now=now,
                summary=s.summary,
                key_moment_surprise=p.key_moment_surprise,
                title_words=p.title_words,
            )
        elif (members := together[block_of[s.hit.id]])[0] is s:
            lines = sitting_lines(
                [m.hit for m in members],
                [m for member in members for m in member.shown],
                now=now,
                summary=s.summary,
                key_moment_surprise=p.key_moment_surprise,
                title_words=p.title_words,
            )
        else:
            continue  # shown in the block of a better ranked episode of its sitting
        chunks.extend(map(with_break, lines))
        chunks[-1] += "\n"
    chunks[-1] = chunks[-1][:-2]
    return "".join(chunks), count_chunks(chunks, count)
