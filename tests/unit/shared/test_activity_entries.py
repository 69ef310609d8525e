"""The activity log's entries (``memq.shared.activity``): what each action's entry holds, the
hash a forgotten id is replaced by, and the checks of a listing's filters."""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import fields
from datetime import UTC, datetime

import pytest

from memq.shared import activity
from memq.shared.activity import Actor, Entry, Recorded
from memq.shared.errors import ValidationError

SALT = bytes(range(32))
WHO = Actor("k3y1d00000")


def test_a_forgotten_id_is_its_hmac_under_the_salt_and_never_the_id():
    hashed = activity.hashed_id(SALT, "trip-42")
    expected = hmac.new(SALT, b"trip-42", hashlib.sha256).hexdigest()
    assert hashed == activity.HASH_PREFIX + expected
    assert "trip-42" not in hashed and activity.is_hashed(hashed)
    assert activity.hashed_id(SALT, "trip-42") == hashed  # whoever knows the id finds its entries
    assert activity.hashed_id(SALT, "trip-43") != hashed
    assert activity.hashed_id(bytes(32), "trip-42") != hashed  # another deployment's salt: another hash


def test_a_hashed_id_is_never_taken_for_an_id_and_an_id_never_for_a_hash():
    from memq.shared.ids import check_conversation_id

    hashed = activity.hashed_id(SALT, "x")
    with pytest.raises(ValidationError):  # the prefix's '/' is in no conversation or user id
        check_conversation_id(hashed)
    assert not activity.is_hashed("hmac-sha256:" + "0" * 64)  # a valid id that looks like one
    assert not activity.is_hashed(None) and not activity.is_hashed(activity.HASH_PREFIX + "0" * 63)


def test_an_empty_salt_is_refused_with_what_to_do():
    with pytest.raises(ValueError, match="memq migrate"):
        activity.hashed_id(b"", "trip-42")


def test_a_forgets_entry_names_what_it_forgot_by_its_hash_only():
    with pytest.raises(ValueError, match="hash"):
        activity.conversation_forgotten(WHO, "trip-42", episodes=1, messages=2)
    with pytest.raises(ValueError, match="hash"):
        activity.user_forgotten(WHO, "ana", conversations=1, episodes=1, messages=1, audit_rows=0)
    conv = activity.conversation_forgotten(WHO, activity.hashed_id(SALT, "trip-42"), episodes=1, messages=2)
    assert (conv.action, conv.conversation_id, dict(conv.counts)) == (
        "conversation.forget",
        activity.hashed_id(SALT, "trip-42"),
        {"episodes": 1, "messages": 2},
    )
    user = activity.user_forgotten(
        WHO, activity.hashed_id(SALT, "ana"), conversations=2, episodes=3, messages=9, audit_rows=1
    )
    assert user.action == "user.forget" and user.user_id == activity.hashed_id(SALT, "ana")
    assert user.conversation_id is None
    assert dict(user.counts) == {"conversations": 2, "episodes": 3, "messages": 9, "audit_rows": 1}


def test_each_action_names_its_ids():
    assert activity.key_created(WHO, "abc").key_id == "abc"
    assert activity.key_revoked(WHO, "abc").action == "key.revoke"
    assert activity.webhook_created(WHO, "w-1").webhook_id == "w-1"
    assert activity.webhook_deleted(WHO, "w-1").action == "webhook.delete"
    out = activity.exported(WHO, conversation_id="trip", user_id=None, lines=7)
    assert (out.action, out.conversation_id, dict(out.counts)) == ("export", "trip", {"lines": 7})
    built = {e.action for e in _one_of_each()}
    assert built == set(activity.ACTIONS)


def test_an_imports_entry_counts_what_was_written_and_where_it_stopped():
    done = activity.imported(
        WHO, lines=12, inserted={"episode": 2, "message": 8, "fact": 0}, skipped=1, stopped_at_line=None
    )
    assert done.action == "import" and dict(done.counts) == {"lines": 12, "episode": 2, "message": 8, "skipped": 1}
    stopped = activity.imported(WHO, lines=5, inserted={"episode": 1}, skipped=0, stopped_at_line=5)
    assert stopped.counts["stopped_at_line"] == 5


def test_an_entry_takes_only_known_actions_and_whole_counts():
    with pytest.raises(ValueError, match="no activity action"):
        Entry("key.rotate", WHO)
    for bad in (-1, True, 1.5):
        with pytest.raises(ValueError, match="whole numbers"):
            Entry("export", WHO, counts={"lines": bad})  # type: ignore[dict-item]


def test_actors():
    assert activity.cli_actor("ana") == Actor("cli", "ana")
    assert activity.api_actor("k3y1d00000") == Actor("k3y1d00000", None)
    assert activity.api_actor(None) == Actor("api", None)  # the API without keys


def test_an_entry_as_the_api_answers_it():
    from memq.api.models import ActivityEntryOut

    at = datetime(2026, 3, 2, 9, 15, tzinfo=UTC)
    shown = Recorded(41, at, activity.exported(Actor("cli", "root"), conversation_id="c", user_id=None, lines=3))
    data = shown.to_json()
    assert set(data) == set(ActivityEntryOut.model_fields)
    assert data["id"] == "41" and data["at"] == at.isoformat()
    assert (data["actor"], data["actor_detail"], data["counts"]) == ("cli", "root", {"lines": 3})
    assert {f.name for f in fields(Entry)} - {"actor"} <= set(data)


def test_the_filters_of_a_listing():
    assert activity.check_action(None) is None and activity.check_action("export") == "export"
    with pytest.raises(ValidationError, match=r"action: 'nope' is no action; filter by one of key\.create"):
        activity.check_action("nope")
    aware = datetime(2026, 3, 2, tzinfo=UTC)
    assert activity.check_since(aware) == aware and activity.check_since(None) is None
    with pytest.raises(ValidationError, match="since: give a time with its offset or Z"):
        activity.check_since(datetime(2026, 3, 2))
    assert (
        activity.check_cursor("17") == 17 and activity.check_cursor(None) is None and activity.check_cursor("") is None
    )
    for bad in ("0", "-3", "abc", "1" * 20):
        with pytest.raises(ValidationError, match="after: is not a cursor of this list: pass `next`"):
            activity.check_cursor(bad)


def _one_of_each() -> list[Entry]:
    h = activity.hashed_id(SALT, "x")
    return [
        activity.key_created(WHO, "k"),
        activity.key_revoked(WHO, "k"),
        activity.conversation_forgotten(WHO, h, episodes=0, messages=0),
        activity.user_forgotten(WHO, h, conversations=0, episodes=0, messages=0, audit_rows=0),
        activity.exported(WHO, conversation_id=None, user_id=None, lines=2),
        activity.imported(WHO, lines=2, inserted={}, skipped=0, stopped_at_line=None),
        activity.webhook_created(WHO, "w"),
        activity.webhook_deleted(WHO, "w"),
    ]
