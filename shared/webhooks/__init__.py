"""Webhooks: a tenant's HTTPS endpoints told about changes to its memory (docs/webhooks.md).

``signing`` (pure: secrets, signatures), ``destinations`` (where a webhook may go: public
addresses only, checked at registration and at every delivery), ``endpoints`` and ``deliveries``
(PostgreSQL repositories), ``events`` (the emitters, called in the transaction of the
change), ``sending`` (one HTTP attempt and what its outcome means).
"""
