"""Test-wide set-up. Integration tests get real services from tests/integration/conftest.py."""

import os
import sys
from pathlib import Path

# Shared test helpers (``import strategies``) live in this folder.
sys.path.insert(0, str(Path(__file__).resolve().parent))

# Quiet, fast and offline defaults for every test process (and the workers they start).
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
