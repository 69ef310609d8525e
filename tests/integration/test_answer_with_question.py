"""An answer travels with its question, end to end: the demo's sample replayed through the
real producer, worker and database, then the demo's own ledger question asked as ``memq
demo`` asks it. Before, at the demo's budget the returned text showed "what db would you
pick for this?" followed by ``…``: the PostgreSQL answer was cut."""

from __future__ import annotations

import inspect
import json
import uuid

import pytest
from invariants import assert_every_message_in_exactly_one_episode

from memq.cli.demo import QUESTIONS, SAMPLE, _answer
from memq.memory import Memory
from memq.shared.tokens import count_tokens

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

LEDGER = "Which database did we pick for the payments ledger?"
DEMO_BUDGET = 350  # what ``memq demo`` asks its questions at (``memq.cli.demo._answer``)
QUESTION = "- user: what db would you pick for this?"
ANSWER = "- assistant: A relational database like PostgreSQL"


@pytest.fixture(scope="module")
def memory(settings, worker):
    """The sample replayed into a tenant of this module's own, every message in an episode."""
    from memq.producer.client import Producer
    from memq.shared.connections import pg_owner_connect

    tenant = f"t{uuid.uuid4().hex[:12]}"
    producer = Producer(settings)
    producer.settings = settings.model_copy(update={"tenant": tenant})
    messages = [json.loads(line) for line in SAMPLE.read_text().splitlines() if line.strip()]
    results = producer.add_messages(messages)
    assert all(r.status == "accepted" for r in results) and len(results) == len(messages)
    assert producer.flush("demo-alex")
    producer.wait_idle("demo-alex", timeout=240)
    with pg_owner_connect(settings, autocommit=True) as db:
        assert_every_message_in_exactly_one_episode(db, producer.redis, settings, tenant, "demo-alex", len(messages))
    with Memory.open(settings, tenant) as bound:
        yield bound


def ask(memory: Memory, budget: int) -> str:
    """The ledger question as ``memq demo`` asks it, at ``budget`` tokens."""
    result = memory.retrieve(
        LEDGER, conversation_ids=["demo-alex"], detail="auto", limit=3, max_tokens=budget, record=False
    )
    assert result.tokens == count_tokens(result.text) <= budget
    return result.text


def test_the_demos_ledger_question_shows_postgresql_at_the_demos_budget(memory):
    assert LEDGER in QUESTIONS and f"max_tokens={DEMO_BUDGET}" in inspect.getsource(_answer)
    text = ask(memory, DEMO_BUDGET)
    assert "PostgreSQL" in text or "Postgres" in text, text
    said = [line for line in text.splitlines() if line.startswith("- ")]  # in what was said, not only a title
    assert any("Postgres" in line for line in said), text
    assert QUESTION in said and said[said.index(QUESTION) + 1].startswith(ANSWER), text  # the issue's own case


@pytest.mark.parametrize("budget", [150, 200, 250, DEMO_BUDGET, 500, 1000])
def test_wherever_the_question_is_shown_its_answer_follows(memory, budget):
    lines = ask(memory, budget).splitlines()
    for i, line in enumerate(lines):
        if line == QUESTION:
            assert i + 1 < len(lines) and lines[i + 1].startswith(ANSWER), (budget, lines)
