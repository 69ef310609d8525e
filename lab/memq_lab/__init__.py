"""memq's lab: what measures and exercises memq, kept out of the runtime package (the
``memq`` wheel) and installed beside it from ``lab/`` (``pip install -e ./lab``, which
``make install`` runs).

- ``bench``: ``memq bench``, how fast memq is, each figure next to its floor;
- ``evaluation``: ``memq eval`` / ``eval-locomo`` / ``eval-longmemeval``, segmentation and
  retrieval quality on public data sets (``MEMQ_EVAL_DATA``);
- ``soak``: ``memq soak``, the fault-injection soak;
- ``testing``: helpers for the test suite and the soak (a scripted OpenAI-compatible LLM,
  a TCP proxy);
- ``cli``: those commands; ``memq``'s own command line lists them by name and loads them
  from here when the lab is installed.

The lab stands on the product (it imports ``memq``); nothing in ``memq`` imports the lab
but that registration.
"""
