"""Bearer API keys: their format and hash (``api_keys.py``); storage is ``shared/db/api_keys.py``."""
