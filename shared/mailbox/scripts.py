"""Load the Lua scripts in ``lua/`` (each prefixed with ``lua/lib.lua``) and register
them with a Redis client (a plain ``redis.Redis`` or a ``RedisCluster``)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from redis.client import Pipeline
from redis.cluster import ClusterPipeline
from redis.commands.core import Script

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
    commit_step: Script
    release: Script
    mark_queued: Script
    finish_segment: Script
    sync: Script
    record_failure: Script
    quarantine_retry: Script
    due: Script
    adopt_segment: Script
    unlock: Script

    @classmethod
    def register(cls, client: MailboxClient) -> Scripts:
        return cls(**{f.name: client.register_script(source(f.name)) for f in fields(cls)})


def queue(script: Script, pipe: Pipeline | ClusterPipeline, keys: list[str], args: list[Any]) -> None:
    """Queue a script call on a pipeline (``pipeline(transaction=False)``).

    redis-py's ``ClusterPipeline`` refuses EVALSHA and cannot load scripts beforehand, so
    on a Redis Cluster the call goes as EVAL with the script's source: routed by its keys'
    slot like any command, never failing with NOSCRIPT (each node caches the script)."""
    if isinstance(pipe, ClusterPipeline):
        pipe.execute_command("EVAL", script.script, len(keys), *keys, *args)
    else:
        script(keys=keys, args=args, client=pipe)
