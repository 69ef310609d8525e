"""Checks shared by integration tests: the conservation invariant."""

from __future__ import annotations

from shared.db.episodes import message_seqs
from shared.mailbox.keys import conversation_keys


def assert_every_message_in_exactly_one_episode(db, client, settings, tenant: str, conversation_id: str, accepted: int) -> None:
    seqs = message_seqs(db, tenant, conversation_id)
    assert seqs == list(range(1, accepted + 1)), (
        f"episodes hold seqs {seqs[:10]}... ({len(seqs)} in all), expected 1..{accepted} each once, in order"
    )
    keys = conversation_keys(settings, tenant, conversation_id)
    assert client.llen(keys.inbox) == 0
    assert client.llen(keys.buffer) == 0
    assert client.hlen(keys.segments) == 0
