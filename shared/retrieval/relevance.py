"""How relevant each message of the retrieved episodes is, and the priority it competes
for the token budget with (pure).

A message's own relevance is the RRF of its ranks in the message legs (0 when no leg
ranked it), plus ``speaker_weight / (k + 1)`` when a participant the query names said it.
Within an episode a message next to a relevant one shares ``neighbour_bonus`` of that
one's relevance (the answer after a question, the question before an answer). An
episode's *density* is the sum of its ``density_top`` highest own relevances: an episode
where several messages match is about the query, and each of its messages gains
``density_weight`` x that. Then

    priority = (relevance + (density_weight x density + episode_weight x episode rrf)
                            x retrievability) x time boost

``retrievability`` being the episode's FSRS retrievability raised to
``MEMQ_RETRIEVABILITY_WEIGHT``. Measured on LoCoMo (``memq eval-locomo --ablations``):
scaling a message's own relevance by its episode's retrievability too buried old
memories (recall at 1,000 tokens 0.80 -> 0.71 on sessions months old); see the README.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

Key = tuple[str, int]  # (episode id, seq)


@dataclass(frozen=True)
class RelevanceParams:
    k: float = 60.0
    neighbour_bonus: float = 0.8
    speaker_weight: float = 0.3
    density_weight: float = 0.15
    density_top: int = 3
    episode_weight: float = 0.1


@dataclass
class Relevance:
    score: float  # relevance after the speaker match and neighbours, before the episode's terms
    own: float = 0.0  # before neighbours
    ranks: dict[str, int] = field(default_factory=dict)  # "vector" / "lexical" -> 1-based rank
    speaker_match: bool = False


def message_relevance(
    keys: Sequence[Key],
    ranks: Mapping[str, Mapping[Key, int]],
    p: RelevanceParams,
    speakers: Sequence[str | None] | None = None,
    named: Collection[str] = (),
) -> dict[Key, Relevance]:
    """``keys``: the messages to score, (episode id, seq); a message's neighbours are seq - 1
    and seq + 1 of the same episode, when among ``keys``. ``ranks``: message leg -> key
    -> rank; ``speakers`` aligned with ``keys``."""
    mine: dict[Key, dict[str, int]] = {}
    for leg, ranked in ranks.items():
        name = leg.removeprefix("message_")
        for key, rank in ranked.items():
            mine.setdefault(key, {})[name] = rank
    k = p.k
    bonus = p.speaker_weight / (k + 1)
    own: dict[Key, float] = {}
    matched: set[Key] = set()
    for i, key in enumerate(keys):
        legs_ = mine.get(key)
        s = sum(1.0 / (k + r) for r in legs_.values()) if legs_ else 0.0
        if named and speakers is not None and speakers[i] in named:
            s += bonus
            matched.add(key)
        own[key] = s
    out: dict[Key, Relevance] = {}
    nb = p.neighbour_bonus
    for key, s in own.items():
        episode, seq = key
        best = max(s, nb * own.get((episode, seq - 1), 0.0), nb * own.get((episode, seq + 1), 0.0))
        out[key] = Relevance(best, s, mine.get(key, {}), key in matched)
    return out


def episode_density(relevance: Mapping[Key, Relevance], top: int) -> dict[str, float]:
    """Per episode: the sum of its ``top`` highest own message relevances (neighbours'
    shares left out, so one strong message does not count three times)."""
    per: dict[str, list[float]] = defaultdict(list)
    for (episode_id, _), r in relevance.items():
        per[episode_id].append(r.own)
    return {e: sum(sorted(v, reverse=True)[:top]) for e, v in per.items()}


def priority(relevance: float, density: float, episode_rrf: float, retrievability: float, time_boost: float,
             p: RelevanceParams) -> float:
    """What a message competes for the budget with. ``retrievability`` (FSRS, raised to
    its weight) scales the episode's terms only, so an old memory's best message still
    comes back when it is what the query asks for, while among episodes that match
    alike the fresher one leads; a time the query names scales everything."""
    return (relevance + (p.density_weight * density + p.episode_weight * episode_rrf) * retrievability) * time_boost
