"""How relevant each message of the retrieved episodes is, and the priority it competes
for the token budget with (pure).

A message's relevance is the RRF of its ranks in the message legs (0 when no leg ranked
it; ``k`` is ``MEMQ_MESSAGE_RRF_K``, smaller than the episodes' 60, so that a message ranked
first stays clearly ahead of one ranked fiftieth plus its episode's terms), or, when
larger, ``neighbour_bonus`` of that of the message just before or after it in its episode
(the answer after a question, the question before an answer), plus ``speaker_weight / (k
+ 1)`` when a participant the query names said it. The name is the speaker's own: a
neighbour does not share it (in a dialogue the message next to one by the named
participant is usually by someone else, and "what does Melanie do to destress?" is
answered by what Melanie said). An episode's *density* is the sum of its ``density_top``
highest own relevances (RRF and name, no neighbour's share): an episode where several
messages match is about the query, and each of its messages gains ``density_weight`` x
that, counted over the episode's sitting (``sittings.py``: the episodes around it with no
pause between them; ``MEMQ_EPISODE_DENSITY_SCOPE``), so that how finely a stretch of talk
was cut does not decide what is found in it. Then

    priority = (relevance + density_weight x density + episode_weight x episode rrf)
               x time boost

FSRS decay is not in it: decay orders the episodes (which of them a retrieval's limit
keeps, the order they are shown in, an episode shown as its summary alone), never a
message's place in the budget. Measured on LoCoMo (``memq eval-locomo --ablations``,
docs/evaluation.md): scaling a message's own relevance by its episode's retrievability
buried old memories (recall at 1,000 tokens 0.80 -> 0.71 on sessions months old), and
even scaling only the episode's terms (before 2026-12) lost a question or two at some
budget to no decay at all; sharing the name with neighbours (before 2026-12) cost recall
at every budget.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class RelevanceParams:
    k: float = 25.0  # MEMQ_MESSAGE_RRF_K
    neighbour_bonus: float = 0.9
    speaker_weight: float = 0.3
    density_weight: float = 0.15
    density_top: int = 3
    episode_weight: float = 0.1


@dataclass(frozen=True)
class EpisodeRelevance:
    """One episode's messages, aligned with the ``seqs`` they were scored for."""

    scores: list[float]  # relevance after the speaker match and neighbours, before the episode's terms
    ranks: list[Mapping[str, int]]  # "vector" / "lexical" -> 1-based rank in the message legs
    speaker_match: list[bool]
    top: list[float]  # the ``density_top`` highest own relevances, highest first (neighbours' shares left out)

    @property
    def density(self) -> float:
        """The episode's own density: the sum of ``top`` (a sitting's pools its episodes')."""
        return sum(self.top)


def episode_relevance(
    seqs: Sequence[int],
    ranks: Mapping[int, Mapping[str, int]],
    p: RelevanceParams,
    speakers: Sequence[str | None] | None = None,
    named: Collection[str] = (),
) -> EpisodeRelevance:
    """Score the messages ``seqs`` of one episode. ``ranks``: seq -> its ranks in the
    message legs ("vector" / "lexical" -> rank; absent when no leg ranked it);
    ``speakers`` aligned with ``seqs``. A message's neighbours are seq - 1 and seq + 1,
    when among ``seqs``."""
    k = p.k
    bonus = p.speaker_weight / (k + 1)
    check_speaker = bool(named) and speakers is not None
    found_by_legs: dict[int, float] = {}  # seq -> the RRF of its ranks
    own: list[float] = []  # aligned with seqs: that and the name
    found: list[Mapping[str, int]] = []
    matched: list[bool] = []
    for i, seq in enumerate(seqs):
        mine = ranks.get(seq) or {}
        s = 0.0
        for rank in mine.values():
            s += 1.0 / (k + rank)
        found_by_legs[seq] = s
        match = check_speaker and speakers is not None and speakers[i] in named  # check_speaker: speakers given
        own.append(s + bonus if match else s)
        found.append(mine)
        matched.append(match)
    nb = p.neighbour_bonus
    scores = [
        max(found_by_legs[seq], nb * found_by_legs.get(seq - 1, 0.0), nb * found_by_legs.get(seq + 1, 0.0))
        + (bonus if match else 0.0)
        for seq, match in zip(seqs, matched)
    ]
    top = sorted(own, reverse=True)[: p.density_top]
    return EpisodeRelevance(scores, found, matched, top)


def pooled_density(tops: Sequence[Sequence[float]], p: RelevanceParams) -> float:
    """The density of episodes counted together (a sitting): the sum of the ``density_top``
    highest own relevances among all their messages, from each episode's ``top``."""
    return sum(sorted((x for top in tops for x in top), reverse=True)[: p.density_top])


def priorities(
    relevance: Sequence[float],
    density: float,
    episode_rrf: float,
    time_boost: float,
    p: RelevanceParams,
) -> list[float]:
    """What an episode's messages compete for the budget with, from their ``relevance``:
    the episode's terms added, a time the query names scaling everything."""
    episode = p.density_weight * density + p.episode_weight * episode_rrf
    return [(r + episode) * time_boost for r in relevance]
