"""Turn a closed segment (a ``Segment``, as stored in Redis by segmentation) into an episode row:
title and summary (LLM when configured and working, else extractive), the episode's
vector (its messages' mean, blended with an LLM summary's embedding), tools used, and
the initial FSRS state."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import datetime

import numpy as np
import structlog

from memq.shared.db.episodes import EpisodeRow
from memq.shared.embeddings import Embedder, episode_vector, summary_is_embedded
from memq.shared.llm import LLMError
from memq.shared.mailbox.segment import Segment
from memq.shared.messages import indexed_text
from memq.shared.settings import Settings
from memq.worker.episodes.extractive import episode_phrases, extractive_summary, extractive_title
from memq.worker.episodes.fsrs_card import initial_memory
from memq.worker.episodes.llm_summary import llm_title_and_summary
from memq.worker.episodes.tools_used import tools_used

log = structlog.get_logger("memq.episodes")


def build_episode(
    segment: Segment, settings: Settings, embedder: Embedder, known: Mapping[str, np.ndarray] | None = None
) -> EpisodeRow:
    """The episode of all of ``segment``'s messages, its id the segment's.

    ``known``: message id -> the embedding segmentation already computed for it (the same
    text, ``indexed_text``, the same model); only the other messages are embedded here,
    and an LLM's summary (``summary_is_embedded``). The episode's vector is
    its messages' mean, blended with that summary's (``episode_vector``); the extractive
    title and summary weigh messages by them."""
    messages = segment.messages
    overlap = segment.overlap
    tools = tools_used(messages)

    known = known or {}
    missing = [m for m in messages if m["id"] not in known]
    vectors = list(embedder.embed([indexed_text(m) for m in missing])) if missing else []
    fresh = dict(zip((m["id"] for m in missing), vectors, strict=True))
    message_embeddings = np.stack([known[m["id"]] if m["id"] in known else fresh[m["id"]] for m in messages])

    source, model, error = "extractive", None, None
    if settings.llm_enabled:
        try:
            title, summary, model = llm_title_and_summary(settings, messages, overlap, tools)
            source = "llm"
        except LLMError as exc:
            error = str(exc)[:500]
            log.warning("summary_fallback_extractive", episode_id=segment.id, error=":".join(error.split(":")[:2]))
    if source == "extractive":
        phrases = episode_phrases(messages, message_embeddings)
        title = extractive_title(
            messages, settings.extractive_title_min_words, settings.extractive_title_max_words, phrases=phrases
        )
        summary = extractive_summary(messages, settings.summary_max_sentences, tools, phrases=phrases)

    summary_vector = embedder.embed([summary])[0] if summary_is_embedded(source, len(messages)) else None
    embedding = episode_vector(summary_vector, message_embeddings, settings.episode_summary_weight)
    start_at = datetime.fromisoformat(messages[0]["timestamp"])
    end_at = datetime.fromisoformat(messages[-1]["timestamp"])
    surprise = segment.surprise
    memory = initial_memory(
        uuid.UUID(segment.id).int >> 65,
        end_at,
        surprise,
        boost=settings.surprise_stability_boost,
        desired_retention=settings.desired_retention,
    )
    return EpisodeRow(
        id=segment.id,
        tenant_id=segment.tenant,
        conversation_id=segment.conversation_id,
        messages=messages,
        first_seq=messages[0]["seq"],
        last_seq=messages[-1]["seq"],
        title=title,
        summary=summary,
        embedding=embedding,
        stability=memory.stability,
        difficulty=memory.difficulty,
        fsrs_card=memory.card,
        surprise=surprise,
        boundary_reason=segment.reason,
        boundary_source=segment.source,
        detector=segment.detector,
        summary_source=source,
        summary_model=model,
        summary_error=error,
        embedding_model=embedder.name,
        start_at=start_at,
        end_at=end_at,
        tools_used=tools,
        overlap=overlap,
        token_count=segment.token_count,
        message_embeddings=message_embeddings,
    )
