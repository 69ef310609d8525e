"""Celery tasks: thin shells over the orchestration in ``worker.drain`` and the
episode builder. ``event_segmentation -> episode_creation`` is the chain; later
stages (memory review, consolidation) will follow episode creation."""
