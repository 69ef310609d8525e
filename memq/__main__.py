"""``python -m memq ...`` is the ``memq`` command."""

from memq.cli import main

main()
