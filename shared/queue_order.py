"""In which order a worker asks the broker's queues for its next task (pure).

kombu's Redis transport asks for the next message with one ``BRPOP`` over every queue the
worker consumes, in the order of its queue cycle: round robin by default, the queue that
just gave a message moved to the end. That is fair per message, not per unit of work. A
drain (``memq.segmentation``) runs the embedding model over a conversation's inbox for up
to its budget and ends several segments, each an ``episode_creation`` task (``memq.episodes``)
of a few PostgreSQL writes. Taking one of each in turn, a backlog of drains left the
episodes behind: in the bench's pipeline stream (1,500 messages, 30 conversations) 148
episodes were still queued when the last drain ended, and all of them were written after
it, their PostgreSQL work no longer overlapping the model's. Memory that is segmented but
not yet written is neither searchable nor free: its messages and vectors wait in Redis.

So the worker asks the episodes queue first, and the others in kombu's round robin. The
episodes queue cannot starve the rest for long: its tasks come only from drains, a few
per drain, and each is short.
"""

from __future__ import annotations

from collections.abc import Sequence

from kombu.utils.scheduling import round_robin_cycle

from memq.shared import tasks

#: Asked before every other queue, in this order.
FIRST = (tasks.EPISODES_QUEUE,)


def queue_order(rotated: Sequence[str], first: Sequence[str] = FIRST) -> list[str]:
    """``rotated`` (the round robin's current order) with the ``first`` queues it holds
    moved to its front, in ``first``'s order."""
    leading = [q for q in first if q in rotated]
    return leading + [q for q in rotated if q not in leading]


class EpisodesFirstCycle(round_robin_cycle):
    """kombu's round robin over the queues, with ``FIRST`` always asked first."""

    def consume(self, n: int) -> list[str]:
        return queue_order(self.items)[:n]


#: What kombu's ``queue_order_strategy`` names (it resolves "module:Class").
CYCLE_PATH = f"{__name__}:EpisodesFirstCycle"
