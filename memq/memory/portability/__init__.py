"""Data portability: a tenant (or one conversation) as a JSON Lines file, and back.

- ``format``: the records, their version, and how a line is parsed and checked;
- ``export``: the streaming read of a tenant's rows into records;
- ``importer``: the idempotent write of records into a deployment (re-embedding when the
  file's embedding model is not the configured one).

See docs/portability.md."""
