"""The rule layer: fast, zero-cost checks before any boundary detection.

Plast Mem's rule layer exactly, evaluated on the open event's messages *including* the
new one, in this order:

==========================  ==========================================  ==============
rule                        condition                                   action
==========================  ==========================================  ==============
buffer too small            messages < min_messages (3)                 SKIP
buffer full                 messages >= max_messages (50)               FORCE_CREATE
time gap                    new - previous > time_gap (15 min)          TIME_BOUNDARY
token budget (agent-memory)     tokens before + new > token_budget (4000)   TOKEN_BOUNDARY
content too short           total chars < min_total_chars (100)         SKIP
message too short           latest message < min_message_chars (5)      SKIP
otherwise                                                               DETECT
==========================  ==========================================  ==============

FORCE_CREATE drains all messages (the new one included) into the episode.
TIME_BOUNDARY and TOKEN_BOUNDARY keep the new message as the first of the next event
(the edge message). The token budget comes after Plast Mem's rules so that those
behave exactly as the seed describes; tool results count only their first
``tool_result_max_chars`` characters (done by the caller's token counts).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memq.shared.settings import Settings


class RuleAction(enum.Enum):
    SKIP = "skip"
    FORCE_CREATE = "force_create"
    TIME_BOUNDARY = "time_boundary"
    TOKEN_BOUNDARY = "token_boundary"
    DETECT = "detect"

    @property
    def keeps_edge(self) -> bool:
        """Whether the new message starts the next event instead of closing this one."""
        return self in (RuleAction.TIME_BOUNDARY, RuleAction.TOKEN_BOUNDARY)


@dataclass(frozen=True)
class RuleParams:
    min_messages: int = 3
    max_messages: int = 50
    time_gap: timedelta = timedelta(minutes=15)
    token_budget: int = 4000
    min_total_chars: int = 100
    min_message_chars: int = 5

    @classmethod
    def from_settings(cls, s: Settings) -> RuleParams:
        return cls(
            min_messages=s.min_messages,
            max_messages=s.max_messages,
            time_gap=timedelta(minutes=s.time_gap_minutes),
            token_budget=s.token_budget,
            min_total_chars=s.min_total_chars,
            min_message_chars=s.min_message_chars,
        )


@dataclass(frozen=True)
class Unit:
    """What the rules need to know of a message."""

    timestamp: datetime
    chars: int
    tokens: int


def decide(buffer: Sequence[Unit], new: Unit, p: RuleParams) -> RuleAction:
    """The rule layer's verdict for ``new`` arriving after the open event ``buffer``."""
    count = len(buffer) + 1
    if count < p.min_messages:
        return RuleAction.SKIP
    if count >= p.max_messages:
        return RuleAction.FORCE_CREATE
    if buffer and new.timestamp - buffer[-1].timestamp > p.time_gap:
        return RuleAction.TIME_BOUNDARY
    if buffer and sum(u.tokens for u in buffer) + new.tokens > p.token_budget:
        return RuleAction.TOKEN_BOUNDARY
    if sum(u.chars for u in buffer) + new.chars < p.min_total_chars:
        return RuleAction.SKIP
    if new.chars < p.min_message_chars:
        return RuleAction.SKIP
    return RuleAction.DETECT
