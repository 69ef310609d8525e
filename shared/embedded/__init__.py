"""Embedded services for a machine with nothing installed: a real redis-server and a
real PostgreSQL with pgvector, both from pip packages, started into ``data_dir``.

Used only when ``REDIS_URL`` / ``DATABASE_URL`` are unset. ``services.py`` is the
entry point (up, down, status); one module per server.
"""
