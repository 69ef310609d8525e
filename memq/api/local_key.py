"""The local key: so that ``make demo`` and local use stay two commands, ``memq api``
makes sure a key for ``MEMQ_TENANT`` exists and is written to ``<MEMQ_DATA_DIR>/api-key``
(readable by this user only). A key in that file that was revoked, or belongs to another
tenant, is replaced."""

from __future__ import annotations

import os
from pathlib import Path

import psycopg

from memq.shared.activity import Actor
from memq.shared.auth.api_keys import key_id, matches
from memq.shared.db.api_keys import active_keys, create_key
from memq.shared.settings import Settings

NAME = "local (memq api)"


def key_file(settings: Settings) -> Path:
    return settings.data_path / "api-key"


def read_local_key(settings: Settings) -> str | None:
    path = key_file(settings)
    try:
        return path.read_text().strip() or None
    except OSError:
        return None


def ensure_local_key(settings: Settings, conn: psycopg.Connection, actor: Actor) -> tuple[str, bool]:
    """(the key, whether it was created now); a key created is logged as ``actor``'s."""
    current = read_local_key(settings)
    if current is not None:
        entry = active_keys(conn).get(key_id(current) or "")
        if entry is not None and entry[1] == settings.tenant and matches(current, entry[0]):
            return current, False
    new, _ = create_key(conn, settings.tenant, NAME, actor=actor)
    path = key_file(settings)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(new.key + "\n")
    os.chmod(path, 0o600)
    return new.key, True
