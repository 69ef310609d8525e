"""Webhooks: a tenant's HTTPS endpoints told about changes to its memory (docs/webhooks.md).

``signing`` (pure: secrets, signatures, URL checks), ``endpoints`` and ``deliveries``
(PostgreSQL repositories), ``events`` (the emitters, called in the transaction of the
change), ``sending`` (one HTTP attempt and what its outcome means).
"""
