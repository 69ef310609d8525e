"""Names of the Celery tasks and queues: the contract between producer and workers.

The producer only publishes by name (it never imports worker code), so these strings
are the whole interface.
"""

EVENT_SEGMENTATION = "memq.event_segmentation"
EPISODE_CREATION = "memq.episode_creation"
MEMORY_REVIEW = "memq.memory_review"
SEMANTIC_CONSOLIDATION = "memq.semantic_consolidation"
COLLAPSE_IDLE = "memq.collapse_idle"
SWEEP_STALLED = "memq.sweep_stalled"
WEBHOOK_DELIVERY = "memq.webhook_delivery"
WEBHOOK_SWEEP = "memq.webhook_sweep"
PRUNE_ACTIVITY = "memq.prune_activity"

SEGMENTATION_QUEUE = "memq.segmentation"
EPISODES_QUEUE = "memq.episodes"
MAINTENANCE_QUEUE = "memq.maintenance"
MEMORY_QUEUE = "memq.memory"  # review and consolidation: LLM-bound, kept off the segmentation path
WEBHOOKS_QUEUE = "memq.webhooks"  # deliveries: a slow or dead endpoint never holds up the pipeline

ALL_QUEUES = (SEGMENTATION_QUEUE, EPISODES_QUEUE, MAINTENANCE_QUEUE, MEMORY_QUEUE, WEBHOOKS_QUEUE)

ROUTES = {
    EVENT_SEGMENTATION: {"queue": SEGMENTATION_QUEUE},
    EPISODE_CREATION: {"queue": EPISODES_QUEUE},
    MEMORY_REVIEW: {"queue": MEMORY_QUEUE},
    SEMANTIC_CONSOLIDATION: {"queue": MEMORY_QUEUE},
    COLLAPSE_IDLE: {"queue": MAINTENANCE_QUEUE},
    SWEEP_STALLED: {"queue": MAINTENANCE_QUEUE},
    WEBHOOK_DELIVERY: {"queue": WEBHOOKS_QUEUE},
    WEBHOOK_SWEEP: {"queue": WEBHOOKS_QUEUE},
    PRUNE_ACTIVITY: {"queue": MAINTENANCE_QUEUE},
}
