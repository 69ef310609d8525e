"""What an agent is shown of a conversation besides search (MIRA): the manifest
(episodes as a tree by relative date, the open segment marked Active) and the session
context (collapse marker, recent summaries, continuity, session boundary, the open
segment). Pure assembly in ``manifest.py`` and ``session.py``; reading in ``service.py``."""
