"""The HA port's two frames, as RocketMQ's HAConnection and HAClient exchange them.

The HA port is raw TCP, not remoting. There are exactly two kinds of data on it:

- **slave -> master, offset report**: 8 bytes, big-endian int64, the slave's CommitLog max
  offset (where its log ends). The first report tells the master where to start streaming;
  every later one acknowledges everything below it (SYNC_MASTER sends wait for that).
- **master -> slave, transfer**: a 12-byte header (int64 physical offset of the first body byte,
  int32 body size) and then that many raw CommitLog bytes. A body never spans two CommitLog
  segments and may cut a record; a header with size 0 is a heartbeat.

rocketq adds one meaning, to an empty frame only: a master whose log ends *below* the offset a
slave reported sends one empty frame at its own end and closes. An empty frame behind the
slave's end cannot otherwise happen, so a rocketq slave takes it as "you hold history I do
not" and truncates to it (an old master rejoining as a slave); an Apache slave sees an offset
mismatch, closes and reconnects, as it would anyway.

rocketq's epoch exchange (``ha/epochs.py``): a rocketq slave's first 8 bytes are the report
``EPOCH_REQUEST`` (-2, never a log end); the master answers with a transfer header at offset
``EPOCH_REQUEST`` and a JSON body (its epoch history and log end), then waits for the slave's
real first report. Apache masters do not know it, so a rocketq slave needs a rocketq master.

Pure functions: bytes in, values out; every limit checked before anything is allocated.
"""

from __future__ import annotations

import asyncio
import struct
from dataclasses import dataclass
from typing import Final

REPORT = struct.Struct(">q")
TRANSFER_HEADER = struct.Struct(">qi")
REPORT_SIZE: Final = REPORT.size
TRANSFER_HEADER_SIZE: Final = TRANSFER_HEADER.size
MAX_OFFSET: Final = (1 << 63) - 1
EPOCH_REQUEST: Final = -2
MAX_EPOCH_BODY: Final = 256 * 1024


class HAProtocolError(ValueError):
    """The peer sent something no HA peer sends; the connection is closed."""


@dataclass(frozen=True, slots=True)
class TransferHeader:
    offset: int
    size: int

    @property
    def end(self) -> int:
        return self.offset + self.size


def encode_report(max_offset: int) -> bytes:
    if not 0 <= max_offset <= MAX_OFFSET:
        raise ValueError(f"offset {max_offset} out of range")
    return REPORT.pack(max_offset)


def decode_report(data: bytes) -> int:
    """A slave's offset report, or ``EPOCH_REQUEST``; any other negative value is a protocol error."""
    if len(data) != REPORT_SIZE:
        raise HAProtocolError(f"an offset report is {REPORT_SIZE} bytes, got {len(data)}")
    (offset,) = REPORT.unpack(data)
    if offset < 0 and offset != EPOCH_REQUEST:
        raise HAProtocolError(f"negative offset {offset} reported")
    return int(offset)


def encode_epoch_request() -> bytes:
    return REPORT.pack(EPOCH_REQUEST)


def encode_epoch_answer(body: bytes) -> bytes:
    if len(body) > MAX_EPOCH_BODY:
        raise ValueError(f"epoch history of {len(body)} bytes (limit {MAX_EPOCH_BODY})")
    return TRANSFER_HEADER.pack(EPOCH_REQUEST, len(body)) + body


def decode_epoch_answer_header(data: bytes) -> int:
    """The size of the epoch answer's body; anything but an epoch answer is a protocol error."""
    if len(data) != TRANSFER_HEADER_SIZE:
        raise HAProtocolError(f"a transfer header is {TRANSFER_HEADER_SIZE} bytes, got {len(data)}")
    offset, size = TRANSFER_HEADER.unpack(data)
    if offset != EPOCH_REQUEST:
        raise HAProtocolError(f"expected the master's epoch history, got a frame at offset {offset} "
                              "(a master that is not rocketq?)")
    if not 0 <= size <= MAX_EPOCH_BODY:
        raise HAProtocolError(f"epoch history of {size} bytes (limit {MAX_EPOCH_BODY})")
    return int(size)


def encode_transfer_header(offset: int, size: int) -> bytes:
    if not 0 <= offset <= MAX_OFFSET - size or not 0 <= size < 1 << 31:
        raise ValueError(f"transfer header {offset}/{size} out of range")
    return TRANSFER_HEADER.pack(offset, size)


def decode_transfer_header(data: bytes, max_body: int) -> TransferHeader:
    """A master's frame header; refuses negative values and bodies over ``max_body``."""
    if len(data) != TRANSFER_HEADER_SIZE:
        raise HAProtocolError(f"a transfer header is {TRANSFER_HEADER_SIZE} bytes, got {len(data)}")
    offset, size = TRANSFER_HEADER.unpack(data)
    if offset < 0:
        raise HAProtocolError(f"negative offset {offset} in a transfer header")
    if not 0 <= size <= max_body:
        raise HAProtocolError(f"transfer body of {size} bytes (limit {max_body})")
    if offset > MAX_OFFSET - size:
        raise HAProtocolError(f"transfer at {offset} of {size} bytes overflows the offset range")
    return TransferHeader(int(offset), int(size))


def describe_failure(exc: BaseException) -> str:
    """Why an HA connection ended, for a log line."""
    if isinstance(exc, asyncio.IncompleteReadError):
        return "connection closed by the peer"
    if isinstance(exc, TimeoutError):
        return "nothing heard for haHousekeepingInterval (or the connect timed out)"
    return str(exc) or type(exc).__name__
