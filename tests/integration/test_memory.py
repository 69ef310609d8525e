"""``memq.memory.Memory`` on real services: one object bound to a tenant answers every read
(retrieve, recent, manifest, context, facts) over a conversation the real pipeline stored,
carries the tenant out (export) and into another tenant (import) through the same
connections, and sees nothing of another tenant's."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta

import pytest

from memq.memory import Memory
from memq.shared.errors import NotFound, ValidationError

pytestmark = pytest.mark.integration

TALK = [
    ("user", "We picked PostgreSQL for the payments ledger because of its transactions."),
    ("assistant", "PostgreSQL it is; the ledger tables get row-level locks."),
    ("user", "Remind me to renew the TLS certificate of the billing host in March."),
    ("assistant", "Noted: the billing host's TLS certificate expires in March."),
]


@pytest.fixture(scope="module")
def stored(settings, worker):
    from memq.producer.client import Producer

    tenant = f"t{uuid.uuid4().hex[:12]}"
    conversation = f"ledger-{uuid.uuid4().hex[:8]}"
    producer = Producer(settings)
    producer.settings = settings.model_copy(update={"tenant": tenant})
    start = datetime.now(UTC) - timedelta(hours=2)
    messages = [
        {"role": role, "content": text, "timestamp": (start + timedelta(minutes=i)).isoformat()}
        for i, (role, text) in enumerate(TALK)
    ]
    producer.add_messages(messages, conversation_id=conversation, user_id="lena")
    producer.flush(conversation)
    producer.wait_idle(conversation, timeout=240)
    return tenant, conversation


@pytest.fixture(scope="module")
def memory(settings, stored):
    with Memory.open(settings, stored[0]) as bound:
        yield bound


def test_every_read_answers_through_the_bound_memory(memory, stored):
    _, conversation = stored
    found = memory.retrieve("which database for the payments ledger?", conversation_id=conversation, record=False)
    assert "PostgreSQL" in found.text
    assert "PostgreSQL" in memory.retrieve("ledger database", user_id="lena", record=False).text
    assert memory.recent(conversation).records
    manifest = memory.manifest(conversation)
    assert manifest.to_json()["conversation_id"] == conversation
    assert manifest.manifest.total_episodes >= 1
    assert "PostgreSQL" in memory.context(conversation).text
    query, facts = memory.facts("database", conversation_id=conversation)
    assert query == "database" and facts == []  # no LLM here: no facts distilled
    listed = memory.episodes(conversation)
    assert listed and sum(e.message_count for e in listed) == len(TALK)
    assert memory.conversation_facts(conversation, include_retired=True) == []
    assert memory.fact(str(uuid.uuid4())) is None
    with pytest.raises(ValidationError, match="fact id"):
        memory.fact("not-a-fact-id")
    with pytest.raises(ValidationError):
        memory.episodes("no/slash")


def test_another_tenant_bound_to_the_same_connections_sees_nothing(memory, stored):
    _, conversation = stored
    other = memory.for_tenant(f"t{uuid.uuid4().hex[:12]}")
    assert other.connections is memory.connections
    assert other.retrieve("payments ledger PostgreSQL", conversation_id=conversation, record=False).hits == []
    for view in (other.manifest, other.context, other.episodes, other.chapters, other.conversation_facts):
        with pytest.raises(NotFound, match="is not known in this tenant"):
            view(conversation)
    assert memory.known(conversation) and not other.known(conversation)


def test_export_then_import_into_another_tenant(memory, stored):
    _, conversation = stored
    with pytest.raises(ValidationError, match="not both"):
        memory.export(conversation_id=conversation, user_id="lena")  # refused before a line is read
    lines = "".join(memory.export(conversation_id=conversation)).splitlines(keepends=True)
    assert json.loads(lines[0])["type"] == "header" and json.loads(lines[-1])["type"] == "end"
    assert memory.export_size(conversation_id=conversation) >= len(lines) - 1

    copy = memory.for_tenant(f"t{uuid.uuid4().hex[:12]}")
    report = copy.import_lines(lines)
    assert report.stopped is None and report.tenant == copy.tenant
    assert "PostgreSQL" in copy.retrieve("payments ledger database", conversation_id=conversation, record=False).text
    assert copy.import_lines(lines).inserted.get("episode", 0) == 0  # importing again changes nothing
