"""``memq demo`` (what ``make demo`` runs) end to end: it starts its own Celery worker,
replays the shipped sample, and shows the episodes, three answers from memory and the
manifest, on the services REDIS_URL / DATABASE_URL point at."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from datetime import datetime

import cluster_mode
import pytest
from invariants import assert_every_message_in_exactly_one_episode

from memq.cli.demo import QUESTIONS, SAMPLE
from memq.memory import Memory
from memq.shared.db.episodes import list_episodes
from memq_lab.evaluation.chapters import DEMO_CHAPTER_STARTS

pytestmark = [
    pytest.mark.integration,
    pytest.mark.timeout(600),
    # the demo runs on one Redis (embedded, or REDIS_URL); the pipeline over a clustered
    # mailbox is the subject of the cluster pass' own tests
    pytest.mark.skipif(cluster_mode.enabled(), reason="the demo's deployment is one Redis; once is enough"),
]


def test_the_demo_runs_the_sample_end_to_end(service_env, producer, db, settings, tenant):
    env = {**os.environ, **service_env, "MEMQ_TENANT": tenant, "PYTHONUNBUFFERED": "1", "COLUMNS": "150"}
    done = subprocess.run(
        [sys.executable, "-m", "memq", "demo", "--no-summaries"],
        env=env,
        capture_output=True,
        text=True,
        timeout=540,
    )
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-4000:]
    assert "Traceback" not in out

    sample = [json.loads(line) for line in SAMPLE.read_text().splitlines() if line.strip()]
    shown = re.search(r"demo-alex: (\d+) messages → (\d+) episodes", out)
    assert shown is not None, out[-4000:]
    episodes = list_episodes(db, tenant, "demo-alex")
    assert (int(shown.group(1)), int(shown.group(2))) == (len(sample), len(episodes)) and len(episodes) > 1
    assert_every_message_in_exactly_one_episode(db, producer.redis, settings, tenant, "demo-alex", len(sample))

    assert out.count("memq retrieve") == len(QUESTIONS)  # one answer panel per question
    assert "No memories match" not in out
    manifest = out[out.index("CONVERSATION MANIFEST") :]
    with Memory.open(settings, tenant) as memory:
        chapters = memory.chapters("demo-alex")
    newest = max(chapters, key=lambda c: c.start_at)
    assert newest.title[:20] in manifest  # the newest chapter heads the manifest
    assert len(re.findall(r"\[\d\d:\d\d - \d\d:\d\d\]", manifest)) == len(chapters)

    # the reader's level matches the sample's 11 ground-truth episodes (producer/samples/README.md)
    at = {m["message_id"]: datetime.fromisoformat(m["timestamp"].replace("Z", "+00:00")) for m in sample}
    gold = {at[m] for m in DEMO_CHAPTER_STARTS}
    drawn = {c.start_at for c in sorted(chapters, key=lambda c: c.start_at)[1:]}
    precision, recall = len(drawn & gold) / len(drawn), len(drawn & gold) / len(gold)
    assert len(chapters) <= 15 and 2 * precision * recall / (precision + recall) >= 0.8, sorted(drawn ^ gold)
    assert sum(len(c.episode_ids) for c in chapters) == len(episodes)
