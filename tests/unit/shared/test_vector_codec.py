"""The vector text codec: base64 of little-endian float32, byte for byte what the worker's
Redis state and the portability file have always held."""

from __future__ import annotations

import base64
import binascii

import numpy as np
import pytest
from pgvector import Vector

from memq.shared.vector_codec import decode_vector, encode_vector

# Each value exactly representable in float32 (the largest finite one, the smallest
# subnormal, a negative zero): the round trip must give them back bit for bit.
VALUES = [1.0, -2.5, 0.25, 3.4028234663852886e38, 1.401298464324817e-45, -0.0, 0.0]


def test_the_bytes_are_little_endian_float32_in_base64():
    assert encode_vector(np.array([0.25, -1.0], dtype=np.float32)) == "AACAPgAAgL8="
    assert base64.b64decode(encode_vector(np.array([0.25, -1.0]))) == b"\x00\x00\x80\x3e\x00\x00\x80\xbf"


def test_round_trip_gives_back_the_exact_values():
    v = np.array(VALUES, dtype=np.float32)
    back = decode_vector(encode_vector(v))
    assert back.dtype == np.float32
    assert back.tolist() == VALUES
    assert back.tobytes() == v.tobytes()  # -0.0 kept: bit for bit, not only ==


def test_what_was_stored_before_reads_back():
    """Text written by the earlier copies of the codec (the event state's native float32,
    the conversation store's and the portability file's ``<f4``)."""
    assert decode_vector("AACAPwAAIMA=").tolist() == [1.0, -2.5]
    stored = base64.b64encode(np.array([0.5, 2.0], dtype=np.float32).tobytes()).decode()
    assert decode_vector(stored).tolist() == [0.5, 2.0]


def test_other_inputs_encode_as_float32():
    assert encode_vector([0.25, -1.0]) == "AACAPgAAgL8="  # a list of floats
    assert encode_vector(np.array([0.25, -1.0], dtype=np.float64)) == "AACAPgAAgL8="  # narrowed to float32
    assert encode_vector(Vector([0.25, -1.0])) == "AACAPgAAgL8="  # pgvector's Vector
    assert encode_vector(np.array([], dtype=np.float32)) == ""
    assert decode_vector("").tolist() == []


def test_the_decoded_vector_is_a_writable_array_of_its_own():
    back = decode_vector("AACAPgAAgL8=")
    back[0] = 7.0  # np.frombuffer alone would give a read-only view of the bytes
    assert back.tolist() == [7.0, -1.0]


def test_text_that_is_not_base64_is_refused():
    with pytest.raises(binascii.Error):
        decode_vector("AACAP!AAgL8=")
