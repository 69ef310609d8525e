"""Load the Lua scripts in ``lua/`` (each prefixed with ``lua/lib.lua``) and register
them with a Redis client (a plain ``redis.Redis`` or a ``RedisCluster``). What each
script replies is decoded by ``memq.shared.mailbox.replies``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from redis.cluster import RedisCluster
from redis.commands.core import Script
from redis.exceptions import NoScriptError

from memq.shared.mailbox import thread_connection

if TYPE_CHECKING:
    from memq.shared.connections import MailboxClient

LUA = Path(__file__).parent / "lua"


def source(name: str) -> str:
    return (LUA / "lib.lua").read_text() + "\n" + (LUA / f"{name}.lua").read_text()


@dataclass(frozen=True)
class Scripts:
    enqueue: Script
    request_flush: Script
    snapshot: Script
    commit_steps: Script
    release: Script
    mark_queued: Script
    finish_segment: Script
    sync: Script
    record_failure: Script
    quarantine_retry: Script
    due: Script
    adopt_segment: Script
    unlock: Script
    defer_event: Script
    settle_event: Script
    front: Script
    remember_front: Script
    quota_grant: Script
    quota_take: Script
    quota_put: Script

    @classmethod
    def register(cls, client: MailboxClient) -> Scripts:
        return cls(**{f.name: client.register_script(source(f.name)) for f in fields(cls)})


def _send(client: MailboxClient, script: Script, calls: Sequence[tuple[list[str], list[Any]]]) -> list[Any]:
    """The calls in one round trip, each reply or error in order.

    On a standalone Redis each call goes as a plain EVALSHA, on the thread's own connection
    (``thread_connection``): redis-py's ``Script`` path would send SCRIPT EXISTS before every
    pipeline that holds one, a second round trip per batch. redis-py's ``ClusterPipeline``
    refuses EVALSHA and cannot load scripts beforehand, so on a Redis Cluster each call goes
    as EVAL with the script's source: routed by its keys' slot like any command, never
    failing with NOSCRIPT (each node caches it)."""
    if isinstance(client, RedisCluster):
        pipe = client.pipeline(transaction=False)
        for keys, args in calls:
            pipe.execute_command("EVAL", script.script, len(keys), *keys, *args)
        replies: list[Any] = pipe.execute(raise_on_error=False)
        return replies
    return thread_connection.call(client, [("EVALSHA", script.sha, len(keys), *keys, *args) for keys, args in calls])


def run_queued(client: MailboxClient, script: Script, calls: list[tuple[list[str], list[Any]]]) -> list[Any]:
    """Every call of ``script`` in one round trip; a failed call's reply is its exception.

    A Redis that does not know the script (restarted, or its script cache flushed) answers
    NOSCRIPT to each call without running any of it: the script is loaded and exactly those
    calls are sent again, so a call never runs twice."""
    replies = _send(client, script, calls)
    unknown = [i for i, reply in enumerate(replies) if isinstance(reply, NoScriptError)]
    if unknown:
        client.script_load(script.script)
        for i, reply in zip(unknown, _send(client, script, [calls[i] for i in unknown]), strict=True):
            replies[i] = reply
    return replies
