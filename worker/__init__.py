"""memq's Celery workers: the chain event_segmentation -> episode_creation ->
memory_review -> semantic_consolidation; imported as ``memq.worker``."""

import os

# One path per module: imported through the memq/worker link, the package's modules are
# looked up in its real folder, so tracebacks, coverage and debuggers name worker/... (the
# file people edit), never memq/worker/...; in an installed wheel the two are one folder.
__path__ = [os.path.realpath(p) for p in __path__]
