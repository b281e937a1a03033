"""Message ids: the broker's offsetMsgId and the client's unique key (UNIQ_KEY).

A RocketMQ message has two ids:

* The **offsetMsgId**, made by the broker when it stores the message: the store host (IPv4
  4 bytes or IPv6 16 bytes, then the port as an i32) followed by the CommitLog physical offset
  (i64), as upper-case hex (32 characters for IPv4, 56 for IPv6). It locates the message, so
  VIEW_MESSAGE_BY_ID can be answered from the id alone (``decode_offset_msg_id``).
* The **unique key**, made by the producer before sending (``MessageClientIDSetter``): a fixed
  prefix (client IP, pid as a short, a random per-process int) then the milliseconds since the
  start of the current month (i32) and a wrapping counter (i16). It is what ``SendResult.msgId``
  shows and what consumers see as ``msg_id``. It identifies, it does not locate.

Pure functions and a small generator object; no sockets are opened except the one-time,
packet-less local-address probe in ``local_ip``.
"""

from __future__ import annotations

import datetime
import functools
import itertools
import os
import secrets
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from rocketq.protocol import nativecodecs

Host = tuple[str, int]

IPV4_ID_LENGTH: Final = 32
IPV6_ID_LENGTH: Final = 56
_I64_MASK: Final = (1 << 64) - 1


class MessageIdError(ValueError):
    """A string is not a message id of the expected layout."""


# --- hosts ---------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=4096)
def pack_host(host: Host) -> bytes:
    """IP bytes (4 or 16) + port as a big-endian i32; cached since a broker sees few hosts."""
    ip, port = host
    if not 0 <= port <= 0xFFFF:
        raise ValueError(f"port {port} out of range")
    family = socket.AF_INET6 if ":" in ip else socket.AF_INET
    try:
        return socket.inet_pton(family, ip) + port.to_bytes(4, "big")
    except OSError:
        raise ValueError(f"{ip!r} is not an IP address") from None


def unpack_host(raw: bytes) -> Host:
    """Inverse of ``pack_host`` for 8- or 20-byte values."""
    if len(raw) not in (8, 20):
        raise ValueError(f"a packed host is 8 or 20 bytes, not {len(raw)}")
    port = int.from_bytes(raw[-4:], "big", signed=True)
    if len(raw) == 8:
        return socket.inet_ntop(socket.AF_INET, raw[:4]), port
    return socket.inet_ntop(socket.AF_INET6, raw[:16]), port


# --- offsetMsgId ---------------------------------------------------------------------------------


def offset_msg_id_prefix(store_host: Host) -> str:
    """The host part of every offsetMsgId a broker makes; compute once, then add offsets."""
    return pack_host(store_host).hex().upper()


def offset_msg_id_from_raw(packed_host: bytes, commit_log_offset: int) -> str:
    return f"{_host_hex(packed_host)}{commit_log_offset & _I64_MASK:016X}"


@functools.lru_cache(maxsize=4096)
def _host_hex(packed_host: bytes) -> str:
    """Upper-case hex of a packed host; every record a consumer decodes names its store host."""
    return packed_host.hex().upper()


def create_offset_msg_id(store_host: Host, commit_log_offset: int) -> str:
    return f"{offset_msg_id_prefix(store_host)}{commit_log_offset & _I64_MASK:016X}"


@dataclass(frozen=True, slots=True)
class OffsetMsgId:
    store_host: Host
    commit_log_offset: int


def decode_offset_msg_id(msg_id: str) -> OffsetMsgId:
    """Split an offsetMsgId into store host and CommitLog offset; MessageIdError if it is not one."""
    if len(msg_id) not in (IPV4_ID_LENGTH, IPV6_ID_LENGTH):
        raise MessageIdError(f"an offset message id has 32 or 56 hex digits, got {len(msg_id)}")
    try:
        raw = bytes.fromhex(msg_id)
    except ValueError:
        raise MessageIdError(f"{msg_id!r} is not hexadecimal") from None
    host = unpack_host(raw[:-8])
    offset = int.from_bytes(raw[-8:], "big", signed=True)
    if host[1] < 0 or offset < 0:
        raise MessageIdError(f"{msg_id!r} holds a negative port or offset")
    return OffsetMsgId(host, offset)


# --- unique key ----------------------------------------------------------------------------------


def local_ip() -> str:
    """This host's outward IPv4 address, found without sending a packet; 127.0.0.1 if none."""
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect(("192.0.2.1", 9))  # TEST-NET-1: routing lookup only, nothing is sent
        return str(probe.getsockname()[0])
    except OSError:
        return "127.0.0.1"
    finally:
        probe.close()


