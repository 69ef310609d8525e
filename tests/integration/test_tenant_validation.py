"""Tenant ids are validated at every entry, like conversation ids: a message's own
tenant, the CLI and a task's arguments."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from drains import publish_drains_with

from memq.cli import main
from memq.shared.errors import ValidationError


@pytest.fixture
def tasks(celery_app):
    """The task functions (imported after the test services are configured)."""
    from memq.worker.tasks.episodes import episode_creation
    from memq.worker.tasks.segmentation import event_segmentation

    return event_segmentation, episode_creation


def test_a_message_may_carry_its_tenant_which_scopes_its_keys(producer):
    publish_drains_with(producer, lambda t, c: None)
    other = producer.settings.tenant + "-b"
    results = producer.add_messages(
        [
            {"conversation_id": "shared-name", "role": "user", "content": "for the default tenant"},
            {"conversation_id": "shared-name", "role": "user", "content": "for the other tenant", "tenant": other},
        ]
    )
    assert [r.tenant for r in results] == [producer.settings.tenant, other]
    assert producer.status("shared-name").accepted == 1
    assert producer.status("shared-name", tenant=other).accepted == 1


@pytest.mark.parametrize("bad", ["a/b", "", "x" * 65, "spa ce", "{tag}"])
def test_bad_tenants_are_refused_everywhere(producer, bad, tasks):
    event_segmentation, episode_creation = tasks
    with pytest.raises(ValidationError, match="tenant"):
        producer.add_messages([{"conversation_id": "c", "role": "user", "content": "hi", "tenant": bad}])
    with pytest.raises(ValidationError, match="tenant"):
        producer.add_message("c", "user", "hi", tenant=bad or "a b")
    with pytest.raises(ValidationError, match="tenant"):
        producer.flush("c", tenant=bad or "a b")
    out = CliRunner().invoke(main, ["send", "c", "user", "hi", "--tenant", bad or "a b"])
    assert out.exit_code == 2 and "tenant" in out.output
    assert event_segmentation.run(bad, "c")["status"] == "invalid"
    assert episode_creation.run(bad, "c", "00000000-0000-0000-0000-000000000000")["status"] == "invalid"


def test_tasks_refuse_malformed_conversation_and_episode_ids(tasks):
    event_segmentation, episode_creation = tasks
    assert event_segmentation.run("ok", "has space")["status"] == "invalid"
    assert event_segmentation.run("ok", None)["status"] == "invalid"
    assert episode_creation.run("ok", "c", "not-a-uuid")["status"] == "invalid"
