"""Reference rankings of one question's haystack without memq, as lists of returned items
(best first) that ``measures`` scores like memq's own results:

- ``bm25_sessions``: Okapi BM25 (k1 1.2, b 0.75, ``locomo.bm25``) over whole sessions, a
  session's words being its turns' contents, lower-cased ``\\w+`` tokens;
- ``dense_sessions``: each whole session embedded as one document (its turns as
  ``role: content`` lines; the model truncates as it truncates), ranked by cosine with the
  question;
- ``dense_turns_best``: every turn embedded (its content, as memq embeds a message) and
  ranked by cosine, so that a session ranks by its best turn;
- ``hybrid_turns``: the textbook hybrid over turns: the cosine ranking of every turn and
  the BM25 ranking of the turns holding a query word, fused by RRF (k = 60,
  ``memq.memory.retrieval.fusion.rrf``).

A haystack's items, texts and BM25 indexes are built once (``Haystack``) and shared by the
baselines. What an item returns is its time and its lines, counted with memq's token
counter, so budgets are what memq would count. Embeddings go through an injected
``embed(texts) -> array``; ``EmbeddingStore`` embeds each distinct text once, across
questions (their haystacks share sessions) and, with a cache folder, across runs.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from pathlib import Path

import numpy as np

from memq.memory.retrieval.fusion import rrf
from memq.shared.tokens import count_tokens_cached
from memq_lab.evaluation.locomo.bm25 import Bm25Index
from memq_lab.evaluation.longmemeval.data import Question, Session, Turn

Embed = Callable[[list[str]], np.ndarray]
RRF_K = 60.0
BASELINES = ("bm25_sessions", "dense_sessions", "dense_turns_best", "hybrid_turns")
_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class Item:
    """One returned unit: a whole session or a single turn."""

    session_id: str
    turns: tuple[str, ...]  # turn_key ids, in session order
    text: str  # what it returns
    tokens: int  # of ``text``


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def turn_line(t: Turn) -> str:
    return f"{t.role}: {t.content}"


def session_document(s: Session) -> str:
    """A session as one text: its turns as ``role: content`` lines."""
    return "\n".join(turn_line(t) for t in s.turns)


def _stamp(at: datetime) -> str:
    return f"[{at:%d %B %Y %H:%M}]"


class Haystack:
    """One question's haystack as the baselines rank it, built once and shared."""

    def __init__(self, question: Question, count: Callable[[str], int] = count_tokens_cached):
        self.question = question
        self.count = count
        self.turns: tuple[Turn, ...] = question.turns

    @cached_property
    def documents(self) -> list[str]:
        """Each session's embedded text."""
        return [session_document(s) for s in self.question.sessions]

    @cached_property
    def lines(self) -> list[str]:
        """Each turn's embedded text: its content (what memq embeds a message by, so that
        the vectors memq's workers computed can stand in: ``EmbeddingStore.seed``)."""
        return [t.content for t in self.turns]

    @cached_property
    def session_items(self) -> tuple[Item, ...]:
        return tuple(
            Item(s.id, tuple(t.key for t in s.turns), text, self.count(text))
            for s, doc in zip(self.question.sessions, self.documents)
            for text in [f"{_stamp(s.date)}\n{doc}"]
        )

    @cached_property
    def turn_items(self) -> tuple[Item, ...]:
        return tuple(
            Item(t.session_id, (t.key,), text, self.count(text))
            for t in self.turns
            for text in [f"{_stamp(t.at)} {turn_line(t)}"]
        )

    @cached_property
    def session_bm25(self) -> Bm25Index:
        return Bm25Index(
            {i: Counter(words("\n".join(t.content for t in s.turns))) for i, s in enumerate(self.question.sessions)}
        )

    @cached_property
    def turn_bm25(self) -> Bm25Index:
        return Bm25Index({i: Counter(words(t.content)) for i, t in enumerate(self.turns)})


def _haystack(h: Haystack | Question) -> Haystack:
    return h if isinstance(h, Haystack) else Haystack(h)


def _unit(m: np.ndarray) -> np.ndarray:
    m = np.asarray(m, dtype=np.float32)
    if m.ndim == 1:
        m = m.reshape(1, -1)
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    unit: np.ndarray = m / norms
    return unit


def _by_cosine(embed: Embed, query: str, texts: list[str]) -> list[int]:
    """Indexes of ``texts``, most similar to ``query`` first (ties in list order)."""
    if not texts:
        return []
    q = _unit(embed([query]))[0]
    scores = _unit(embed(texts)) @ q
    return [int(i) for i in np.argsort(-scores, kind="stable")]


