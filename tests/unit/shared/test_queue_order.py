"""The worker's queue order: the episodes queue first, the rest in kombu's round robin."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from kombu.utils.scheduling import cycle_by_name

from memq.shared import tasks
from memq.shared.broker_transport import Channel
from memq.shared.queue_order import CYCLE_PATH, EpisodesFirstCycle, queue_order


@given(st.permutations(tasks.ALL_QUEUES))
def test_the_episodes_queue_leads_and_the_others_keep_their_order(rotated):
    ordered = queue_order(rotated)
    assert ordered[0] == tasks.EPISODES_QUEUE
    assert sorted(ordered) == sorted(rotated)
    assert ordered[1:] == [q for q in rotated if q != tasks.EPISODES_QUEUE]


def test_queues_without_the_episodes_queue_are_left_as_they_are():
    assert queue_order(["b", "a", "c"]) == ["b", "a", "c"]
    assert queue_order([]) == []


def test_the_others_rotate_as_kombus_round_robin_does():
    cycle = EpisodesFirstCycle()
    cycle.update([tasks.SEGMENTATION_QUEUE, tasks.MEMORY_QUEUE, tasks.EPISODES_QUEUE])
    assert cycle.consume(3) == [tasks.EPISODES_QUEUE, tasks.SEGMENTATION_QUEUE, tasks.MEMORY_QUEUE]
    cycle.rotate(tasks.SEGMENTATION_QUEUE)  # a drain was taken: segmentation goes last among the rest
    assert cycle.consume(3) == [tasks.EPISODES_QUEUE, tasks.MEMORY_QUEUE, tasks.SEGMENTATION_QUEUE]
    cycle.rotate(tasks.EPISODES_QUEUE)  # an episode was taken: still asked first
    assert cycle.consume(3)[0] == tasks.EPISODES_QUEUE
    assert cycle.consume(2) == [tasks.EPISODES_QUEUE, tasks.MEMORY_QUEUE]


def test_the_broker_transport_names_the_cycle_and_kombu_resolves_it():
    assert Channel.queue_order_strategy == CYCLE_PATH
    assert cycle_by_name(CYCLE_PATH) is EpisodesFirstCycle
