"""The producer side of the soak: many conversations, messages sent at a steady rate in
small batches, and the log of what the producer acknowledged (the ground truth that
``verify`` checks PostgreSQL against).

A message is acknowledged when ``add_messages`` reports it settled (accepted, clamped
or duplicate). When a batch fails part-way (``BatchIncomplete``: Redis went away) or
not at all (Redis refused the connection), the unsettled messages are sent again with
the same message ids before anything newer of their conversation, so each conversation's
acceptance order is its sending order.
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter, deque
from dataclasses import dataclass, field

import structlog

from memq.producer.client import Producer
from memq.shared.errors import BatchIncomplete, MemqError

log = structlog.get_logger("memq_lab.soak")

TOPICS = [
    ("travel", "booking a train from Berlin to Hamburg, seats, delays and a refund for the late ICE"),
    ("cooking", "a sourdough starter, hydration percentages, oven temperature and a flat loaf"),
    ("code", "a Python service leaking memory, tracemalloc snapshots and a cache without a bound"),
    ("garden", "tomato seedlings, blight on the leaves, watering in the morning and copper spray"),
    ("money", "a budget spreadsheet, rent, savings rate and whether to pay off the car loan"),
    ("health", "knee pain after running, stretching, a physiotherapist and easier interval plans"),
    ("music", "learning a Chopin nocturne, fingering in bar twelve and practising slowly with a metronome"),
    ("work", "a performance review, a promotion case, feedback from the team lead and next goals"),
]


@dataclass
class Ack:
    message_id: str
    conversation_id: str
    phase: str
    sent_at: float  # first attempt
    acked_at: float


@dataclass
class Conversation:
    id: str
    topic: int
    sent: int = 0
    pending: deque = field(default_factory=deque)  # messages to send again (same ids), oldest first
    order: list[str] = field(default_factory=list)  # message ids in first-attempt order


class LoadDriver:
    def __init__(self, producer: Producer, conversations: int, seed: int = 7):
        self.producer = producer
        self.rng = random.Random(seed)
        self.conversations = [Conversation(f"soak-{i:03d}", i % len(TOPICS)) for i in range(conversations)]
        self.acks: dict[str, Ack] = {}
        self.errors = 0
        self.first_sent: dict[str, float] = {}
        self.boost = 1.0  # a fault may ask for a burst: the rate is multiplied by this
        self.failures: Counter[str] = Counter()  # failed sends, by what the producer raised (``failure_kind``)
        self.lock = threading.Lock()  # held by each send: a fault may send beside the phase's load thread

    def _message(self, conv: Conversation) -> dict:
        conv.sent += 1
        if self.rng.random() < 0.06:  # now and then the subject changes
            conv.topic = self.rng.randrange(len(TOPICS))
        name, text = TOPICS[conv.topic]
        role = "user" if conv.sent % 2 else "assistant"
        message_id = f"{conv.id}-{conv.sent:05d}"
        opener = self.rng.choice(["About", "Regarding", "Still on", "Back to", "One more thing on"])
        return {
            "conversation_id": conv.id,
            "role": role,
            "content": f"{opener} {name}: {text} (note {conv.sent}) [{message_id}]",
            "message_id": message_id,
        }

    def send_batch(self, phase: str) -> int:
        """Send one batch to one conversation (its unsettled messages first). Returns the
        number of messages acknowledged."""
        with self.lock:
            return self._send_batch(phase)

    def _send_batch(self, phase: str) -> int:
        conv = self.rng.choice(self.conversations)
        if conv.pending:
            batch = list(conv.pending)
        else:
            batch = [self._message(conv) for _ in range(self.rng.randint(1, 4))]
            now = time.time()
            for m in batch:
                conv.order.append(m["message_id"])
                self.first_sent[m["message_id"]] = now
            conv.pending.extend(batch)
        try:
            results = self.producer.add_messages(batch)
        except BatchIncomplete as exc:
            results = exc.results
            self.errors += 1
            self.failures[failure_kind(exc)] += 1
        except MemqError as exc:  # Redis refused the connection or the batch: send again later
            self.errors += 1
            self.failures[failure_kind(exc)] += 1
            log.debug("send_failed", error=str(exc))
            return 0
        except Exception as exc:  # redis-py's own errors when a client dies mid-call
            self.errors += 1
            self.failures[failure_kind(exc)] += 1
            log.debug("send_failed", error=str(exc))
            return 0
        acked = 0
        now = time.time()
        for message, result in zip(batch, results):
            if result.settled:
                mid = message["message_id"]
                if mid not in self.acks:
                    self.acks[mid] = Ack(mid, conv.id, phase, self.first_sent[mid], now)
                    acked += 1
        conv.pending = deque(m for m, r in zip(batch, results) if not r.settled)
        return acked

    def run(self, phase: str, messages: int, rate: float, *, until=None) -> int:
        """Acknowledge ``messages`` new messages at about ``rate`` per second (times
        ``boost``), or fewer if ``until()`` becomes true."""
        done = 0
        next_at = time.monotonic()
        while done < messages:
            if until is not None and until():
                break
            done += self.send_batch(phase)
            next_at += 2.5 / (rate * self.boost)  # batches average 2.5 messages
            pause = next_at - time.monotonic()
            if pause > 0:
                time.sleep(pause)
            else:
                next_at = time.monotonic()
        return done

    def settle(self, phase: str, timeout: float = 120.0) -> None:
        """Send every unsettled message again until all are acknowledged."""
        deadline = time.monotonic() + timeout
        while any(c.pending for c in self.conversations):
            if time.monotonic() > deadline:
                raise RuntimeError("messages could not be settled: Redis unreachable?")
            for conv in self.conversations:
                if conv.pending:
                    try:
                        results = self.producer.add_messages(list(conv.pending))
                    except BatchIncomplete as exc:
                        results = exc.results
                    except Exception:
                        time.sleep(0.3)
                        continue
                    now = time.time()
                    for m, r in zip(list(conv.pending), results):
                        if r.settled and m["message_id"] not in self.acks:
                            self.acks[m["message_id"]] = Ack(
                                m["message_id"], conv.id, phase, self.first_sent[m["message_id"]], now
                            )
                    conv.pending = deque(m for m, r in zip(list(conv.pending), results) if not r.settled)

    def flush_all(self) -> None:
        for conv in self.conversations:
            for _ in range(50):
                try:
                    self.producer.flush(conv.id)
                    break
                except Exception:
                    time.sleep(0.2)


def failure_kind(exc: BaseException) -> str:
    """What a failed send raised: the error's class, and its cause where it names one
    (``StorageFull(redis_out_of_memory)``)."""
    cause = getattr(exc, "cause", None)
    return f"{type(exc).__name__}({cause})" if isinstance(cause, str) else type(exc).__name__
