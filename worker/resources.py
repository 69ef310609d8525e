"""Per-process resources of a worker: Redis client and scripts, the embedder, the
detector. Built lazily after Celery forks its pool processes, once per process."""

from __future__ import annotations

import functools
import os

import redis

from shared.connections import redis_client
from shared.embeddings import Embedder, get_embedder
from shared.mailbox.scripts import Scripts
from shared.settings import Settings, get_settings
from worker.conversation_store import ConversationStore
from worker.segmentation.detectors.base import Detector
from worker.segmentation.detectors.registry import build_detector


@functools.lru_cache(maxsize=4)
def _redis(pid: int, settings: Settings) -> tuple[redis.Redis, Scripts]:
    client = redis_client(settings)
    return client, Scripts.register(client)


def settings() -> Settings:
    return get_settings()


def store(tenant: str, conversation_id: str) -> ConversationStore:
    s = settings()
    client, scripts = _redis(os.getpid(), s)
    return ConversationStore(client, scripts, s, tenant, conversation_id)


def redis_and_scripts() -> tuple[redis.Redis, Scripts]:
    return _redis(os.getpid(), settings())


def embedder() -> Embedder:
    return get_embedder(settings())


@functools.lru_cache(maxsize=8)
def _detector(settings: Settings, name: str, llm: str | None) -> Detector:
    return build_detector(settings, name, embed_text=lambda text: embedder().embed([text])[0])


def detector() -> Detector:
    s = settings()
    return _detector(s, s.detector, s.llm_model)
