"""Every key a script touches lies in one Redis Cluster hash slot."""

import re

from redis.crc import key_slot

from memq.shared.mailbox.keys import ConversationKeys, all_shards, shard_of, split_member


def _slot(key: str) -> int:
    return key_slot(key.encode())


def test_all_keys_of_a_conversation_and_its_shard_indexes_share_a_slot():
    for i in range(200):
        keys = ConversationKeys("memq", f"tenant-{i % 7}", f"conv:{i}.x", 64)
        shard = keys.shard
        slots = {_slot(k) for k in [*keys.all(), shard.active, shard.drains, shard.pending, shard.quarantined]}
        assert len(slots) == 1, keys


def test_shards_are_stable_and_spread():
    assert shard_of("t", "c", 64) == shard_of("t", "c", 64)
    used = {shard_of("t", f"conv-{i}", 64) for i in range(2000)}
    assert len(used) == 64
    assert len({_slot(s.active) for s in all_shards("memq", 64)}) == 64  # one slot per shard


def test_member_names_split_back():
    keys = ConversationKeys("memq", "acme", "support:42", 16)
    assert split_member(keys.member) == ("acme", "support:42")
    assert re.fullmatch(r"memq:\{s\d+\}:acme/support:42:inbox", keys.inbox)
