"""Semantic consolidation (Plast Mem, lifecycle step 5): lasting facts distilled from a
conversation's episodes by an LLM. The answer format and its validation in
``actions.py`` (pure), the run in ``job.py``; with no LLM configured it waits."""
