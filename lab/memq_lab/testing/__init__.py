"""Tools for exercising memq without the outside world: a scripted OpenAI-compatible
LLM server (used by the test suite and by `make soak`)."""
