"""Messages as values: what a producer sends (``Message``) and what a consumer reads (``MessageExt``).

* ``Message`` is what a producer hands to a broker: a topic, a body, an int ``flag`` and a
  string-to-string properties map (``rocketq.protocol.messageproperties``). Mutable on purpose:
  producers stamp ids and flags before sending.
* ``MessageExt`` is a stored record decoded (``rocketq.protocol.storedrecords``): every field of
  RocketMQ's layout plus the two message ids.
* ``MessageSysFlag`` names the bits of a message's ``sysFlag`` (compression, transaction type,
  IPv6 hosts); ``CompressionType`` the compression field's values.

Pure values: no I/O, no clocks.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final

from rocketq.protocol import msgid
from rocketq.protocol.messageproperties import DELAY, KEY_SEPARATOR, KEYS, TAGS, TRANSACTION_ID, UNIQ_KEY, split_keys


class MessageSysFlag:
    """Bits of a message's ``sysFlag`` (``MessageSysFlag.java``).

    The transaction type is the two-bit field ``TRANSACTION_MASK`` (ROLLBACK = PREPARED|COMMIT,
    so these are values of a field, not independent flags); the compression type is the
    three-bit field ``COMPRESSION_TYPE_MASK``.
    """

    COMPRESSED: Final = 0x1
    MULTI_TAGS: Final = 0x2
    TRANSACTION_NOT_TYPE: Final = 0
    TRANSACTION_PREPARED_TYPE: Final = 0x4
    TRANSACTION_COMMIT_TYPE: Final = 0x8
    TRANSACTION_ROLLBACK_TYPE: Final = 0xC
    TRANSACTION_MASK: Final = 0xC
    BORNHOST_V6: Final = 0x10
    STOREHOST_V6: Final = 0x20
    NEED_UNWRAP: Final = 0x40
    INNER_BATCH: Final = 0x80
    COMPRESSION_TYPE_MASK: Final = 0x700


class CompressionType(enum.IntEnum):
    """Value of sysFlag bits 8-10; 0 means "not stated", which RocketMQ 4 treats as zlib."""

    UNSTATED = 0
    LZ4 = 1
    ZSTD = 2
    ZLIB = 3


def transaction_type(sys_flag: int) -> int:
    return sys_flag & MessageSysFlag.TRANSACTION_MASK


def with_transaction_type(sys_flag: int, tx_type: int) -> int:
    return (sys_flag & ~MessageSysFlag.TRANSACTION_MASK) | tx_type


def compression_type(sys_flag: int) -> CompressionType | None:
    """The compression type bits, or None when they hold a value RocketMQ does not define."""
    value = (sys_flag & MessageSysFlag.COMPRESSION_TYPE_MASK) >> 8
    return CompressionType(value) if value in _COMPRESSION_VALUES else None


_COMPRESSION_VALUES: Final = frozenset(int(c) for c in CompressionType)


@dataclass(slots=True)
class Message:
    """What a producer sends. Mutable on purpose: producers stamp ids and flags before sending."""

    topic: str
    body: bytes
    flag: int = 0
    properties: dict[str, str] = field(default_factory=dict)

    @property
    def tags(self) -> str | None:
        return self.properties.get(TAGS)

    @tags.setter
    def tags(self, value: str | None) -> None:
        self._set(TAGS, value)

    @property
    def keys(self) -> list[str]:
        return split_keys(self.properties.get(KEYS))

    @keys.setter
    def keys(self, value: Iterable[str]) -> None:
        joined = KEY_SEPARATOR.join(k for k in value if k)
        self._set(KEYS, joined or None)

    @property
    def uniq_key(self) -> str | None:
        return self.properties.get(UNIQ_KEY)

    @uniq_key.setter
    def uniq_key(self, value: str | None) -> None:
        self._set(UNIQ_KEY, value)

    @property
    def delay_level(self) -> int:
        raw = self.properties.get(DELAY)
        return int(raw) if raw and raw.lstrip("-").isdigit() else 0

    @delay_level.setter
    def delay_level(self, level: int) -> None:
        self._set(DELAY, str(level) if level > 0 else None)

    @property
    def transaction_id(self) -> str | None:
        return self.properties.get(TRANSACTION_ID)

    def _set(self, name: str, value: str | None) -> None:
        if value is None:
            self.properties.pop(name, None)
        else:
            self.properties[name] = value


Host = msgid.Host



@dataclass(slots=True)
class MessageExt:
    """A decoded stored record: every field of the layout plus the two message ids.

    Read-only by convention, not ``frozen``: a consumer decodes one per message, and a frozen
    dataclass's ``__init__`` (``object.__setattr__`` per field, 18 fields) costs about nine
    times what plain slot assignment does. Use ``dataclasses.replace`` for a changed copy.
    """

    store_size: int
    magic: int
    body_crc: int
    queue_id: int
    flag: int
    queue_offset: int
    commit_log_offset: int
    sys_flag: int
    born_timestamp: int
    born_host: Host
    store_timestamp: int
    store_host: Host
    reconsume_times: int
    prepared_transaction_offset: int
    body: bytes
    topic: str
    properties: dict[str, str]
    offset_msg_id: str

    @property
    def msg_id(self) -> str:
        """The client's UNIQ_KEY when it set one, else the offset message id."""
        return self.properties.get(UNIQ_KEY) or self.offset_msg_id

    @property
    def tags(self) -> str | None:
        return self.properties.get(TAGS)

    @property
    def keys(self) -> list[str]:
        return split_keys(self.properties.get(KEYS))

    @property
    def uniq_key(self) -> str | None:
        return self.properties.get(UNIQ_KEY)
