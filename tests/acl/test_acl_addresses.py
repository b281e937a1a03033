"""whiteRemoteAddress patterns, as RocketMQ's RemoteAddressStrategyFactory reads them."""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.acl import addresses
from rocketq.acl.addresses import AddressPatternError

ipv4 = st.tuples(*(st.integers(0, 255) for _ in range(4))).map(lambda t: ".".join(map(str, t)))


@pytest.mark.parametrize(("pattern", "ip", "matches"), [
    ("*", "10.1.2.3", True),
    ("*.*.*.*", "10.1.2.3", True),
    ("", "10.1.2.3", False),
    (None, "127.0.0.1", False),
    ("192.168.0.*", "192.168.0.77", True),
    ("192.168.0.*", "192.168.1.77", False),
    ("192.168.*.*", "192.168.9.9", True),
    ("192.168.1.10-20", "192.168.1.15", True),
    ("192.168.1.10-20", "192.168.1.21", False),
    ("192.168.1-2.*", "192.168.2.200", True),
    ("192.168.1-2.*", "192.168.3.1", False),
    ("10.*", "10.200.1.1", True),
    ("192.168.1.{1,2,3}", "192.168.1.2", True),
    ("192.168.1.{1,2,3}", "192.168.1.4", False),
    ("10.0.0.1,10.0.0.2", "10.0.0.2", True),
    ("10.0.0.1,10.0.0.2", "10.0.0.3", False),
    ("127.0.0.1", "127.0.0.1", True),
    ("127.0.0.1", "127.0.0.2", False),
    ("::1", "0:0:0:0:0:0:0:1", True),
    ("192.168.0.*", "::1", False),
])
def test_patterns(pattern: str | None, ip: str, matches: bool) -> None:
    assert addresses.parse(pattern).match(ip) is matches


@pytest.mark.parametrize("bad", ["192.168.1.300", "192.168.1.20-10", "1.2.3.4.*", "*.1.2.3", "192.168.1.1,2,3",
                                 "hostname", "192.168.{1,2}", "1.2.3.-5"])
def test_malformed_patterns_are_refused(bad: str) -> None:
    with pytest.raises(AddressPatternError):
        addresses.parse(bad)


@given(ipv4, st.integers(1, 3), st.integers(0, 255), st.integers(0, 255))
def test_a_range_matches_exactly_the_addresses_whose_segment_is_inside(ip: str, index: int, a: int, b: int) -> None:
    low, high = min(a, b), max(a, b)
    segments = ip.split(".")
    pattern = ".".join([*segments[:index], f"{low}-{high}", *["*"] * (3 - index)])
    for probe in (ip, f"{(int(segments[0]) + 1) % 256}.{'.'.join(segments[1:])}"):
        parts = [int(p) for p in probe.split(".")]
        expected = parts[:index] == [int(s) for s in segments[:index]] and low <= parts[index] <= high
        assert addresses.parse(pattern).match(probe) is expected


@given(ipv4)
def test_an_address_matches_itself_and_the_wildcards(ip: str) -> None:
    assert addresses.parse(ip).match(ip)
    assert addresses.parse("*").match(ip)
    assert addresses.parse(f"{ip.rsplit('.', 1)[0]}.*").match(ip)
    assert not addresses.parse("").match(ip)


@given(st.text(max_size=20))
def test_any_text_parses_or_raises_the_pattern_error(text: str) -> None:
    try:
        pattern = addresses.parse(text)
    except AddressPatternError:
        return
    pattern.match("10.0.0.1")
    pattern.match(str(ipaddress.ip_address("::1")))
