"""Segmentation policy: pure decisions about where events begin and end.

``rules`` (Plast Mem's rule layer + agent-memory's token budget), ``overlap`` (agent-memory),
``detectors`` (boundary detection behind one interface) and ``engine`` (one step of
the segmenter over one message), ``segmenter`` (the step loop production, evaluation and the
property tests share). No Redis, PostgreSQL or network in the policy; detectors that need an
LLM receive it as an injected adapter. Orchestration (draining an inbox through the segmenter
under the conversation lock) in ``job.py``; ``co_embedding`` adds other conversations' waiting
inbox fronts to a drain's model call.
"""
