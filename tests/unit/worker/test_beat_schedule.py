"""What ``memq beat`` sends (``memq.worker.schedule``): the activity log's pruning
only when a retention is set, hourly."""

from __future__ import annotations

from memq.shared import tasks
from memq.shared.settings import Settings
from memq.worker.schedule import beat_schedule


def test_the_activity_log_is_pruned_hourly_only_with_a_retention():
    kept = beat_schedule(Settings())
    assert tasks.PRUNE_ACTIVITY not in {entry["task"] for entry in kept.values()}
    assert {entry["task"] for entry in kept.values()} == {
        tasks.COLLAPSE_IDLE,
        tasks.SWEEP_STALLED,
        tasks.WEBHOOK_SWEEP,
    }
    pruned = beat_schedule(Settings(activity_retention_days=90))
    assert pruned["prune-activity-log"] == {"task": tasks.PRUNE_ACTIVITY, "schedule": 3600.0}
