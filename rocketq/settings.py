"""Settings: small typed dataclasses loaded from RocketMQ-style ``.conf``/``.properties`` files.

A settings group is a frozen dataclass whose fields are declared with ``setting(key, default,
doc)``; ``key`` is RocketMQ's own config key (``brokerName``, ``flushDiskType``), so a
broker.conf written for Apache RocketMQ loads as it is. ``load`` reads a Java properties file
(jproperties), applies environment overrides, coerces and validates values, and builds every
group it is asked for from the one file. Keys no group claims are returned so the caller can log
them once as ignored: RocketMQ has ~200 keys and a JVM-specific one must never crash a broker.
"""

from __future__ import annotations

import dataclasses
import enum
import os
import typing
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Final, TypeVar

import jproperties

from rocketq.protocol import addresses

T = TypeVar("T")

MAX_PORT: Final = 65535
PORT_ANY: Final = 0
"""A listen port of 0: the kernel picks a free port; the process reports the one it got."""
PORT_OFF: Final = -1
"""metricsPort=-1: that listener is not started at all."""


class SettingsError(ValueError):
    """A config value cannot be used; the message names the key, the value and what is expected."""


def check_port(key: str, value: int, *, lowest: int = PORT_ANY) -> None:
    """A port setting must be a TCP port; ``lowest`` is 1 where 0 means nothing, -1 where "off" is allowed.

    Checked before anything binds: the kernel takes a port modulo 65536 on some paths, so
    ``listenPort=70000`` would otherwise start a broker on port 4464.
    """
    if not lowest <= value <= MAX_PORT:
        meaning = {PORT_OFF: " (-1 = off, 0 = any free port)", PORT_ANY: " (0 = any free port)"}.get(lowest, "")
        raise SettingsError(f"{key}={value}: expected a port number {lowest}..{MAX_PORT}{meaning}")


def check_addresses(key: str, text: str) -> None:
    """Every entry of an address list must be ``host:port`` with a port 1..65535."""
    for addr in addresses.split_list(text):
        if not addresses.is_host_port(addr):
            raise SettingsError(f"{key}={text!r}: {addr!r} is not host:port with a port 1..{MAX_PORT}")


def setting(key: str, default: Any, doc: str = "", *, env: str | None = None, secret: bool = False) -> Any:
    """Declare a field: RocketMQ's key, its default, why it exists; optionally an env override.
    A ``secret`` field is left out of the group's repr (logs, tracebacks)."""
    return dataclasses.field(default=default, repr=not secret, metadata={"key": key, "doc": doc, "env": env})


_FIELDS: dict[type, tuple[tuple[str, str, Any, str | None], ...]] = {}


def _fields(cls: type) -> tuple[tuple[str, str, Any, str | None], ...]:
    if cls not in _FIELDS:
        hints = typing.get_type_hints(cls)
        _FIELDS[cls] = tuple(
            (f.name, f.metadata["key"], hints[f.name], f.metadata.get("env")) for f in dataclasses.fields(cls)
        )
    return _FIELDS[cls]


def keys_of(cls: type) -> set[str]:
    return {key for _name, key, _kind, _env in _fields(cls)}


def _coerce(kind: Any, key: str, raw: str) -> Any:
    text = raw.strip()
    if kind is str:
        return text
    if kind is bool:
        if text.lower() in ("true", "false"):
            return text.lower() == "true"
        raise SettingsError(f"{key}={raw!r}: expected true or false")
    if kind is int:
        try:
            return int(text)
        except ValueError:
            raise SettingsError(f"{key}={raw!r}: expected an integer") from None
    if kind is float:
        try:
            return float(text)
        except ValueError:
            raise SettingsError(f"{key}={raw!r}: expected a number") from None
    if isinstance(kind, type) and issubclass(kind, enum.Enum):
        try:
            return kind[text.upper()]
        except KeyError:
            allowed = ", ".join(m.name for m in kind)
            raise SettingsError(f"{key}={raw!r}: expected one of {allowed}") from None
    raise TypeError(f"unsupported settings type {kind!r} for {key}")


def build(
    cls: type[T],
    values: Mapping[str, str],
    environ: Mapping[str, str] | None = None,
    overrides: Mapping[str, str] | None = None,
) -> T:
    """Build one settings group: ``overrides`` (command line) beat the environment, which beats the file."""
    environ = os.environ if environ is None else environ
    overrides = overrides or {}
    kwargs: dict[str, Any] = {}
    for name, key, kind, env in _fields(cls):
        raw = overrides.get(key)
        if raw is None and env:
            raw = environ.get(env)
        if raw is None:
            raw = values.get(key)
        if raw is not None:
            kwargs[name] = _coerce(kind, key, raw)
    return cls(**kwargs)


def read_properties(path: str | Path) -> dict[str, str]:
    """Read a Java properties file; a missing or unreadable file is a SettingsError."""
    props = jproperties.Properties()
    try:
        with open(path, "rb") as fh:
            props.load(fh, "utf-8")
    except OSError as exc:
        raise SettingsError(f"cannot read config file {path}: {exc.strerror}") from None
    except Exception as exc:  # jproperties raises its own parse errors
        raise SettingsError(f"cannot parse config file {path}: {exc}") from None
    return {str(k): str(v.data) for k, v in props.items()}


def unknown_keys(values: Mapping[str, str], groups: Iterable[type]) -> list[str]:
    known: set[str] = set()
    for cls in groups:
        known |= keys_of(cls)
    return sorted(k for k in values if k not in known)


def describe(cls: type) -> list[tuple[str, Any, str]]:
    """(key, default, doc) for each field: what `rocketq broker --print-config` shows."""
    return [(f.metadata["key"], f.default, f.metadata["doc"]) for f in dataclasses.fields(cls)]


def as_properties(obj: Any) -> dict[str, str]:
    """A settings object back as RocketMQ keys and Java-style strings (GET_BROKER_CONFIG)."""
    out: dict[str, str] = {}
    for name, key, _kind, _env in _fields(type(obj)):
        value = getattr(obj, name)
        if isinstance(value, bool):
            out[key] = "true" if value else "false"
        elif isinstance(value, enum.Enum):
            out[key] = value.name
        else:
            out[key] = str(value)
    return out
