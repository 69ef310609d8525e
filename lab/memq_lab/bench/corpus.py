"""Bulk-loaded corpora for ``memq bench``: N stored messages written straight into
PostgreSQL with ``COPY`` (binary), not through the pipeline, in the rows the pipeline
writes (``shared/db/episodes.py``): ``episodic_memory``, ``episode_message`` and
``conversation``, every NOT NULL column filled as a worker would fill it.

Method (deterministic given the seed, the size and the utterance pool):

- **Tenants**: ``TENANTS`` of them (fewer for tiny corpora), Zipf-like: tenant i holds a
  share proportional to 1/i^``TENANT_EXPONENT`` (the largest ~25%, the five largest over
  half), each at least one episode's worth.
- **Conversations**: a tenant's messages are cut into about one conversation per
  ``CONVERSATION_MEAN`` messages, sized by log-normal weights (sigma
  ``CONVERSATION_SIGMA``): most are a few dozen to a few hundred messages, a few run to
  thousands.
- **Episodes**: consecutive runs of ``EPISODE_MIN``-``EPISODE_MAX`` messages (about 20),
  as segmentation would cut them; episodes of a conversation are spread over its life
  (30-400 days before ``NOW``), messages 5-90 s apart inside an episode.
- **Text**: real dialogue. A conversation reads the utterance pool (``texts.utterances``:
  LoCoMo, TIAGE, SuperDialseg turns in their order) from a random offset, so its
  messages are consecutive real turns with their real roles; a pool utterance recurs
  about N / pool size times across the corpus. Titles and summaries are the pipeline's
  own extractive ones, made from each episode's messages; FSRS fields come from the
  pipeline's ``initial_memory``; episode ids from ``episode_id_for``.
- **Vectors**: the pool is embedded once with the configured model (MiniLM, cached on
  disk with ``evaluation.embedding_cache``); a message's vector is its utterance's
  vector plus ``PARTNER_WEIGHT`` (0.6) times the vector of another pool utterance drawn
  at random (``partnered``), plus Gaussian noise of norm ~``NOISE`` (0.25),
  renormalised: cosine ~0.84 to its own utterance, and two copies of one utterance
  (which recurs about N / pool size times) ~0.73 apart, as close as a real utterance and
  its nearest real neighbour typically are (median 0.73 in the pool). Noise alone would
  leave the copies ~0.94 apart: tight clusters of near-copies no real corpus has, which
  fill HNSW's neighbour lists. An episode's vector is the normalised mean of its
  utterances' real vectors, as the pipeline makes it for an extractive summary
  (``episode_vector``), plus ``EPISODE_PARTNER_WEIGHT`` (0.3) times the centred mean of a
  random window of 20 pool utterances, plus the same noise (``episode_partnered``): two
  random episodes ~0.27 apart and nearest neighbours ~0.80, as real windows of 20
  consecutive utterances are (~0.27, ~0.81). The mean of the messages' partnered vectors
  would carry the partners' common mean, the same for every episode, and put every
  episode near every other (~0.50), where an HNSW search can stay in a wrong cluster.

Tenants are named ``bench-corpus-<size>-<key>-tNN`` (``key``: a digest of the format
version, size, seed and pool), so a loaded corpus is recognised and reused (its
``conversation`` rows, written in the load's transaction, say it is complete). The
tables hold one bench corpus at a time: loading one removes any other (the HNSW
indexes are one per table, so a kept 1M corpus would turn a 10k measurement into a
1M one). ``cleanup`` removes them all; nothing else is touched.

Loading: one transaction, ``COPY ... (FORMAT BINARY)`` of episodes, then messages, then
conversations. Up to ``REBUILD_AT`` messages the rows go into the existing indexes;
from there the HNSW and GIN indexes of both tables are dropped and re-created in the
same transaction from their own definitions (``pg_indexes``), which is much faster than
inserting into them row by row, but holds the tables' lock: other sessions wait until
the load commits. ``VACUUM (ANALYZE)`` follows.

Removing a corpus larger than what the tables keep is followed by ``VACUUM FULL`` of the
two tables (``compact``): a plain ``VACUUM`` repairs the HNSW graphs around every deleted
row (505 s after removing the 100k corpus from under a 10k one, over 20 minutes for 1M),
and leaves the tables and indexes at their old size, which the resources family then
divided by a tenth of the rows (49 kB per message). Rewriting the small remainder and
building its indexes anew takes seconds. When the tables are in use, so that their lock is
not had within ``LOCK_WAIT``, the plain ``VACUUM`` runs instead.
"""

