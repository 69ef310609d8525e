"""Sittings: the runs of a conversation's episodes that follow one another without a pause
(pure).

Two episodes are in one sitting when the second begins with the message after the first's
last (``first_seq == last_seq + 1``) and no further in time from its end than the time gap
that would have cut them apart anyway (``MEMQ_TIME_GAP_MINUTES``; either way: messages
imported with times out of their order are not joined across a gap backwards): a cut between them was the
detector's, inside one stretch of talk. How finely a detector cuts such a stretch should
not decide what retrieval finds in it, so an episode's *density* (``relevance.py``) is
counted over its sitting: on LoCoMo, cutting the same talk into 68 episodes instead of 42
lost 0.02 of recall at 250 and 1,000 tokens, mostly because the smaller episode that held
the answer lent it less density (docs/evaluation.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

from memq.memory.retrieval.model import EpisodeHit


def sittings(hits: Sequence[EpisodeHit], gap: timedelta) -> dict[str, str]:
    """Each hit's sitting, as the id of the sitting's earliest hit. Only the hits given
    are joined: an episode between two of them that is not among them keeps them apart."""
    out: dict[str, str] = {}
    by_conversation: dict[str, list[EpisodeHit]] = {}
    for h in hits:
        by_conversation.setdefault(h.conversation_id, []).append(h)
    for episodes in by_conversation.values():
        episodes.sort(key=lambda h: h.first_seq)
        previous: EpisodeHit | None = None
        key = ""
        for h in episodes:
            if previous is None or h.first_seq != previous.last_seq + 1 or abs(h.start_at - previous.end_at) > gap:
                key = h.id
            out[h.id] = key
            previous = h
    return out
