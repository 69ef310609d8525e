"""memq's HTTP service (FastAPI): ingest, retrieval, agent context, forget, health, and
the MCP server mounted at ``/mcp``. ``create_app`` builds it; ``memq api`` serves it."""
