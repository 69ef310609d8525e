"""Celery tasks: thin shells over the orchestration in ``worker.drain``,
``worker.episode_store``, ``worker.review`` and ``worker.consolidation``. The chain:
``event_segmentation -> episode_creation -> memory_review -> semantic_consolidation``."""