def _bm25_order(index: Bm25Index, query: str, n: int) -> list[int]:
    """BM25's ranking, then the documents holding no query word in haystack order (all
    scored, as the original's BM25 ranks the whole corpus)."""
    ranked = index.rank(words(query))
    matched = set(ranked)
    return ranked + [i for i in range(n) if i not in matched]


def bm25_sessions(haystack: Haystack | Question) -> list[Item]:
    h = _haystack(haystack)
    return [h.session_items[i] for i in _bm25_order(h.session_bm25, h.question.question, len(h.session_items))]


def dense_sessions(haystack: Haystack | Question, embed: Embed) -> list[Item]:
    h = _haystack(haystack)
    return [h.session_items[i] for i in _by_cosine(embed, h.question.question, h.documents)]


def dense_turns_best(haystack: Haystack | Question, embed: Embed) -> list[Item]:
    """Turns by cosine: a session's first appearance is its best turn's rank."""
    h = _haystack(haystack)
    return [h.turn_items[i] for i in _by_cosine(embed, h.question.question, h.lines)]


def hybrid_turns(haystack: Haystack | Question, embed: Embed, k: float = RRF_K) -> list[Item]:
    """RRF of the cosine ranking of every turn and the BM25 ranking of the turns holding a
    query word; ties in the cosine ranking's order."""
    h = _haystack(haystack)
    vector = [str(i) for i in _by_cosine(embed, h.question.question, h.lines)]
    lexical = [str(i) for i in h.turn_bm25.rank(words(h.question.question))]
    return [h.turn_items[int(f.id)] for f in rrf({"vector": vector, "bm25": lexical}, k)]


RANKERS: dict[str, Callable[[Haystack, Embed], list[Item]]] = {
    "bm25_sessions": lambda h, embed: bm25_sessions(h),
    "dense_sessions": dense_sessions,
    "dense_turns_best": dense_turns_best,
    "hybrid_turns": hybrid_turns,
}


def run_baselines(haystack: Haystack | Question, embed: Embed) -> dict[str, list[Item]]:
    """Every baseline's ranking of one haystack, by name."""
    h = _haystack(haystack)
    return {name: rank(h, embed) for name, rank in RANKERS.items()}


def text_key(text: str) -> str:
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


class EmbeddingStore:
    """Embeddings by text: each distinct text is embedded once (unseen texts in batches of
    ``batch_size``) and kept by its hash, so a session that recurs across questions is not
    embedded again. With ``cache_dir``, each batch is also saved as an ``.npz`` under
    ``cache_dir/<model>/`` and every saved batch is read back at start: a second run
    embeds nothing it has seen. (``embedding_cache.cached_embeddings`` keys a whole text
    list, which one question's haystack never repeats.) Rows are unit-normalised."""

    def __init__(self, embed: Embed, cache_dir: Path | None = None, model: str = "", batch_size: int = 256):
        self._embed = embed
        self.batch_size = batch_size
        self.folder = Path(cache_dir) / (re.sub(r"[^\w.-]+", "_", model) or "default") if cache_dir else None
        self.vectors: dict[str, np.ndarray] = {}
        self.embedded = 0  # texts the model embedded (found neither in memory nor on disk)
        if self.folder is not None and self.folder.is_dir():
            for path in sorted(self.folder.glob("*.npz")):
                if path.name.endswith(".partial.npz"):
                    continue  # a batch whose writing was cut short
                with np.load(path) as saved:
                    for key, vector in zip(saved["keys"], saved["vectors"]):
                        self.vectors[str(key)] = vector

    def seed(self, texts: Sequence[str], vectors: np.ndarray) -> int:
        """Take vectors computed elsewhere by the same model for exactly these texts (memq's
        stored message vectors); texts already known keep theirs. Returns how many were new."""
        added = 0
        for text, vector in zip(texts, _unit(vectors)):
            key = text_key(text)
            if key not in self.vectors:
                self.vectors[key] = vector
                added += 1
        return added

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        keys = [text_key(t) for t in texts]
        unseen = {k: t for k, t in zip(keys, texts) if k not in self.vectors}
        pending = list(unseen.items())
        for start in range(0, len(pending), self.batch_size):
            batch = pending[start : start + self.batch_size]
            vectors = _unit(self._embed([t for _, t in batch]))
            for (key, _), vector in zip(batch, vectors):
                self.vectors[key] = vector
            self.embedded += len(batch)
            self._save([key for key, _ in batch], vectors)
        if not keys:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack([self.vectors[k] for k in keys])

    __call__ = embed

    def _save(self, keys: list[str], vectors: np.ndarray) -> None:
        if self.folder is None:
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.folder / f"{text_key(''.join(keys))}.npz"
        partial = path.with_suffix(".partial.npz")
        np.savez(partial, keys=np.array(keys), vectors=vectors)
        os.replace(partial, path)  # a batch is on disk whole or not at all
