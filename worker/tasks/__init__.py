"""Celery tasks: thin shells over the orchestration in ``memq.worker.segmentation.job``,
``memq.worker.episodes.job``, ``memq.worker.review.job`` and ``memq.worker.consolidation.job``. The chain:
``event_segmentation -> episode_creation -> memory_review -> semantic_consolidation``."""
