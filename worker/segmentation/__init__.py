"""Segmentation policy: pure decisions about where events begin and end.

``rules`` (Plast Mem's rule layer + agent-memory's token budget), ``overlap`` (agent-memory),
``detectors`` (boundary detection behind one interface) and ``engine`` (one step of
the segmenter over one message). No Redis, PostgreSQL or network here; detectors that
need an LLM receive it as an injected adapter.
"""
