"""``memq bench``: how fast memq is, each figure next to its floor measured in the same run.

One module per measurement family (``ingest``, ``pipeline``, ``retrieval``, ``resources``),
each a function ``run(ctx) -> list[Measurement]``; ``runner`` runs the families the caller
chose, prints one table and writes JSON and charts under ``.memq/bench/``. See
docs/benchmarks.md.
"""
