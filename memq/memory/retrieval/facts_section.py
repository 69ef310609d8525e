"""The facts section of a retrieval (semantic memory, Plast Mem): the active facts most
relevant to the query, above the episodes, in a few tokens each (pure)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from memq.shared.db.facts import Fact

HEAD = "## Known facts"


def fact_line(f: Fact) -> str:
    since = f", since {f.valid_at.day} {f.valid_at:%b %Y}" if f.valid_at else ""
    return f"- {' '.join(f.content.split())} ({f.category}{since})"


def facts_block(facts: Sequence[Fact], max_tokens: int, count: Callable[[str], int]) -> tuple[str, list[Fact]]:
    """The section and the facts it holds, best first, within ``max_tokens``."""
    kept: list[Fact] = []
    lines = [HEAD]
    for f in facts:
        candidate = "\n".join([*lines, fact_line(f)])
        if count(candidate) > max_tokens:
            break
        lines.append(fact_line(f))
        kept.append(f)
    return ("\n".join(lines), kept) if kept else ("", [])


def fact_record(f: Fact, score: float, ranks: dict[str, int]) -> dict[str, Any]:
    return {**f.to_json(), "scores": {"rrf": round(score, 6), **ranks}}
