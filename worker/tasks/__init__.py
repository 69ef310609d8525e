"""Celery tasks: thin shells over the orchestration in ``memq.worker.drain``,
``memq.worker.episode_store``, ``memq.worker.review`` and ``memq.worker.consolidation``. The chain:
``event_segmentation -> episode_creation -> memory_review -> semantic_consolidation``."""
