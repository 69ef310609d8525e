"""The read side of memory (Plast Mem): hybrid retrieval, recent memory and their
renderings. A library in ``shared`` so that the CLI, the HTTP API, the MCP server, the
evaluation and later consolidation all call the same code.

- ``request``: what a caller may ask, validated;
- ``time_expressions``: times a query names ("last week", "in May 2023");
- ``fusion``: Reciprocal Rank Fusion; ``retrievability``: FSRS at query time;
- ``selection``: which messages of which episodes fit the token budget;
- ``render``: markdown for an LLM, JSON with every score;
- ``legs``: the SQL of the lexical and vector legs; ``service``: the orchestration.
"""
