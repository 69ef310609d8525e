"""One model call for a drain's own messages and other conversations' waiting inbox fronts.

The model is the pipeline's bottleneck, and it is at its most efficient on many texts at
once (sorted by length, few and full batches: ``memq.shared.embedding_batches``). A drain
holds one conversation's messages: under live traffic one to a few new ones, under a
backlog at most ``MEMQ_EMBED_PREFETCH``. So before embedding its batch a drain also takes
the inbox fronts of up to ``MEMQ_EMBED_ACROSS_CONVERSATIONS`` texts of conversations that
wait for a drain and that no worker holds (``memq.worker.inbox_fronts``), embeds everything
in one call, and writes the others' vectors to their conversations' vector hashes, where
their own drains (``job.py``: the vectors cache is read before the model is called) and
their episode creation find them. Each message is still embedded once.

Nothing here decides anything about a conversation but which texts ride along: items are
claimed as they are read (two drains looking at once take different items; measured with
two pool processes on the bench's stream, without the claim up to 12 % of the texts were
embedded twice), a vector is written only while its exact inbox item is still at its inbox
front, a conversation whose own drain starts before the vectors come embeds the taken
items after its others and takes their vectors if they came by then (``job._embed_fresh``;
else it embeds them itself: done twice, never wrong), and a failure of the shared call, or
of reading and writing the others' fronts, falls back to the drain's own texts alone.

``take`` is the pure choice; ``embed`` the orchestration.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import structlog

from memq.shared.embeddings import Embedder
from memq.shared.mailbox.codec import QueuedMessage, decode_inbox_item
from memq.shared.metrics import metrics
from memq.shared.settings import Settings
from memq.worker import inbox_fronts
from memq.worker.conversation_store import ConversationStore
from memq.worker.failures import STOP
from memq.worker.inbox_fronts import Front

log = structlog.get_logger("memq.segmentation")

SHARDS_SCANNED = 8  # shards' drains indexes read per look for waiting conversations (of MEMQ_REDIS_SHARDS)
CONVERSATIONS = 16  # waiting conversations asked for their fronts (inbox_fronts.waiting shares the budget)


def take(fronts: Sequence[Front], budget: int) -> list[tuple[Front, list[tuple[str, QueuedMessage]]]]:
    """Each front's items in order, decoded (up to its first item that is not: the owner's
    drain reports that one, and what follows it waits behind it anyway), until ``budget``."""
    chosen: list[tuple[Front, list[tuple[str, QueuedMessage]]]] = []
    left = budget
    for front in fronts:
        items: list[tuple[str, QueuedMessage]] = []
        for raw in front.raws[:left]:
            try:
                items.append((raw, decode_inbox_item(raw)))
            except Exception:
                break
        if items:
            chosen.append((front, items))
            left -= len(items)
    return chosen


def embed(
    embedder: Embedder, texts: list[str], *, store: ConversationStore, settings: Settings, window: int
) -> np.ndarray:
    """The vectors of ``texts`` (a drain's own, in order), computed in one call with other
    conversations' waiting fronts (up to ``window`` items of each) when there are any.
    With no ``texts``, the others' fronts alone (``job._embed_fresh``: a drain whose own
    front another drain is embedding does the waiting fronts' work meanwhile)."""
    budget = settings.embed_across_conversations
    if budget <= 0 or not settings.carry_vectors:
        return embedder.embed(texts)
    try:
        fronts = inbox_fronts.waiting(
            store.client,
            store.scripts,
            settings,
            store.keys.member,
            shards=SHARDS_SCANNED,
            conversations=CONVERSATIONS,
            window=window,
            budget=budget,
            ttl_ms=store.state_ttl_ms,
        )
        riders = take(fronts, budget)
    except STOP:
        raise
    except Exception as exc:
        log.warning("co_embedding_skipped", stage="read", error=type(exc).__name__)
        riders = []
    if not riders:
        return embedder.embed(texts)
    other = [m.content for _, items in riders for _, m in items]
    try:
        vectors = embedder.embed(texts + other)
    except STOP:
        raise
    except Exception as exc:  # perhaps one of the others' texts: the drain's own alone decide
        log.warning("co_embedding_skipped", stage="embed", error=type(exc).__name__, texts=len(other))
        return embedder.embed(texts)
    at = len(texts)
    written = []
    for front, items in riders:
        written.append((front.keys, [(raw, m.id, vectors[at + i]) for i, (raw, m) in enumerate(items)]))
        at += len(items)
    try:
        kept = inbox_fronts.remember(store.client, store.scripts, store.state_ttl_ms, window, written)
    except STOP:
        raise
    except Exception as exc:
        log.warning("co_embedding_skipped", stage="write", error=type(exc).__name__)
        kept = 0
    metrics().co_embedded.labels(outcome="embedded").inc(len(other))
    metrics().co_embedded.labels(outcome="kept").inc(kept)
    log.debug("co_embedded", own=len(texts), others=len(other), conversations=len(riders), kept=kept)
    return vectors[: len(texts)]
