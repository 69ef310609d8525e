"""Load the Lua scripts next to this module and register them with a client."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import redis
from redis.commands.core import Script

_HERE = Path(__file__).parent


def _source(name: str) -> str:
    return (_HERE / f"{name}.lua").read_text()


@dataclass(frozen=True)
class Scripts:
    enqueue: Script
    request_flush: Script
    commit_step: Script
    release_lock: Script
    finish_segment: Script

    @classmethod
    def register(cls, client: redis.Redis) -> "Scripts":
        return cls(**{name: client.register_script(_source(name)) for name in cls.__dataclass_fields__})

