"""The kept connection per thread (``memq.shared.mailbox.thread_connection``), on a real
Redis: one per thread, replaced after a fork, replies in order, never out of step after an
interrupted exchange, and one the server closed made afresh before use."""

from __future__ import annotations

import os
import threading

import pytest
import redis

from memq.shared.connections import redis_client
from memq.shared.mailbox import thread_connection


@pytest.fixture
def client(settings):
    """A standalone Redis client (the broker's: in the cluster suite too, where the mailbox
    is a cluster and its enqueue goes through redis-py's cluster pipeline instead)."""
    return redis_client(settings)


def _client_id(client: redis.Redis) -> int:
    (reply,) = thread_connection.call(client, [("CLIENT", "ID")])
    return int(reply)


def test_a_thread_keeps_its_connection_and_another_thread_has_its_own(client):
    first = _client_id(client)
    assert _client_id(client) == first
    other: list[int] = []
    thread = threading.Thread(target=lambda: other.append(_client_id(client)))
    thread.start()
    thread.join()
    assert other and other[0] != first
    assert _client_id(client) == first


def test_a_forked_process_makes_its_own(client, monkeypatch):
    first = _client_id(client)
    monkeypatch.setattr(os, "getpid", lambda: -1)  # as in a child after fork
    assert _client_id(client) != first


def test_replies_come_in_order_with_errors_as_exceptions(client, tenant):
    key = f"{tenant}:thread-connection"
    replies = thread_connection.call(client, [("SET", key, "1"), ("LPUSH", key, "x"), ("GET", key), ("DEL", key)])
    assert replies[0] is True or replies[0] == "OK"
    assert isinstance(replies[1], redis.ResponseError) and "WRONGTYPE" in str(replies[1])
    assert replies[2:] == ["1", 1]


def test_an_interrupted_exchange_drops_the_connection(client, tenant, monkeypatch):
    key = f"{tenant}:interrupted"
    first = _client_id(client)
    conn = thread_connection.connection(client)

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt  # the reply is left unread on the socket

    monkeypatch.setattr(conn, "read_response", interrupted)
    with pytest.raises(KeyboardInterrupt):
        thread_connection.call(client, [("SET", key, "a")])
    # a fresh connection: the next reply is this call's, not the one left unread
    assert thread_connection.call(client, [("GET", key), ("DEL", key)]) == ["a", 1]
    assert _client_id(client) != first


def test_a_connection_the_server_closed_is_made_afresh(client, tenant):
    key = f"{tenant}:killed"
    killed = _client_id(client)
    redis.Redis(connection_pool=client.connection_pool).client_kill_filter(_id=str(killed))
    assert thread_connection.call(client, [("SET", key, "b"), ("GET", key), ("DEL", key)])[1:] == ["b", 1]
    assert _client_id(client) != killed
