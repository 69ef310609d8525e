"""Episode creation policy: titles and summaries (LLM or extractive), tools used,
the initial FSRS state, and assembling the stored row. Orchestration (a closed segment in
Redis to an episode in PostgreSQL, exactly once) in ``job.py``."""
