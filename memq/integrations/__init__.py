"""memq inside agent frameworks, built on :mod:`memq.client` (the HTTP API), so they work
against a remote memq. Each integration is a module of its own, imported only by who uses
it, with its framework from an optional extra (docs/integrations.md):

* :mod:`memq.integrations.langchain` (``pip install 'memq[langchain]'``): a chat message
  history, a retriever, memory tools and LangGraph nodes;
* :mod:`memq.integrations.openai_agents` (``pip install 'memq[openai-agents]'``): a session
  of the OpenAI Agents SDK and memory tools.

Importing this package imports no framework; any MCP-speaking framework uses memq's MCP
server instead (``/mcp`` of ``memq api``, or ``memq mcp``).
"""
