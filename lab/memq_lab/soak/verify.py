"""What the soak checks against the producer's acknowledgement log."""

from __future__ import annotations

import re
import time
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

import psycopg

from memq.shared.mailbox.codec import decode_buffer_item, decode_inbox_item
from memq.shared.mailbox.keys import conversation_keys
from memq.shared.mailbox.segment import Segment

if TYPE_CHECKING:
    from memq.shared.connections import MailboxClient
    from memq.shared.settings import Settings

TAG = re.compile(r"\[(soak-\d+-\d+)\]$")


@dataclass
class Verifier:
    database_url: str
    client: MailboxClient
    settings: Settings
    tenant: str
    lookahead: int = 0  # inbox messages a drain leaves waiting for later ones (the detector's look-ahead)

    def _connect(self) -> psycopg.Connection:
        return psycopg.connect(self.database_url, autocommit=True, connect_timeout=3)

    def stored(self) -> dict[str, list[str]]:
        """Message ids stored per conversation, in sequence order."""
        out: dict[str, list[str]] = {}
        with self._connect() as conn:
            for conv, mid in conn.execute(
                "SELECT conversation_id, message_id FROM episode_message WHERE tenant_id = %s "
                "ORDER BY conversation_id, seq",
                (self.tenant,),
            ):
                out.setdefault(conv, []).append(mid)
        return out

    def duplicated(self) -> Counter:
        """Messages stored more than once (by the tag each soak message carries in its text):
        tag -> extra copies."""
        with self._connect() as conn:
            rows = conn.execute("SELECT content FROM episode_message WHERE tenant_id = %s", (self.tenant,)).fetchall()
        tags = Counter(m.group(1) for (content,) in rows if (m := TAG.search(content)))
        return Counter({tag: n - 1 for tag, n in tags.items() if n > 1})

    def numbered(self, conversations: list[str]) -> set[str]:
        """Message ids segmented but not stored yet: the open events, the closed segments
        waiting for their episodes, and the last messages of an inbox that only wait for
        the detector's look-ahead (more messages, or a flush, decide them)."""
        ids: set[str] = set()
        for conv in conversations:
            keys = conversation_keys(self.settings, self.tenant, conv)
            pipe = self.client.pipeline(transaction=False)
            pipe.lrange(keys.buffer, 0, -1)
            pipe.hvals(keys.segments)
            pipe.lrange(keys.inbox, 0, self.lookahead)
            buffer, segments, inbox = pipe.execute()
            ids.update(decode_buffer_item(item).id for item in buffer)
            if len(inbox) <= self.lookahead:
                ids.update(decode_inbox_item(item).id for item in inbox)
            for raw in segments:
                ids.update(m["id"] for m in Segment.decode(raw).messages)
        return ids

    def wait_caught_up(self, required: set[str], conversations: list[str], timeout: float) -> float | None:
        """Seconds until every required message is stored or numbered; None on timeout."""
        started = time.monotonic()
        missing = set(required)
        while True:
            try:
                stored = {mid for ids in self.stored().values() for mid in ids}
                missing -= stored
                if missing:
                    missing -= self.numbered(conversations)
            except Exception:  # a service is still coming back
                pass
            if not missing:
                return time.monotonic() - started
            if time.monotonic() - started > timeout:
                return None
            time.sleep(0.5)

    def wait_idle(self, producer, conversations: list[str], timeout: float) -> list[str]:
        """Wait until every conversation is idle; return those that are not."""
        deadline = time.monotonic() + timeout
        busy = list(conversations)
        while busy and time.monotonic() < deadline:
            still = []
            for conv in busy:
                try:
                    if not producer.status(conv).idle:
                        still.append(conv)
                except Exception:
                    still.append(conv)
            busy = still
            if busy:
                time.sleep(0.5)
        return busy
