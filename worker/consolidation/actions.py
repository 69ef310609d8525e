"""What the LLM may answer when it consolidates, and how an answer becomes a plan (pure).

The LLM sees the new episodes as E1..En and the related facts already known as F1..Fm
(short local numbers: it cannot invent or mistype an id) and answers one action per
fact:

- ``new``: a lasting fact from episode Ei, with a category and, when it says so, the
  date it became true (else the episode's time);
- ``reinforce`` Fj: the episodes say again what Fj says;
- ``update`` Fj: Fj is no longer true as it stands; a new fact replaces it (Fj is
  superseded: true until the new one's date);
- ``invalidate`` Fj: Fj stopped being true (at episode Ei's time), nothing replaces it.

An answer is refused whole (and asked again) when it names a number that was not shown,
acts on the same known fact twice (contradictory), leaves a fact's text or category out
where one is needed, or would end a fact before it began.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal, get_args

from pydantic import BaseModel, Field, model_validator

from memq.shared.db.facts import CATEGORIES

Category = Literal[
    "identity", "preference", "interest", "personality", "relationship", "experience", "goal", "guideline"
]
assert set(get_args(Category)) == set(CATEGORIES)


class Action(BaseModel):
    action: Literal["new", "reinforce", "update", "invalidate"]
    episode: int = Field(description="the number of the episode (E1, E2, ...) this comes from")
    fact: str | None = Field(default=None, description="new and update: the fact, one self-contained sentence")
    category: Category | None = Field(default=None, description="new and update")
    target: int | None = Field(
        default=None, description="reinforce, update, invalidate: the known fact's number (F1, F2, ...)"
    )
    valid_from: str | None = Field(
        default=None, description="new and update: ISO date it became true, if the episode says"
    )


@dataclass(frozen=True)
class Shown:
    """What the LLM was shown: episodes (id, start) and known facts (id, valid_at), in
    the order of their local numbers."""

    episodes: tuple[tuple[str, datetime], ...]
    facts: tuple[tuple[str, datetime | None], ...]


def parse_day(value: str) -> datetime:
    try:
        moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"valid_from {value[:30]!r} is not an ISO date") from None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def answer_model(shown: Shown) -> type[BaseModel]:
    n, m = len(shown.episodes), len(shown.facts)

    class Consolidation(BaseModel):
        actions: list[Action] = Field(default_factory=list, description="one per lasting fact; [] when nothing lasts")

        @model_validator(mode="after")
        def _check(self) -> Consolidation:
            targets: list[int] = []
            for i, a in enumerate(self.actions):
                where = f"action {i + 1} ({a.action})"
                if not 1 <= a.episode <= n:
                    raise ValueError(f"{where}: episode E{a.episode} was not shown (E1..E{n})")
                if a.action in ("new", "update"):
                    if not a.fact or not a.fact.strip():
                        raise ValueError(f"{where}: the fact's text is missing")
                    if len(a.fact) > 600:
                        raise ValueError(f"{where}: a fact is one sentence, at most 600 characters")
                    if a.category is None:
                        raise ValueError(f"{where}: the category is missing")
                    if a.valid_from:
                        parse_day(a.valid_from)
                if a.action == "new":
                    if a.target is not None:
                        raise ValueError(f"{where}: a new fact has no target")
                    continue
                if a.target is None or not 1 <= a.target <= m:
                    raise ValueError(
                        f"{where}: target F{a.target} was not shown (F1..F{m})"
                        if m
                        else f"{where}: no known facts were shown; only new facts are possible"
                    )
                targets.append(a.target)
                if a.action in ("update", "invalidate"):
                    ends = _start(a, shown)
                    began = shown.facts[a.target - 1][1]
                    if began is not None and ends < began:
                        raise ValueError(
                            f"{where}: F{a.target} would end ({ends:%Y-%m-%d}) before it began ({began:%Y-%m-%d})"
                        )
            twice = sorted({t for t in targets if targets.count(t) > 1})
            if twice:
                raise ValueError(
                    f"contradictory: known fact(s) {', '.join(f'F{t}' for t in twice)} acted on more than once"
                )
            return self

    Consolidation.__name__ = "Consolidation"
    return Consolidation


def _start(a: Action, shown: Shown) -> datetime:
    """When the action's fact became true (update, new) or the target stopped (invalidate)."""
    if a.action in ("new", "update") and a.valid_from:
        return parse_day(a.valid_from)
    return shown.episodes[a.episode - 1][1]


@dataclass(frozen=True)
class Step:
    kind: str  # "new" | "reinforce" | "update" | "invalidate"
    episode_id: str
    at: datetime  # new/update: valid from; invalidate: invalid from
    fact: str | None = None
    category: str | None = None
    target_id: str | None = None


@dataclass
class Plan:
    steps: list[Step] = field(default_factory=list)


def plan(answer: BaseModel, shown: Shown) -> Plan:
    """The validated answer with local numbers resolved to ids."""
    steps = []
    for a in answer.actions:  # type: ignore[attr-defined]  # the model answer_model built
        episode_id = shown.episodes[a.episode - 1][0]
        target = shown.facts[a.target - 1][0] if a.target else None
        text = " ".join(a.fact.split()) if a.fact else None
        steps.append(Step(a.action, episode_id, _start(a, shown), text, a.category, target))
    return Plan(steps)