def month_bounds_ms(now_ms: int) -> tuple[int, int]:
    """Start of the current local month and of the next one, in epoch milliseconds."""
    now = datetime.datetime.fromtimestamp(now_ms / 1000).astimezone()
    start = now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    following = (start + datetime.timedelta(days=32)).replace(day=1)
    return int(start.timestamp() * 1000), int(following.timestamp() * 1000)


class UniqIdGenerator:
    """Makes UNIQ_KEY values in RocketMQ's layout; one per process is enough.

    ``next_id`` is on every send's path, so it formats one f-string and does nothing else
    except, once a month, recompute the month boundary. Slots: ``next_unique_key``'s C twin
    reads the five fields at their slot offsets (five attribute lookups were a third of its
    cost).
    """

    __slots__ = ("_clock_ms", "_counter", "_month_start", "_next_month_start", "_prefix")

    def __init__(
        self,
        ip: str | None = None,
        pid: int | None = None,
        seed: int | None = None,
        clock_ms: Callable[[], int] | None = None,
    ) -> None:
        ip_raw = pack_host((ip or local_ip(), 0))[:-4]
        pid_raw = ((os.getpid() if pid is None else pid) & 0xFFFF).to_bytes(2, "big")
        seed_raw = ((secrets.randbits(32) if seed is None else seed) & 0xFFFFFFFF).to_bytes(4, "big")
        self._prefix = (ip_raw + pid_raw + seed_raw).hex().upper()
        self._clock_ms = clock_ms  # a clock for tests; None: the wall clock, read inline (no call per key)
        self._counter = itertools.count()
        self._month_start, self._next_month_start = month_bounds_ms(self._now_ms())

    @property
    def prefix(self) -> str:
        return self._prefix

    def _now_ms(self) -> int:
        return time.time_ns() // 1_000_000 if self._clock_ms is None else self._clock_ms()

    def next_id(self) -> str:
        now = time.time_ns() // 1_000_000 if self._clock_ms is None else self._clock_ms()
        if now >= self._next_month_start:
            self._month_start, self._next_month_start = month_bounds_ms(now)
        since = (now - self._month_start) & 0xFFFFFFFF
        # 8 hex digits of ``since`` then 4 of the counter, as one 12-digit number: one format
        return f"{self._prefix}{since << 16 | next(self._counter) & 0xFFFF:012X}"

    def next_ids(self, count: int) -> list[str]:
        """``count`` keys as ``next_id`` makes them one after another, with one clock reading
        (a batch's keys, made within microseconds of each other)."""
        now = self._now_ms()
        if now >= self._next_month_start:
            self._month_start, self._next_month_start = month_bounds_ms(now)
        head = f"{self._prefix}{(now - self._month_start) & 0xFFFFFFFF:08X}"
        counter = self._counter
        return [f"{head}{next(counter) & 0xFFFF:04X}" for _ in range(count)]


@nativecodecs.accelerated
def next_unique_key(ids: UniqIdGenerator) -> str:
    """``ids.next_id()``. Its C twin (native/clientsend.c) reads the wall clock and the counter
    and formats the key in one call, without ``next_id``'s Python frame and ``f``-string (the
    same text: tests/protocol/test_msgid.py); a test clock or a new month comes here."""
    return ids.next_id()


@dataclass(frozen=True, slots=True)
class UniqId:
    ip: str
    pid: int
    ms_since_month_start: int
    counter: int


def decode_uniq_id(uniq_id: str) -> UniqId:
    """What a unique key tells: client IP, pid, time within its month, counter."""
    if len(uniq_id) not in (IPV4_ID_LENGTH, IPV6_ID_LENGTH):
        raise MessageIdError(f"a unique key has 32 or 56 hex digits, got {len(uniq_id)}")
    try:
        raw = bytes.fromhex(uniq_id)
    except ValueError:
        raise MessageIdError(f"{uniq_id!r} is not hexadecimal") from None
    ip_len = len(raw) - 12
    family = socket.AF_INET if ip_len == 4 else socket.AF_INET6
    return UniqId(
        ip=socket.inet_ntop(family, raw[:ip_len]),
        pid=int.from_bytes(raw[ip_len:ip_len + 2], "big"),
        ms_since_month_start=int.from_bytes(raw[-6:-2], "big"),
        counter=int.from_bytes(raw[-2:], "big"),
    )
