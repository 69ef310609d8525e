"""Segmentation policy: pure decisions about where events begin and end.

``rules`` (seed 000's rule layer + seed 003's token budget), ``overlap`` (seed 003),
``detectors`` (boundary detection behind one interface) and ``engine`` (one step of
the segmenter over one message). No Redis, PostgreSQL or network here; detectors that
need an LLM receive it as an injected adapter.
"""
