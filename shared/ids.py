"""The rules for tenant and conversation ids, checked at every entry: the producer, the
CLI, the workers' tasks (a task message is input too) and, later, the HTTP API.

Both end up inside Redis key names (``tenant/conversation``) and PostgreSQL rows, so the
alphabets are small and exclude the separators ``/``, ``{``, ``}`` and whitespace.
"""

from __future__ import annotations

import re
import uuid
from typing import Any

from memq.shared.errors import ValidationError

TENANT_PATTERN = r"^[A-Za-z0-9_\-]{1,64}$"
CONVERSATION_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:\-]*$"
_TENANT = re.compile(TENANT_PATTERN)
_CONVERSATION = re.compile(CONVERSATION_ID_PATTERN)


def check_tenant(value: Any, index: int | None = None) -> str:
    if not isinstance(value, str) or not _TENANT.fullmatch(value):
        shown = repr(value) if isinstance(value, str) and len(value) <= 80 else f"a {type(value).__name__}"
        raise ValidationError(
            f"{shown} is not a tenant id: use 1-64 letters, digits, '_' or '-'", field="tenant", index=index
        )
    return value


def check_conversation_id(
    value: Any, max_length: int = 128, index: int | None = None, field: str = "conversation_id"
) -> str:
    if not isinstance(value, str) or not value:
        raise ValidationError("must be a non-empty string", field=field, index=index)
    if len(value) > max_length:
        raise ValidationError(f"is {len(value)} characters; at most {max_length} are allowed", field=field, index=index)
    if not _CONVERSATION.fullmatch(value):
        raise ValidationError(
            f"{value!r} has characters outside letters, digits and . _ : - (or does not start with a letter or digit)",
            field=field,
            index=index,
        )
    return value


def check_user_id(value: Any, max_length: int = 128, index: int | None = None, field: str = "user_id") -> str:
    """A user id: the alphabet and length of a conversation id (it ends up in the same places)."""
    return check_conversation_id(value, max_length, index, field)


def is_uuid(value: str) -> bool:
    """Whether ``value`` parses as a UUID (a row id asked for by the caller: a malformed one
    is "not found", never a database error)."""
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True
