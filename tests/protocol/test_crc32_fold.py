"""The native CRC-32 (carry-less multiplication from 64 bytes on, native/crc32fold.c; tables
below that or without PCLMULQDQ) is zlib's, for every length and alignment of the input."""

from __future__ import annotations

import zlib

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from rocketq.protocol import nativecodecs

needs_native = pytest.mark.skipif(nativecodecs.native is None, reason="native codecs switched off or not built")


@needs_native
@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=3000), offset=st.integers(0, 15))
@example(data=b"\xff" * 64, offset=0)
@example(data=b"\x00" * 1024, offset=3)
@example(data=bytes(range(256)) * 4 + b"x" * 15, offset=0)
def test_native_crc32_is_zlibs_at_any_length_and_alignment(data: bytes, offset: int) -> None:
    assert nativecodecs.native is not None
    view = memoryview(b"\x00" * offset + data)[offset:]  # the same bytes starting at another alignment
    assert nativecodecs.native.crc32(view) == zlib.crc32(data)


@needs_native
@pytest.mark.parametrize("size", [63, 64, 65, 79, 80, 127, 128, 129, 1024, 1 << 20])
def test_native_crc32_around_the_folding_sizes(size: int) -> None:
    assert nativecodecs.native is not None
    data = bytes((i * 131 + 7) & 0xFF for i in range(size))
    assert nativecodecs.native.crc32(data) == zlib.crc32(data)
