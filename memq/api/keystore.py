"""Bearer keys as the API checks them: every active key's hash, loaded from PostgreSQL at
start and refreshed every ``MEMQ_API_KEYS_REFRESH_SECONDS`` in the background, so
checking a key touches neither PostgreSQL nor Redis (ingest stays one Redis round trip).
A key id not known yet is looked up once by its id (a primary-key read), so a key created
a moment ago works at once; an id found nowhere is remembered as unknown until the next
refresh, and lookups are limited to ``LOOKUPS_PER_SECOND``, so guessing keys cannot make
the service query the database at will. A revoked key stops working within the refresh
interval."""

from __future__ import annotations

import threading
import time

import structlog

from memq.shared.auth.api_keys import key_id, matches

log = structlog.get_logger("memq.api.keys")

LOOKUPS_PER_SECOND = 200  # a primary-key read each: cheap, but not unbounded


class KeyStore:
    def __init__(self, load, refresh_seconds: float, load_one=None):
        self._load = load  # () -> {key id: (hash, tenant)}
        self._load_one = load_one  # (key id) -> (hash, tenant) | None
        self._keys: dict[str, tuple[bytes, str]] = {}
        self._unknown: set[str] = set()
        self._lookups: list[float] = []  # when the last lookups of unknown ids happened
        self._lock = threading.Lock()
        self._refresh_seconds = refresh_seconds
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def refresh(self) -> None:
        keys = self._load()
        with self._lock:
            self._keys = keys
            self._unknown = set()

    def tenant_of(self, token: str | None) -> str | None:
        """The tenant of a valid, unrevoked key; None for anything else."""
        if not token:
            return None
        kid = key_id(token)
        if kid is None:
            return None
        entry = self._keys.get(kid)
        if entry is None and self._load_one is not None and kid not in self._unknown and self._may_look_up():
            try:
                entry = self._load_one(kid)
            except Exception as exc:  # the database is down: known keys keep working
                log.warning("api_key_lookup_failed", error=type(exc).__name__)
            else:
                with self._lock:
                    if entry is None:
                        if len(self._unknown) < 100_000:
                            self._unknown.add(kid)
                    else:
                        self._keys = {**self._keys, kid: entry}
        if entry is None or not matches(token, entry[0]):
            return None
        return entry[1]

    def _may_look_up(self) -> bool:
        now = time.monotonic()
        with self._lock:
            self._lookups = [t for t in self._lookups if now - t < 1.0]
            if len(self._lookups) >= LOOKUPS_PER_SECOND:
                return False
            self._lookups.append(now)
            return True

    def start(self) -> None:
        self.refresh()

        def loop() -> None:
            while not self._stop.wait(self._refresh_seconds):
                try:
                    self.refresh()
                except Exception as exc:
                    log.warning("api_keys_refresh_failed", error=type(exc).__name__)

        self._thread = threading.Thread(target=loop, name="memq-api-keys", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