from __future__ import annotations

import functools
import hashlib
import math
import os
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from multiprocessing import get_context
from typing import Any

import numpy as np
import psycopg
from psycopg.types.json import Jsonb

from memq.shared.embeddings import episode_vector
from memq.worker.conversation_store import episode_id_for
from memq.worker.episodes.extractive import extractive_summary, extractive_title
from memq.worker.episodes.fsrs_card import initial_memory
from memq.worker.episodes.tools_used import tools_used
from memq_lab.bench.sql import one_row

VERSION = 3  # 2: messages' vectors partnered (``partnered``); 3: episodes' too (``episode_partnered``)
PREFIX = "bench-corpus-"
NOW = datetime(2026, 12, 1, tzinfo=UTC)  # the corpus is as of this moment; queries are asked at it
TENANTS = 60
TENANT_EXPONENT = 1.1
CONVERSATION_MEAN = 300  # messages
CONVERSATION_SIGMA = 1.2
EPISODE_MIN, EPISODE_MAX = 10, 30
NOISE = 0.25
PARTNER_WEIGHT = 0.6
EPISODE_PARTNER_WEIGHT = 0.3
PARTNER_WINDOW = 20  # utterances whose mean partners an episode
REBUILD_AT = 50_000  # messages loaded at once from which the HNSW and GIN indexes are rebuilt
PARALLEL_TEXTS_AT = 4_000  # episodes from which titles and summaries are made in worker processes

Progress = Callable[[str], None]


# ---------------------------------------------------------------------------------------
# pure: sizes and the plan


def apportion(total: int, weights: Sequence[float] | np.ndarray, minimum: int = 0) -> list[int]:
    """``total`` split in proportion to ``weights`` (largest remainders), each part at
    least ``minimum``; parts sum to ``total`` exactly."""
    n = len(weights)
    if n == 0:
        raise ValueError("no weights")
    if total < n * minimum:
        raise ValueError(f"{total} cannot give {n} parts of at least {minimum}")
    w = np.asarray(weights, dtype=np.float64)
    raw = (total - n * minimum) * w / w.sum()
    parts = np.floor(raw).astype(np.int64)
    short = int(total - n * minimum - parts.sum())
    order = sorted(range(n), key=lambda i: (-(raw[i] - parts[i]), i))
    for i in order[:short]:
        parts[i] += 1
    return [int(p) + minimum for p in parts]


