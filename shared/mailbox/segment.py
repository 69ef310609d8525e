"""A closed segment waiting for its episode: what segmentation hands to episode creation.

A drain cuts it (``memq.worker.conversation_store.ConversationStore.step``) and
``commit_steps.lua`` writes it into the conversation's segments hash, under its id, as

    "<fence> <json>"

the fence being PostgreSQL's fence of the conversation when the segment was cut
(re-stamped by ``sync.lua`` and ``adopt_segment.lua``, which rewrite only the part before
the first space). Episode creation reads it back (``memq.worker.episodes.job``), the
session context reads its messages (``memq.shared.mailbox.open_segment``). ``Segment``
is the one place the record is encoded and decoded.

The JSON keeps the field names it always had (a segment written by an older worker is
read by a newer one): the segment's id is stored as ``episode_id``.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any

# A message as stored on a segment and on its episode: ``QueuedMessage.to_record`` (``id``,
# ``seq``, ``role``, ``content``, ``timestamp``, and ``sent_at`` / ``metadata`` when set).
MessageRecord = dict[str, Any]

# json.dumps with these options, made once (what segments were always written with)
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def segment_id_for(tenant: str, conversation_id: str, first_seq: int, last_seq: int) -> str:
    """Deterministic in the messages it covers: the same segment always gets the same id,
    and so does the episode made of the same messages (a retry builds the same episode)."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"memq:{tenant}/{conversation_id}/{first_seq}-{last_seq}"))


@dataclass(frozen=True)
class Segment:
    """A closed segment as stored in Redis (see the module's docstring)."""

    id: str  # segment_id_for(its first and last message): the id of the episode made of all of them
    tenant: str
    conversation_id: str
    messages: list[MessageRecord]  # in order, numbered
    overlap: list[MessageRecord]  # the previous segment's tail: context only, not part of it
    reason: str  # why the event ended (a rule, the detector's reason, flush, inactivity)
    surprise: float
    detector: str
    source: str  # what decided: rules, embedding, llm, hysteresis, flush
    token_count: int
    fence: int = 0  # the conversation's fence it was cut (or last re-stamped) under

    def record(self) -> dict[str, Any]:
        """The JSON object stored after the fence (field names and order as always written)."""
        return {
            "episode_id": self.id,
            "tenant": self.tenant,
            "conversation_id": self.conversation_id,
            "messages": self.messages,
            "overlap": self.overlap,
            "reason": self.reason,
            "surprise": self.surprise,
            "detector": self.detector,
            "source": self.source,
            "token_count": self.token_count,
        }

    def encode(self) -> str:
        """The segments hash's value: ``"<fence> <json>"``."""
        return f"{self.fence} {_ENCODER.encode(self.record())}"

    @classmethod
    def decode(cls, raw: str | bytes) -> Segment:
        """A value of the segments hash (``encode``). Fields a record may lack get the
        values episode creation always read them as (no overlap, no surprise, decided by
        the rules, no token count)."""
        text = raw.decode() if isinstance(raw, bytes) else raw
        fence, _, body = text.partition(" ")
        record = json.loads(body)
        return cls(
            id=record["episode_id"],
            tenant=record["tenant"],
            conversation_id=record["conversation_id"],
            messages=record["messages"],
            overlap=record.get("overlap") or [],
            reason=record["reason"],
            surprise=float(record.get("surprise") or 0.0),
            detector=record.get("detector") or "rules",
            source=record.get("source") or "rules",
            token_count=int(record.get("token_count") or 0),
            fence=int(fence),
        )
