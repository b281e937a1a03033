"""The HA frames: round trips, and the decoders refuse what no HA peer sends (hypothesis)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.ha import protocol
from rocketq.ha.protocol import HAProtocolError

LIMIT = 1 << 20


@given(st.integers(0, protocol.MAX_OFFSET))
def test_report_round_trip(offset: int) -> None:
    assert protocol.decode_report(protocol.encode_report(offset)) == offset


@given(st.integers(0, 1 << 62), st.integers(0, LIMIT))
def test_transfer_header_round_trip(offset: int, size: int) -> None:
    header = protocol.decode_transfer_header(protocol.encode_transfer_header(offset, size), LIMIT)
    assert (header.offset, header.size, header.end) == (offset, size, offset + size)


@given(st.binary(min_size=0, max_size=20))
def test_any_report_bytes_decode_or_are_refused(data: bytes) -> None:
    try:
        offset = protocol.decode_report(data)
    except HAProtocolError:
        assert len(data) != 8 or data[0] & 0x80
    else:
        assert len(data) == 8 and offset >= 0


@given(st.binary(min_size=0, max_size=16))
def test_any_header_bytes_decode_within_limits_or_are_refused(data: bytes) -> None:
    try:
        header = protocol.decode_transfer_header(data, LIMIT)
    except HAProtocolError:
        return
    assert len(data) == 12 and header.offset >= 0 and 0 <= header.size <= LIMIT


@pytest.mark.parametrize("offset, size, why", [
    (-1, 0, "negative offset"),
    (0, -5, "transfer body"),
    (0, LIMIT + 1, "limit"),
    (protocol.MAX_OFFSET - 3, 10, "overflows"),
])
def test_bad_headers_say_why(offset: int, size: int, why: str) -> None:
    raw = protocol.TRANSFER_HEADER.pack(offset, size)
    with pytest.raises(HAProtocolError, match=why):
        protocol.decode_transfer_header(raw, LIMIT)
