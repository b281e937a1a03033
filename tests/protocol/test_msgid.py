"""Message ids: offsetMsgId layout and decoding, unique-key layout, speed-sensitive generator."""

from __future__ import annotations

import datetime
import ipaddress
import itertools
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketq.protocol import msgid, nativecodecs
from rocketq.protocol.msgid import MessageIdError


def test_offset_msg_id_fixture_value() -> None:
    assert msgid.create_offset_msg_id(("10.218.145.166", 10700), 433806745406) == \
        "0ADA91A6000029CC0000006500E59F3E"


@given(st.ip_addresses(), st.integers(0, 65535), st.integers(0, (1 << 63) - 1))
def test_offset_msg_id_round_trip(ip: object, port: int, offset: int) -> None:
    made = msgid.create_offset_msg_id((str(ip), port), offset)
    assert made == made.upper()
    assert len(made) == (32 if ":" not in str(ip) else 56)
    decoded = msgid.decode_offset_msg_id(made)
    assert ipaddress.ip_address(decoded.store_host[0]) == ip
    assert decoded.store_host[1] == port
    assert decoded.commit_log_offset == offset
    assert msgid.decode_offset_msg_id(made.lower()) == decoded


@pytest.mark.parametrize("bad", ["", "XYZ", "0" * 31, "G" * 32, "0" * 40, "0ADA91A6FFFFFFFF0000006500E59F3E",
                                 "0ADA91A6000029CCFFFFFFFFFFFFFFFF"])
def test_offset_msg_id_rejects(bad: str) -> None:
    with pytest.raises(MessageIdError):
        msgid.decode_offset_msg_id(bad)


def test_uniq_id_layout() -> None:
    now = [int(datetime.datetime(2024, 3, 5, 12, 0).astimezone().timestamp() * 1000)]
    gen = msgid.UniqIdGenerator(ip="192.168.1.20", pid=0x12345, seed=0xCAFEBABE, clock_ms=lambda: now[0])
    first, second = gen.next_id(), gen.next_id()
    assert len(first) == 32 and first == first.upper()
    assert first.startswith("C0A80114" + "2345" + "CAFEBABE")
    assert first[:28] == second[:28]
    assert int(second[-4:], 16) == int(first[-4:], 16) + 1
    decoded = msgid.decode_uniq_id(first)
    assert (decoded.ip, decoded.pid, decoded.counter) == ("192.168.1.20", 0x2345, 0)
    month_start, _ = msgid.month_bounds_ms(now[0])
    assert decoded.ms_since_month_start == now[0] - month_start
    # The next month restarts the time field near zero.
    now[0] = int(datetime.datetime(2024, 4, 1, 0, 0, 1).astimezone().timestamp() * 1000)
    assert msgid.decode_uniq_id(gen.next_id()).ms_since_month_start == 1000


def test_uniq_ids_unique_and_counter_wraps() -> None:
    gen = msgid.UniqIdGenerator(ip="10.0.0.1", pid=1, seed=1, clock_ms=lambda: 1_700_000_000_000)
    ids = [gen.next_id() for _ in range(70000)]
    assert len(set(ids)) == 65536  # a frozen clock: the 16-bit counter is all that differs
    assert ids[65536] == ids[0]


def test_uniq_id_defaults_and_ipv6() -> None:
    assert len(msgid.UniqIdGenerator().next_id()) == 32
    gen = msgid.UniqIdGenerator(ip="2001:db8::1", pid=7, seed=3)
    made = gen.next_id()
    assert len(made) == 56
    assert msgid.decode_uniq_id(made).ip == "2001:db8::1"
    with pytest.raises(MessageIdError):
        msgid.decode_uniq_id("nothex" * 6)


def test_pack_host_rejects() -> None:
    with pytest.raises(ValueError):
        msgid.pack_host(("1.2.3", 1))
    with pytest.raises(ValueError):
        msgid.pack_host(("1.2.3.4", -1))
    with pytest.raises(ValueError):
        msgid.unpack_host(b"123")


@given(now=st.integers(0, 1 << 45), start=st.integers(0, 1 << 45), counter=st.integers(0, 1 << 20))
def test_a_unique_key_is_the_prefix_then_8_and_4_hex_digits(now: int, start: int, counter: int) -> None:
    """``next_id`` formats the time and the counter as one 12-digit number: the same text as
    two fields of 8 and 4 digits (how it was written before, and how RocketMQ lays it out)."""
    gen = msgid.UniqIdGenerator(ip="10.0.0.1", pid=1, seed=1, clock_ms=lambda: now)
    gen._month_start, gen._next_month_start = start, now + 1
    gen._counter = iter([counter])  # type: ignore[assignment]
    since = (now - start) & 0xFFFFFFFF
    assert gen.next_id() == f"{gen.prefix}{since:08X}{counter & 0xFFFF:04X}"


# --- next_unique_key: next_id in one (C) call -----------------------------------------------------


def _wall_ms() -> int:
    return time.time_ns() // 1_000_000


def _twin_at(ids: msgid.UniqIdGenerator, now_ms: int, counter_start: int) -> msgid.UniqIdGenerator:
    """A pure generator in ``ids``'s state whose clock reads ``now_ms``."""
    twin = msgid.UniqIdGenerator(clock_ms=lambda: now_ms)
    twin._prefix, twin._counter = ids.prefix, itertools.count(counter_start)
    twin._month_start, twin._next_month_start = ids._month_start, ids._next_month_start
    return twin


@settings(max_examples=300, deadline=None)
@given(st.ip_addresses(), st.integers(0, 0xFFFF), st.integers(0, 0xFFFFFFFF),
       st.integers(0, 1 << 40), st.integers(-(1 << 34), 1 << 34))
def test_next_unique_key_is_next_id(ip: object, pid: int, seed: int, counter_start: int, since: int) -> None:
    """The key (C twin or pure) is the text ``next_id`` makes at the same clock reading; ``since``
    puts the month's start anywhere around now, so the masked offset takes every shape."""
    ids = msgid.UniqIdGenerator(str(ip), pid, seed)
    ids._counter = itertools.count(counter_start)
    now = _wall_ms()
    ids._month_start, ids._next_month_start = now - since, now + 10**9
    before = _wall_ms()
    key = msgid.next_unique_key(ids)
    after = _wall_ms()
    assert key in {_twin_at(ids, at, counter_start).next_id() for at in range(before, after + 1)}
    assert next(ids._counter) == counter_start + 1  # one count taken


def test_next_unique_key_is_native_when_built() -> None:
    if nativecodecs.native is None:
        assert msgid.next_unique_key is nativecodecs.pure(msgid.next_unique_key)
    else:
        assert msgid.next_unique_key is not nativecodecs.pure(msgid.next_unique_key)


def test_next_unique_key_with_a_test_clock_is_next_id() -> None:
    made = [msgid.UniqIdGenerator("10.0.0.1", 3, 4, clock_ms=lambda: 1_700_000_000_123) for _ in range(2)]
    assert [msgid.next_unique_key(made[0]) for _ in range(3)] == [made[1].next_id() for _ in range(3)]


def test_next_unique_key_at_a_new_month_recomputes_its_bounds() -> None:
    ids = msgid.UniqIdGenerator("10.0.0.1", 3, 4)
    ids._month_start, ids._next_month_start = 0, _wall_ms() - 1  # the month ended a moment ago
    key = msgid.next_unique_key(ids)
    now = _wall_ms()
    assert ids._month_start <= now < ids._next_month_start
    assert 0 <= now - ids._month_start - msgid.decode_uniq_id(key).ms_since_month_start <= 1000