def tenant_count(total: int) -> int:
    """``TENANTS``, fewer when the corpus is too small to give each a few episodes."""
    return max(1, min(TENANTS, total // (4 * EPISODE_MIN)))


def tenant_sizes(total: int, tenants: int, exponent: float = TENANT_EXPONENT) -> list[int]:
    """Messages per tenant, largest first: tenant i's share ~ 1/i^exponent, each at least
    one episode's worth (``EPISODE_MIN``)."""
    return apportion(total, [1.0 / (i**exponent) for i in range(1, tenants + 1)], EPISODE_MIN)


def episode_sizes(messages: int, rng: np.random.Generator) -> list[int]:
    """A conversation's messages cut into consecutive episodes of ``EPISODE_MIN`` to
    ``EPISODE_MAX`` messages (one shorter episode when the conversation is)."""
    out: list[int] = []
    left = messages
    while left > 0:
        if left <= EPISODE_MAX:
            out.append(left)
            break
        size = int(rng.integers(EPISODE_MIN, EPISODE_MAX + 1))
        if left - size < EPISODE_MIN:
            size = left - EPISODE_MIN
        out.append(size)
        left -= size
    return out


@dataclass(frozen=True)
class ConversationPlan:
    tenant: int  # index, 0 = the largest tenant
    index: int  # within the tenant
    messages: int
    episodes: tuple[int, ...]  # sizes, in order
    pool_start: int  # the utterance its first message reads
    span_days: float  # how long before NOW it started

    @property
    def conversation_id(self) -> str:
        return f"conv-{self.tenant:03d}-{self.index:05d}"


@dataclass(frozen=True)
class CorpusPlan:
    messages: int
    seed: int
    key: str  # identifies the corpus: format version, size, seed, pool
    tenants: tuple[int, ...]  # messages per tenant, largest first
    conversations: tuple[ConversationPlan, ...]

    def tenant_id(self, index: int) -> str:
        return f"{PREFIX}{self.messages}-{self.key}-t{index:02d}"

    @property
    def tenant_ids(self) -> list[str]:
        return [self.tenant_id(i) for i in range(len(self.tenants))]

    @property
    def episodes(self) -> int:
        return sum(len(c.episodes) for c in self.conversations)


def pool_digest(texts: Sequence[str]) -> str:
    digest = hashlib.sha256()
    for t in texts:
        digest.update(t.encode() + b"\x00")
    return digest.hexdigest()[:16]


def plan(messages: int, seed: int, pool_size: int, pool_id: str = "") -> CorpusPlan:
    """Tenants, conversations and episodes of a corpus of ``messages`` stored messages."""
    if messages < EPISODE_MIN:
        raise ValueError(f"a corpus needs at least {EPISODE_MIN} messages")
    rng = np.random.default_rng([seed, messages, VERSION])
    sizes = tenant_sizes(messages, tenant_count(messages))
    conversations = []
    for t, held in enumerate(sizes):
        count = max(1, min(round(held / CONVERSATION_MEAN), held // EPISODE_MIN))
        weights = rng.lognormal(0.0, CONVERSATION_SIGMA, count)
        for c, n in enumerate(apportion(held, weights, EPISODE_MIN)):
            conversations.append(
                ConversationPlan(
                    tenant=t,
                    index=c,
                    messages=n,
                    episodes=tuple(episode_sizes(n, rng)),
                    pool_start=int(rng.integers(pool_size)),
                    span_days=float(rng.uniform(30, 400)),
                )
            )
    key = hashlib.sha256(f"{VERSION}:{messages}:{seed}:{pool_size}:{pool_id}".encode()).hexdigest()[:8]
    return CorpusPlan(messages, seed, key, tuple(sizes), tuple(conversations))


# ---------------------------------------------------------------------------------------
# pure: rows


@dataclass(frozen=True)
class Pool:
    """The real utterances the corpus is made of, with their token counts and vectors."""

    texts: tuple[str, ...]
    roles: tuple[str, ...]
    tokens: np.ndarray  # int, per utterance
    vectors: np.ndarray  # float32 (n, dim), unit length
    embedding_model: str

    def __len__(self) -> int:
        return len(self.texts)

    @functools.cached_property
    def centre(self) -> np.ndarray:
        """The mean of the pool's vectors."""
        centre: np.ndarray = self.vectors.mean(axis=0)
        return centre


def noisy(vectors: np.ndarray, rng: np.random.Generator, noise: float = NOISE) -> np.ndarray:
    """Each row plus Gaussian noise of expected norm ``noise``, renormalised."""
    dim = vectors.shape[1]
    out = vectors + rng.standard_normal(vectors.shape, dtype=np.float32) * np.float32(noise / math.sqrt(dim))
    out /= np.linalg.norm(out, axis=1, keepdims=True)
    return out.astype(np.float32, copy=False)


def partnered(
    vectors: np.ndarray, pool: np.ndarray, rng: np.random.Generator, weight: float = PARTNER_WEIGHT
) -> np.ndarray:
    """Each row plus ``weight`` times a row of ``pool`` drawn at random, renormalised: a
    vector still nearest its own utterance's direction, but different for every copy of
    it, within the space real embeddings span (not isotropic noise)."""
    partners = pool[rng.integers(len(pool), size=len(vectors))]
    out = vectors + np.float32(weight) * partners
    out /= np.linalg.norm(out, axis=1, keepdims=True)
    return out.astype(np.float32, copy=False)


def episode_partnered(
    vectors: np.ndarray, pool: Pool, rng: np.random.Generator, weight: float = EPISODE_PARTNER_WEIGHT
) -> np.ndarray:
    """Each episode vector plus ``weight`` times the centred mean of a window of
    ``PARTNER_WINDOW`` pool utterances drawn at random (the window's mean less the pool's,
    renormalised), renormalised. The mean of an episode's partnered message vectors
    (``partnered``, version 2) carried the partners' mean, the same for every episode:
    two random episodes were ~0.50 apart where two real ones (windows of 20 consecutive
    pool utterances) are ~0.27. A centred partner varies each copy of a window without
    that shared part: sampled as many as the pool has windows, episodes and their nearest
    neighbours are as far apart as real ones (cosine ~0.27 / ~0.80, real 0.27 / 0.81)."""
    n = len(pool)
    starts = rng.integers(n, size=len(vectors))
    windows = pool.vectors[(starts[:, None] + np.arange(PARTNER_WINDOW)[None, :]) % n].mean(axis=1) - pool.centre
    windows /= np.linalg.norm(windows, axis=1, keepdims=True)
    out = vectors + np.float32(weight) * windows
    out /= np.linalg.norm(out, axis=1, keepdims=True)
    return out.astype(np.float32, copy=False)


@dataclass(frozen=True)
class ConversationData:
    """A planned conversation's messages: what every row of it is made from."""

    utterances: np.ndarray  # pool index per message
    timestamps: list[datetime]
    message_ids: list[str]
    bounds: list[tuple[int, int]]  # (first, last) message index per episode, inclusive

    def vectors(self, plan_: ConversationPlan, pool: Pool, seed: int) -> np.ndarray:
        """The messages' vectors (drawn from their own stream: the same every time)."""
        rng = np.random.default_rng([seed, plan_.tenant, plan_.index, 1])
        return noisy(partnered(pool.vectors[self.utterances], pool.vectors, rng), rng)

    def episode_vectors(self, plan_: ConversationPlan, pool: Pool, seed: int) -> np.ndarray:
        """The episodes' vectors, one per ``bounds`` (their own stream): each episode's
        vector as the pipeline makes it (``episode_vector``, the mean of its messages'), of
        its utterances' real vectors, then partnered (``episode_partnered``) and noisy."""
        rng = np.random.default_rng([seed, plan_.tenant, plan_.index, 3])
        own = np.stack([episode_vector(None, pool.vectors[self.utterances[a : b + 1]], 0.0) for a, b in self.bounds])
        return noisy(episode_partnered(own, pool, rng), rng)


def conversation_data(c: ConversationPlan, pool: Pool, seed: int, now: datetime = NOW) -> ConversationData:
    rng = np.random.default_rng([seed, c.tenant, c.index, 0])
    utterances = (c.pool_start + np.arange(c.messages)) % len(pool)
    span = c.span_days * 86_400.0
    slot = span / len(c.episodes)
    start = now - timedelta(seconds=span)
    timestamps: list[datetime] = []
    bounds = []
    first = 0
    for i, size in enumerate(c.episodes):
        gaps = rng.uniform(5.0, 90.0, size)
        gaps[0] = 0.0
        scale = min(1.0, 0.5 * slot / max(1.0, float(gaps.sum())))
        at = i * slot + rng.uniform(0.0, 0.3 * slot) + np.cumsum(gaps * scale)
        timestamps += [start + timedelta(seconds=round(float(s), 3)) for s in at]
        bounds.append((first, first + size - 1))
        first += size
    raw = rng.bytes(16 * c.messages).hex()
    ids = [raw[32 * i : 32 * (i + 1)] for i in range(c.messages)]
    return ConversationData(utterances, timestamps, ids, bounds)


def message_dicts(data: ConversationData, pool: Pool, first: int, last: int) -> list[dict[str, Any]]:
    """Messages ``first``..``last`` as a segment holds them (and ``episodic_memory.messages``)."""
    return [
        {
            "id": data.message_ids[i],
            "seq": i + 1,
            "role": pool.roles[int(data.utterances[i])],
            "content": pool.texts[int(data.utterances[i])],
            "timestamp": data.timestamps[i].isoformat(),
        }
        for i in range(first, last + 1)
    ]


def episode_text(messages: Sequence[dict[str, Any]]) -> tuple[str, str]:
    """Title and summary as the pipeline makes them without an LLM (default settings)."""
    return extractive_title(messages), extractive_summary(messages, 4, tools_used(messages))


EPISODE_COLUMNS = (
    "id, tenant_id, conversation_id, messages, message_count, first_seq, last_seq, title, summary, embedding, "
    "stability, difficulty, fsrs_card, surprise, boundary_reason, boundary_source, detector, summary_source, "
    "summary_model, summary_error, embedding_model, tools_used, overlap, token_count, start_at, end_at, created_at, "
    "last_reviewed_at, consolidated_at"
)
EPISODE_TYPES = [
    "uuid",
    "text",
    "text",
    "jsonb",
    "int4",
    "int8",
    "int8",
    "text",
    "text",
    "vector",
    "float8",
    "float8",
    "jsonb",
    "float8",
    "text",
    "text",
    "text",
    "text",
    "text",
    "text",
    "text",
    "jsonb",
    "jsonb",
    "int4",
    "timestamptz",
    "timestamptz",
    "timestamptz",
    "timestamptz",
    "timestamptz",
]
MESSAGE_COLUMNS = (
    "tenant_id, conversation_id, seq, message_id, episode_id, role, content, ts, sent_at, metadata, speaker, embedding"
)
MESSAGE_TYPES = [
    "text",
    "text",
    "int8",
    "text",
    "uuid",
    "text",
    "text",
    "timestamptz",
    "timestamptz",
    "jsonb",
    "text",
    "vector",
]
CONVERSATION_COLUMNS = (
    "tenant_id, conversation_id, fence, last_seq, last_message_at, message_count, episode_count, synced_at, "
    "created_at, updated_at"
)
CONVERSATION_TYPES = [
    "text",
    "text",
    "int4",
    "int8",
    "timestamptz",
    "int8",
    "int4",
    "timestamptz",
    "timestamptz",
    "timestamptz",
]


def _boundary(rng: np.random.Generator, last: bool) -> tuple[str, str]:
    if last:
        return ("inactivity", "flush") if rng.random() < 0.7 else ("flush", "flush")
    draw = rng.random()
    if draw < 0.8:
        return "time_gap", "rules"
    return ("token_boundary", "rules") if draw < 0.9 else ("time_boundary", "rules")


def episode_rows(
    c: ConversationPlan,
    tenant: str,
    data: ConversationData,
    episode_vectors: np.ndarray,
    pool: Pool,
    texts: Sequence[tuple[str, str]],
    seed: int,
    *,
    boost: float = 0.5,
    retention: float = 0.9,
    now: datetime = NOW,
) -> list[tuple[Any, ...]]:
    """The conversation's ``episodic_memory`` rows (``EPISODE_COLUMNS``); ``texts``: each
    episode's (title, summary); ``episode_vectors``: each episode's vector
    (``ConversationData.episode_vectors``)."""

    rng = np.random.default_rng([seed, c.tenant, c.index, 2])
    rows = []
    previous: list[dict[str, Any]] = []
    for i, ((first, last), (title, summary)) in enumerate(zip(data.bounds, texts, strict=True)):
        messages = message_dicts(data, pool, first, last)
        episode_id = episode_id_for(tenant, c.conversation_id, first + 1, last + 1)
        surprise = float(rng.uniform(0.55, 1.0) if rng.random() < 0.03 else rng.uniform(0.0, 0.2))
        start_at, end_at = data.timestamps[first], data.timestamps[last]
        memory = initial_memory(
            uuid.UUID(episode_id).int >> 65, end_at, surprise, boost=boost, desired_retention=retention
        )
        reason, source = _boundary(rng, i == len(data.bounds) - 1)
        created = min(now, end_at + timedelta(seconds=float(rng.uniform(60, 1800))))
        rows.append(
            (
                uuid.UUID(episode_id),
                tenant,
                c.conversation_id,
                Jsonb(messages),
                len(messages),
                first + 1,
                last + 1,
                title,
                summary,
                episode_vectors[i],
                memory.stability,
                memory.difficulty,
                Jsonb(memory.card),
                surprise,
                reason,
                source,
                "rules",
                "extractive",
                None,
                None,
                pool.embedding_model,
                Jsonb(tools_used(messages)),
                Jsonb(previous[-2:]),
                int(pool.tokens[data.utterances[first : last + 1]].sum()) + 4 * len(messages),
                start_at,
                end_at,
                created,
                None,
                None,
            )
        )
        previous = messages
    return rows


def message_rows(
    c: ConversationData, plan_: ConversationPlan, tenant: str, vectors: np.ndarray, pool: Pool
) -> Iterator[tuple[Any, ...]]:
    """The conversation's ``episode_message`` rows (``MESSAGE_COLUMNS``)."""
    for first, last in c.bounds:
        episode_id = uuid.UUID(episode_id_for(tenant, plan_.conversation_id, first + 1, last + 1))
        for i in range(first, last + 1):
            u = int(c.utterances[i])
            yield (
                tenant,
                plan_.conversation_id,
                i + 1,
                c.message_ids[i],
                episode_id,
                pool.roles[u],
                pool.texts[u],
                c.timestamps[i],
                None,
                None,
                None,
                vectors[i],
            )


def conversation_row(
    c: ConversationPlan, tenant: str, first: datetime, last: datetime, updated: datetime
) -> tuple[Any, ...]:
    """The conversation's ``conversation`` row (``CONVERSATION_COLUMNS``): its fence never
    raised, ``updated``: when its last episode was written."""
    return (tenant, c.conversation_id, 0, c.messages, last, c.messages, len(c.episodes), None, first, updated)


# ---------------------------------------------------------------------------------------
# titles and summaries, in worker processes for big corpora

_worker_pool: tuple[tuple[str, ...], tuple[str, ...]] | None = None


def _init_worker(texts: tuple[str, ...], roles: tuple[str, ...]) -> None:
    global _worker_pool
    _worker_pool = (texts, roles)


def _texts_of(spans: list[tuple[int, int]]) -> list[tuple[str, str]]:
    """(title, summary) of episodes given as (pool start, size)."""
    assert _worker_pool is not None
    texts, roles = _worker_pool
    n = len(texts)
    out = []
    for start, size in spans:
        idx = [(start + j) % n for j in range(size)]
        out.append(episode_text([{"role": roles[i], "content": texts[i]} for i in idx]))
    return out


def all_episode_texts(corpus: CorpusPlan, pool: Pool) -> list[tuple[str, str]]:
    """Every episode's (title, summary), in plan order."""
    spans = []
    for c in corpus.conversations:
        offset = c.pool_start
        for size in c.episodes:
            spans.append((offset % len(pool), size))
            offset += size
    workers = min(4, os.cpu_count() or 1)
    if len(spans) < PARALLEL_TEXTS_AT or workers < 2:
        _init_worker(pool.texts, pool.roles)
        return _texts_of(spans)
    chunk = 500
    with ProcessPoolExecutor(
        workers, mp_context=get_context("spawn"), initializer=_init_worker, initargs=(pool.texts, pool.roles)
    ) as ex:
        parts = ex.map(_texts_of, [spans[i : i + chunk] for i in range(0, len(spans), chunk)])
        return [t for part in parts for t in part]


# ---------------------------------------------------------------------------------------
# the database


def make_pool(texts: Sequence[str], roles: Sequence[str], vectors: np.ndarray, embedding_model: str) -> Pool:
    from memq.shared.tokens import count_tokens

    vectors = np.asarray(vectors, dtype=np.float32)
    vectors = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    return Pool(
        tuple(texts),
        tuple(roles),
        np.array([count_tokens(t) for t in texts], dtype=np.int64),
        vectors,
        embedding_model,
    )


def held(conn: psycopg.Connection, corpus: CorpusPlan) -> tuple[int, int]:
    """(conversations, messages) of this corpus that PostgreSQL holds, by its ``conversation`` rows."""
    conversations, messages = one_row(
        conn,
        "SELECT count(*), coalesce(sum(message_count), 0) FROM conversation WHERE tenant_id = ANY(%s)",
        (corpus.tenant_ids,),
    )
    return int(conversations), int(messages)


def bench_tenants(conn: psycopg.Connection, keep: str | None = None) -> list[str]:
    """Tenants of bench corpora that PostgreSQL holds (but those of ``keep``, a corpus key)."""
    found = set()
    for table in ("conversation", "episodic_memory"):
        found |= {
            r[0]
            for r in conn.execute(f"SELECT DISTINCT tenant_id FROM {table} WHERE tenant_id LIKE %s", (PREFIX + "%",))
        }
    return sorted(t for t in found if keep is None or f"-{keep}-" not in t)


def remove(conn: psycopg.Connection, tenants: Sequence[str]) -> int:
    """Delete every row of these tenants (bench tenants only); the messages deleted."""
    if not tenants:
        return 0
    assert all(t.startswith(PREFIX) for t in tenants), "only bench corpora are removed"
    args = (list(tenants),)
    with conn.transaction():
        for table in ("pending_review", "memory_review", "semantic_fact_history", "semantic_fact"):
            conn.execute(f"DELETE FROM {table} WHERE tenant_id = ANY(%s)", args)
        messages = conn.execute("DELETE FROM episode_message WHERE tenant_id = ANY(%s)", args).rowcount
        for table in ("episodic_memory", "seq_gap", "conversation_participant", "conversation"):
            conn.execute(f"DELETE FROM {table} WHERE tenant_id = ANY(%s)", args)
    return messages


def cleanup(conn: psycopg.Connection) -> int:
    """Remove every bench corpus (the messages deleted)."""
    return remove(conn, bench_tenants(conn))


REBUILT = ("episodic_memory_embedding_hnsw", "episodic_memory_search_gin", "episode_message_embedding_hnsw",
           "episode_message_search_gin")  # fmt: skip


@dataclass(frozen=True)
class Loaded:
    corpus: CorpusPlan
    loaded: bool  # False: it was already there
    seconds: float
    removed: int  # messages of other bench corpora removed first


def load(
    conn: psycopg.Connection,
    messages: int,
    seed: int,
    pool: Pool,
    *,
    boost: float = 0.5,
    retention: float = 0.9,
    rebuild: bool | None = None,
    progress: Progress = lambda _: None,
) -> Loaded:
    """Make sure PostgreSQL holds the corpus of ``messages`` messages for ``seed`` and this
    pool (and no other bench corpus). ``conn``: autocommit. ``rebuild``: drop and re-create
    the HNSW and GIN indexes around the load (default: from ``REBUILD_AT`` messages; when
    the tables are in use, so that their lock is not had within ``LOCK_WAIT``, the rows go
    into the existing indexes instead). ``boost`` / ``retention``: the FSRS settings
    (``MEMQ_SURPRISE_STABILITY_BOOST``, ``MEMQ_DESIRED_RETENTION``)."""
    started = time.monotonic()
    corpus = plan(messages, seed, len(pool), pool_digest(pool.texts))
    removed = remove(conn, bench_tenants(conn, keep=corpus.key))
    if removed:
        progress(f"removed another bench corpus ({removed:,} messages)")
        compact(conn, removed, progress)
    if held(conn, corpus) == (len(corpus.conversations), messages):
        return Loaded(corpus, False, time.monotonic() - started, removed)
    removed += remove(conn, corpus.tenant_ids)  # a partial one, should there be one
    rebuild = messages >= REBUILD_AT if rebuild is None else rebuild
    t = time.monotonic()
    texts = all_episode_texts(corpus, pool)
    progress(f"{corpus.episodes:,} titles and summaries in {time.monotonic() - t:.0f} s")
    try:
        _copy(conn, corpus, pool, texts, rebuild, boost, retention, progress)
    except psycopg.errors.LockNotAvailable:
        progress("the tables are in use: loading into their indexes instead of rebuilding them")
        _copy(conn, corpus, pool, texts, False, boost, retention, progress)
    t = time.monotonic()
    conn.execute("VACUUM (ANALYZE) episodic_memory, episode_message, conversation")
    progress(f"vacuum analyze in {time.monotonic() - t:.0f} s")
    return Loaded(corpus, True, time.monotonic() - started, removed)


def compact(conn: psycopg.Connection, removed: int, progress: Progress = lambda _: None) -> bool:
    """After ``removed`` messages were deleted: when they outnumber the messages left,
    rewrite both tables and their indexes (``VACUUM FULL``, see the module's docstring).
    Returns whether it did."""
    (left,) = one_row(conn, "SELECT count(*) FROM episode_message")
    if removed <= left:
        return False
    t = time.monotonic()
    conn.execute(f"SET lock_timeout = '{LOCK_WAIT}'")
    try:
        conn.execute("VACUUM (FULL, ANALYZE) episodic_memory, episode_message")
    except psycopg.errors.LockNotAvailable:
        progress("the tables are in use: not compacted")
        return False
    finally:
        conn.execute("RESET lock_timeout")
    progress(f"tables compacted around the {left:,} messages left in {time.monotonic() - t:.0f} s")
    return True


LOCK_WAIT = "5s"
KEEP_VECTORS_UP_TO = 200_000  # messages: keep their vectors between the two passes rather than draw them twice


def _copy(
    conn: psycopg.Connection,
    corpus: CorpusPlan,
    pool: Pool,
    texts: Sequence[tuple[str, str]],
    rebuild: bool,
    boost: float,
    retention: float,
    progress: Progress,
) -> None:
    """One transaction: COPY episodes, messages, conversations (and rebuild the indexes)."""
    seed = corpus.seed
    with conn.transaction():
        definitions: list[str] = []
        if rebuild:
            definitions = [
                r[0]
                for r in conn.execute("SELECT indexdef FROM pg_indexes WHERE indexname = ANY(%s)", (list(REBUILT),))
            ]
            conn.execute(f"SET LOCAL lock_timeout = '{LOCK_WAIT}'")
            for name in REBUILT:
                conn.execute(f"DROP INDEX IF EXISTS {name}")
            conn.execute("SET LOCAL lock_timeout = 0")
        t = time.monotonic()
        kept: list[tuple[ConversationData, np.ndarray]] = []
        spans: list[tuple[datetime, datetime, datetime]] = []  # per conversation: first, last message, updated
        with (
            conn.cursor() as cur,
            cur.copy(f"COPY episodic_memory ({EPISODE_COLUMNS}) FROM STDIN (FORMAT BINARY)") as cp,
        ):
            cp.set_types(list(EPISODE_TYPES))
            at = 0
            for c in corpus.conversations:
                data = conversation_data(c, pool, seed)
                vectors = data.vectors(c, pool, seed)
                episode_texts = texts[at : at + len(c.episodes)]
                at += len(c.episodes)
                tenant = corpus.tenant_id(c.tenant)
                rows = episode_rows(
                    c,
                    tenant,
                    data,
                    data.episode_vectors(c, pool, seed),
                    pool,
                    episode_texts,
                    seed,
                    boost=boost,
                    retention=retention,
                )
                for row in rows:
                    cp.write_row(row)
                spans.append((data.timestamps[0], data.timestamps[-1], rows[-1][26]))
                if corpus.messages <= KEEP_VECTORS_UP_TO:
                    kept.append((data, vectors))
        progress(f"{corpus.episodes:,} episodes copied in {time.monotonic() - t:.0f} s")
        t = time.monotonic()
        with (
            conn.cursor() as cur,
            cur.copy(f"COPY episode_message ({MESSAGE_COLUMNS}) FROM STDIN (FORMAT BINARY)") as cp,
        ):
            cp.set_types(list(MESSAGE_TYPES))
            for i, c in enumerate(corpus.conversations):
                if kept:
                    data, vectors = kept[i]
                else:
                    data = conversation_data(c, pool, seed)
                    vectors = data.vectors(c, pool, seed)
                for row in message_rows(data, c, corpus.tenant_id(c.tenant), vectors, pool):
                    cp.write_row(row)
                if i % 500 == 499:
                    progress(f"  messages of {i + 1:,} / {len(corpus.conversations):,} conversations")
        took = time.monotonic() - t
        progress(f"{corpus.messages:,} messages copied in {took:.0f} s ({corpus.messages / max(took, 1e-3):,.0f}/s)")
        with (
            conn.cursor() as cur,
            cur.copy(f"COPY conversation ({CONVERSATION_COLUMNS}) FROM STDIN (FORMAT BINARY)") as cp,
        ):
            cp.set_types(list(CONVERSATION_TYPES))
            for c, (first, last, updated) in zip(corpus.conversations, spans, strict=True):
                cp.write_row(conversation_row(c, corpus.tenant_id(c.tenant), first, last, updated))
        if definitions:
            t = time.monotonic()
            total = conn.execute("SELECT count(*) FROM episode_message").fetchone()
            memory_mb = min(8192, max(256, int((total[0] if total else 0) * 2.5 / 1024)))  # the graph in memory
            conn.execute(f"SET LOCAL maintenance_work_mem = '{memory_mb}MB'")
            for definition in definitions:
                conn.execute(definition)
            progress(f"{len(definitions)} HNSW / GIN indexes rebuilt in {time.monotonic() - t:.0f} s")


if __name__ == "__main__":  # python -m memq_lab.bench.corpus: remove every bench corpus
    from memq.shared.connections import pg_owner_connect

    with pg_owner_connect(autocommit=True) as connection:
        gone = cleanup(connection)
        print(f"removed {gone:,} bench corpus messages")
        compact(connection, gone, print)
