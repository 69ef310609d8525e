"""memq's application layer: the entry points that compose the producer, the workers
and the shared foundation (the ``memq`` CLI, the demo, audit). The benchmarks, evaluation
and soak are the lab's, a distribution of its own in lab/ (not in this package).

Layers run one way: ``shared`` is the foundation; ``producer`` and ``worker`` stand on
it; this package stands on all three, and nothing below imports it.
"""

from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _distribution_version


def version() -> str:
    """The installed distribution's version ("0" when run from an uninstalled tree)."""
    try:
        return _distribution_version("memq")
    except PackageNotFoundError:
        return "0"
