"""``memq_lab.bench.pipeline.key_bytes``: the bench counts every field of a hash, not Redis'
default estimate from five of them. A conversation's state is a hash with one long field
(the overlap tail) among short ones: estimated from five fields it comes out far below or
far above what Redis holds, by whether the long one was sampled."""

from __future__ import annotations

import os
import uuid

import pytest

from memq_lab.bench.pipeline import key_bytes

pytestmark = pytest.mark.skipif(os.environ.get("MEMQ_TEST_REDIS_CLUSTER") == "1", reason="one Redis is enough")


def test_a_hash_with_one_long_field_is_counted_whole(producer):
    client = producer.redis
    key = f"bench-test:{uuid.uuid4().hex}"
    short = {f"field{i}": str(i) for i in range(20)}
    long_value = "x" * 4000
    client.hset(key, mapping={**short, "tail": long_value})
    try:
        held = key_bytes(client, key)
        values = len(long_value) + sum(len(k) + len(v) for k, v in short.items())
        # every byte of the values is held, plus a bounded overhead per field
        assert values <= held <= values + 128 * (len(short) + 1) + 1024, held
    finally:
        client.delete(key)
    assert key_bytes(client, key) == 0  # a key that does not exist holds nothing
