"""Names of the Celery tasks and queues: the contract between producer and workers.

The producer only publishes by name (it never imports worker code), so these strings
are the whole interface.
"""

EVENT_SEGMENTATION = "memq.event_segmentation"
EPISODE_CREATION = "memq.episode_creation"
COLLAPSE_IDLE = "memq.collapse_idle"
SWEEP_STALLED = "memq.sweep_stalled"

SEGMENTATION_QUEUE = "memq.segmentation"
EPISODES_QUEUE = "memq.episodes"
MAINTENANCE_QUEUE = "memq.maintenance"

ALL_QUEUES = (SEGMENTATION_QUEUE, EPISODES_QUEUE, MAINTENANCE_QUEUE)

ROUTES = {
    EVENT_SEGMENTATION: {"queue": SEGMENTATION_QUEUE},
    EPISODE_CREATION: {"queue": EPISODES_QUEUE},
    COLLAPSE_IDLE: {"queue": MAINTENANCE_QUEUE},
    SWEEP_STALLED: {"queue": MAINTENANCE_QUEUE},
}
