"""Episode creation policy: titles and summaries (LLM or extractive), tools used,
the initial FSRS state, and assembling the stored row."""
