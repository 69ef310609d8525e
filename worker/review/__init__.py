"""Memory review (Plast Mem, lifecycle step 4): pending reviews recorded at retrieval are
rated by how the conversation's next segment used each memory, and applied to its FSRS
state. Policy in ``usage.py`` (no LLM), ``llm_rating.py`` and ``fsrs_update.py``;
orchestration in ``job.py``."""
