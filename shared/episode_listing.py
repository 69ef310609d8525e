"""An episode as it is listed and shown: ``memq episodes``, ``GET .../episodes``, the
manifest and the session context all read this one shape.

The other shapes an episode takes are different views on purpose: ``db.episodes.EpisodeRow``
is every column as the worker writes it (messages, vectors, the FSRS card);
``retrieval.model.EpisodeHit`` is an episode a search found, with its scores; the HTTP API's
``EpisodeOut`` is the JSON contract.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

# The columns of ``episodic_memory`` a listing reads, in the order ``EpisodeListing`` takes them.
COLUMNS = (
    "id::text, title, summary, start_at, end_at, message_count, first_seq, last_seq, surprise, "
    "boundary_reason, boundary_source, summary_source, tools_used, stability"
)


@dataclass(frozen=True)
class EpisodeListing:
    id: str
    title: str
    summary: str
    start_at: datetime
    end_at: datetime
    message_count: int
    first_seq: int = 0
    last_seq: int = 0
    surprise: float = 0.0
    boundary_reason: str = ""
    boundary_source: str = ""
    summary_source: str = ""
    tools_used: tuple[str, ...] = ()
    stability: float | None = None

    @classmethod
    def from_row(cls, row: tuple[Any, ...]) -> EpisodeListing:
        """From a row of ``SELECT {COLUMNS}`` (extra trailing columns ignored)."""
        (id_, title, summary, start, end, count, first, last, surprise, reason, source, by, tools, stab) = row[:14]
        return cls(
            id_, title, summary, start, end, count, first, last, surprise, reason, source, by, tuple(tools or ()), stab
        )

    def to_json(self) -> dict[str, Any]:
        return {
            **self.__dict__,
            "start_at": self.start_at.isoformat(),
            "end_at": self.end_at.isoformat(),
            "tools_used": list(self.tools_used),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> EpisodeListing:
        return cls(
            **{
                **data,
                "start_at": datetime.fromisoformat(data["start_at"]),
                "end_at": datetime.fromisoformat(data["end_at"]),
                "tools_used": tuple(data["tools_used"]),
            }
        )
