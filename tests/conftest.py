"""Test-wide set-up. Integration tests get real services from tests/integration/conftest.py."""

import importlib.abc
import os
import sys
from pathlib import Path

# Shared test helpers (``import strategies``) live in this folder.
sys.path.insert(0, str(Path(__file__).resolve().parent))


class _OneImportRoot(importlib.abc.MetaPathFinder):
    """The top-level folders are imported as ``memq.shared``, ``memq.worker``,
    ``memq.producer`` only; run from the repository root, ``import shared`` would find the
    folder itself and load a second copy of every module (docs/architecture.md)."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname.split(".")[0] in ("shared", "worker", "producer", "migrations"):
            raise ImportError(f"import memq.{fullname}, not {fullname}: memq has one import root")
        return None


sys.meta_path.insert(0, _OneImportRoot())

# Quiet, fast and offline defaults for every test process (and the workers they start).
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
