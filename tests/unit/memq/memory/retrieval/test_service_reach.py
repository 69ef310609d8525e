"""How deep in the message legs retrieval reads the messages it may show (``service.message_reach``)."""

from __future__ import annotations

import pytest

from memq.memory.retrieval.service import message_reach
from memq.shared.settings import Settings


@pytest.mark.parametrize(
    ("max_tokens", "reach"),
    [(20, 20), (250, 20), (800, 20), (801, 21), (1000, 25), (2000, 50), (4000, 100), (32_000, 100)],
)
def test_the_reach_follows_the_budget_between_its_floor_and_the_legs_depth(max_tokens, reach):
    cfg = Settings(message_reach_tokens=40, message_reach_min=20, retrieval_candidates=100)
    assert message_reach(max_tokens, cfg) == reach


def test_the_legs_depth_caps_even_the_floor():
    cfg = Settings(message_reach_tokens=40, message_reach_min=30, retrieval_candidates=12)
    assert message_reach(250, cfg) == 12
    assert message_reach(100_000, cfg) == 12


def test_the_defaults_read_a_little_deeper_than_a_budget_holds():
    """About 20 messages fit in 1,000 tokens on LoCoMo; each leg is read to 25."""
    assert message_reach(1000, Settings()) == 25
