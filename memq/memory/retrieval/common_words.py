"""The words of a query that say nothing of which memory is meant (pure).

Full-text ranking in PostgreSQL (``ts_rank_cd``) has no corpus statistics: a word that
half the searched messages hold ("time", "go", "recommend" in a user's chats with an
assistant) counts as much as the one rare word that picks the answer out, and the
lexical legs fill with long messages that hold several common words. BM25 weighs each
word by how few documents hold it (inverse document frequency); here the same idea as a
cut: a query word held by more than ``MEMQ_LEXICAL_COMMON_SHARE`` of the searched scope's
messages is left out of the lexical legs (the query vector still reads every word).
Measured on LongMemEval (docs/evaluation.md): evidence recall at 1,000 tokens 0.828 ->
0.855, session NDCG@10 0.928 -> 0.936; on LoCoMo, recall at 250 / 1,000 tokens no worse.

A word's counts come from ``legs.word_counts`` (its lexemes' document frequencies in the
scope, counted only up to the share, so a common word costs a bounded read).
"""

from __future__ import annotations

from collections.abc import Sequence

MIN_COMMON = 5  # a word held by fewer messages than this is never common (a small scope's counts are noise)


def informative_text(counted: Sequence[tuple[str, Sequence[int]]], total: int, share: float) -> str | None:
    """The query's words (``counted``: each word in order with its lexemes' document counts
    in the scope; a stop word has none) without those held by more than ``share`` of the
    scope's ``total`` messages, as the text the lexical legs search by; None when no word is
    common, or when nothing but common words would be left (the query is searched as it is)."""
    if share <= 0 or total <= 0:
        return None
    limit = max(share * total, MIN_COMMON)
    common = [bool(counts) and all(c > limit for c in counts) for _, counts in counted]
    if not any(common):
        return None
    left = [(word, counts) for (word, counts), dropped in zip(counted, common) if not dropped]
    if not any(counts for _, counts in left):
        return None
    return " ".join(word for word, _ in left)
