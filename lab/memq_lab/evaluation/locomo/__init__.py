"""Retrieval quality on LoCoMo through the real pipeline (``memq eval-locomo``).

- ``data``: LoCoMo files read into turns, sessions and questions (evidence normalised);
- ``replay``: each conversation pushed through the producer to real workers;
- ``units``: the baselines' memory units (single turns, 8-turn windows, sessions) and
  their hybrid search, with the same embedding model and lexical ranking as memq;
- ``recall``: evidence recall at a budget (pure);
- ``runner``: the run; ``report``: terminal table, JSON and PNG chart.
"""
