"""memq's foundation: settings, ids, connections, the Redis mailbox, PostgreSQL
repositories, embeddings, the LLM adapter; imported as ``memq.shared``."""

import os

# One path per module: imported through the memq/shared link, the package's modules are
# looked up in its real folder, so tracebacks, coverage and debuggers name shared/... (the
# file people edit), never memq/shared/...; in an installed wheel the two are one folder.
__path__ = [os.path.realpath(p) for p in __path__]
