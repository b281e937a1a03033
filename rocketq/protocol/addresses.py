"""Network addresses as RocketMQ writes them: ``host:port`` and ``host:port;host:port`` lists.

Every component reads the same two shapes: a name-server list (``namesrvAddr``, mqadmin's
``-n``, a client's ``namesrv_addr``) and one ``host:port`` (a broker address, ``haMasterAddress``,
a registration's ``brokerAddr``). This module is the one parser for both, so that a setting the
broker accepts is one the client and the admin tools accept too.

* A list separates entries with ``;`` (RocketMQ's separator); commas are accepted as well, and
  blanks around entries and empty entries are ignored.
* The port is the text after the *last* colon, so an IPv6 host may be bracketed
  (``[::1]:9876``); the brackets are dropped from the host that ``parse_host_port`` returns.
  A port must be 1..65535.

Errors are ``ValueError`` with the offending text; each caller turns it into its own error type
(SettingsError, RemotingConnectError, ArgumentError, RouteError).
"""

from __future__ import annotations

from typing import Final

MAX_PORT: Final = 65535


def split_list(text: str) -> list[str]:
    """RocketMQ's address lists ("host:port;host:port", commas also accepted) as a list."""
    return [a.strip() for a in text.replace(",", ";").split(";") if a.strip()]


def parse_host_port(addr: str) -> tuple[str, int]:
    """``host:port`` as (host without IPv6 brackets, port); ValueError unless the port is 1..65535."""
    host, sep, port = addr.strip().rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) <= MAX_PORT:
        raise ValueError(f"bad address {addr!r}: expected host:port with a port 1..{MAX_PORT}")
    return host.strip("[]"), int(port)


def is_host_port(addr: str) -> bool:
    """Whether ``parse_host_port`` accepts ``addr``."""
    try:
        parse_host_port(addr)
    except ValueError:
        return False
    return True
