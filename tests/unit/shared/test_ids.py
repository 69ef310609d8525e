"""``is_uuid``: the one check the CLI and the webhook stores make before looking a row up by id."""

from __future__ import annotations

import uuid

import pytest

from memq.shared.ids import is_uuid


@pytest.mark.parametrize(
    "value",
    [
        "12345678-1234-5678-1234-567812345678",
        "12345678-1234-5678-1234-567812345678".upper(),
        "12345678123456781234567812345678",  # no dashes: uuid.UUID accepts it
        "{12345678-1234-5678-1234-567812345678}",
        "urn:uuid:12345678-1234-5678-1234-567812345678",
        str(uuid.uuid4()),
    ],
)
def test_a_uuid_is_recognised(value):
    assert is_uuid(value) is True


@pytest.mark.parametrize(
    "value",
    ["", "not-a-uuid", "12345678-1234-5678-1234-56781234567", "12345678-1234-5678-1234-5678123456789", "g" * 32],
)
def test_anything_else_is_not_a_uuid(value):
    assert is_uuid(value) is False
