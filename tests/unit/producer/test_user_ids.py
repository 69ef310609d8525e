"""The user a batch names (``Producer._split_users`` / ``_group_users``), user ids and the
user scope of a retrieval request: checked before anything is sent or read."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from memq.memory.retrieval.request import build_request
from memq.producer.client import Producer
from memq.producer.validation import ValidMessage
from memq.shared.errors import UserConflict, ValidationError
from memq.shared.ids import check_user_id
from memq.shared.settings import Settings

S = Settings(_env_file=None)


def _msg(conv: str, tenant: str = "t") -> ValidMessage:
    return ValidMessage(tenant, conv, "user", "hi", None, None, None)


def test_user_ids_follow_the_conversation_id_rules():
    assert check_user_id("alice.smith:42") == "alice.smith:42"
    for bad in ("", "has space", "-leading", "a/b", "x" * 129, 7, None):
        with pytest.raises(ValidationError, match="user_id"):
            check_user_id(bad)


def test_the_batch_user_and_each_messages_user():
    me = SimpleNamespace(settings=S)
    rest, users = Producer._split_users(me, [{"content": "a"}, {"content": "b", "user_id": "bob"}], "ann")  # type: ignore[arg-type]
    assert rest == [{"content": "a"}, {"content": "b"}] and users == ["ann", "bob"]
    rest, users = Producer._split_users(me, [{"content": "a", "user_id": None}], None)  # type: ignore[arg-type]
    assert rest == [{"content": "a"}] and users == [None]
    with pytest.raises(ValidationError, match=r"message #0: user_id"):
        Producer._split_users(me, [{"content": "a", "user_id": "no good"}], None)  # type: ignore[arg-type]


def test_one_user_per_conversation_in_a_batch():
    valid = [_msg("c1"), _msg("c1"), _msg("c2"), _msg("c1", tenant="u")]
    assert Producer._group_users(valid, ["ann", None, "bob", "carl"]) == {
        ("t", "c1"): "ann",
        ("t", "c2"): "bob",
        ("u", "c1"): "carl",
    }
    with pytest.raises(ValidationError, match="one user") as refused:
        Producer._group_users(valid[:2], ["ann", "bob"])
    assert refused.value.index == 1 and refused.value.field == "user_id"


def test_a_user_conflict_is_a_rejection_naming_the_field():
    err = UserConflict("conversation 'c' belongs to user 'ann'", [], index=0)
    assert err.field == "user_id" and err.index == 0 and isinstance(err, ValidationError)


def test_a_retrieval_request_carries_a_checked_user():
    request = build_request(S, tenant="t", query="q", user_id="ann")
    assert request.user_id == "ann" and request.conversation_ids is None
    assert build_request(S, tenant="t", query="q").user_id is None
    with pytest.raises(ValidationError, match="user_id"):
        build_request(S, tenant="t", query="q", user_id="a b")
