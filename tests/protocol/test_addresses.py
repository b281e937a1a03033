"""The one parser of ``host:port`` and ``host:port;host:port`` that every component uses."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.protocol import addresses

HOSTS = st.from_regex(r"[a-z][a-z0-9.-]{0,20}", fullmatch=True)
PORTS = st.integers(min_value=1, max_value=addresses.MAX_PORT)


def test_lists_split_on_semicolons_and_commas_and_drop_blanks() -> None:
    assert addresses.split_list(" a:1; b:2 ,c:3;;") == ["a:1", "b:2", "c:3"]
    assert addresses.split_list("  ") == []


@pytest.mark.parametrize("addr, expected", [
    ("127.0.0.1:9876", ("127.0.0.1", 9876)),
    (" broker-a:10911 ", ("broker-a", 10911)),
    ("[::1]:9876", ("::1", 9876)),
])
def test_host_port_parses(addr: str, expected: tuple[str, int]) -> None:
    assert addresses.parse_host_port(addr) == expected
    assert addresses.is_host_port(addr)


@pytest.mark.parametrize("addr", ["", "host", "host:", ":9876", "host:0", "host:65536", "host:x1", "host:-1"])
def test_bad_host_port_is_a_value_error(addr: str) -> None:
    with pytest.raises(ValueError, match="expected host:port"):
        addresses.parse_host_port(addr)
    assert not addresses.is_host_port(addr)


@given(st.lists(st.tuples(HOSTS, PORTS), max_size=5))
def test_a_written_list_parses_back(entries: list[tuple[str, int]]) -> None:
    text = ";".join(f"{host}:{port}" for host, port in entries)
    assert [addresses.parse_host_port(a) for a in addresses.split_list(text)] == entries


@given(st.text(max_size=40))
def test_any_text_parses_or_raises_value_error(text: str) -> None:
    for addr in addresses.split_list(text):
        try:
            host, port = addresses.parse_host_port(addr)
        except ValueError:
            continue
        assert host and 1 <= port <= addresses.MAX_PORT
