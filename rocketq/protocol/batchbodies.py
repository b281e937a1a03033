"""The SEND_BATCH_MESSAGE body: several messages of one topic in one request.

A producer's batch body is a concatenation of items, each ``TOTALSIZE | MAGIC | BODYCRC | FLAG
| BODYLEN + body | PROPLEN i16 + properties`` (``MessageDecoder.encodeMessages``); the topic and
queue come from the request header. Producers write MAGIC 0 and BODYCRC 0 in an item. The
broker splits a body with ``batch_entries`` (plain tuples: its per-message path needs no object
per message) and stores each item as its own record. Pure: no I/O.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from rocketq.protocol import javahash, messageproperties, nativecodecs
from rocketq.protocol.messageerrors import MessageFormatError, PropertiesSizeExceededError
from rocketq.protocol.messageproperties import MAX_PROPERTIES_LENGTH, decode_properties, encode_properties
from rocketq.protocol.messagetypes import Message

BATCH_ITEM_MAGIC: Final = 0
"""Producers write MAGIC 0 (and BODYCRC 0) inside a SEND_BATCH_MESSAGE body."""

_I16 = struct.Struct(">h")
_BATCH_HEAD = struct.Struct(">iiiii")
"""TOTALSIZE, MAGIC, BODYCRC, FLAG, BODYLEN."""


@dataclass(frozen=True, slots=True)
class BatchItem:
    """One message of a SEND_BATCH_MESSAGE body (the topic comes from the request header)."""

    flag: int
    body: bytes
    properties: dict[str, str]
    encoded_properties: str


def decode_batch_body(body: bytes | bytearray | memoryview) -> list[BatchItem]:
    """Split a batch body into its messages; any inconsistency is a MessageFormatError."""
    return [BatchItem(flag, item_body, props, encoded) for item_body, flag, props, encoded in batch_entries(body)]


@nativecodecs.accelerated
def batch_entries(body: bytes | bytearray | memoryview) -> list[tuple[bytes, int, dict[str, str], str]]:
    """``decode_batch_body`` as plain tuples (body, flag, properties, encoded properties): the
    broker's per-message path, which has no use for an object per message."""
    view = memoryview(body)
    items: list[tuple[bytes, int, dict[str, str], str]] = []
    pos = 0
    while pos < len(view):
        if len(view) - pos < _BATCH_HEAD.size + 2:
            raise MessageFormatError(f"truncated batch item at {pos}")
        total, _magic, _crc, flag, body_len = _BATCH_HEAD.unpack_from(view, pos)
        at = pos + _BATCH_HEAD.size
        if body_len < 0 or total < _BATCH_HEAD.size + 2 + body_len or pos + total > len(view):
            raise MessageFormatError(f"batch item at {pos}: TOTALSIZE {total} / BODYLEN {body_len} inconsistent")
        item_body = bytes(view[at:at + body_len])
        at += body_len
        (props_len,) = _I16.unpack_from(view, at)
        at += 2
        if props_len < 0 or at + props_len != pos + total:
            raise MessageFormatError(f"batch item at {pos}: PROPLEN {props_len} does not end the item")
        try:
            encoded = bytes(view[at:at + props_len]).decode()
        except UnicodeDecodeError:
            raise MessageFormatError(f"batch item at {pos}: properties are not UTF-8") from None
        items.append((item_body, flag, decode_properties(encoded), encoded))
        pos += total
    return items


PlainBatchMessage = tuple[bytes, int, str, int, str | None, str | None]
"""(body, flag, stored properties text, TAGS hash code, UNIQ_KEY, KEYS): what the broker stores."""

_NOT_PLAIN: Final = (messageproperties.TRAN_MSG, messageproperties.DELAY, messageproperties.CLUSTER)


@nativecodecs.accelerated
def plain_batch_messages(body: bytes | bytearray | memoryview, cluster_entry: str) -> list[PlainBatchMessage] | None:
    """The broker's messages of a batch whose every item is plain: canonical properties text
    (``is_canonical``) naming none of TRAN_MSG, DELAY, CLUSTER. Each is stored with its text as
    it came plus ``cluster_entry`` (the broker's CLUSTER entry), with the TAGS code and index
    keys read from it. None when any item is not plain (the broker's general loop checks and
    converts it); MessageFormatError as ``batch_entries`` for a malformed body.

    The reference for native/batchbodies.c, which scans each item's properties once without
    building its dict."""
    messages: list[PlainBatchMessage] = []
    for item_body, flag, props, text in batch_entries(body):
        if any(name in props for name in _NOT_PLAIN) or not messageproperties.is_canonical(text, props):
            return None
        get = props.get
        messages.append((item_body, flag, text + cluster_entry, javahash.tag_hash(get(messageproperties.TAGS)),
                         get(messageproperties.UNIQ_KEY), get(messageproperties.KEYS)))
    return messages


def encode_batch_body(messages: Iterable[Message]) -> bytes:
    """The body a producer sends with SEND_BATCH_MESSAGE (``MessageDecoder.encodeMessages``)."""
    return encode_batch_entries((m.body, m.flag, encode_properties(m.properties)) for m in messages)


@nativecodecs.accelerated
def encode_batch_entries(entries: Iterable[tuple[bytes, int, str]]) -> bytes:
    """``encode_batch_body`` from (body, flag, encoded properties): for a caller that already
    encoded the properties (to validate them) and should not do it twice.

    The reference for native/batchbodies.c, which encodes a list of such tuples in one call."""
    parts = []
    for body, flag, properties in entries:
        props = properties.encode()
        if len(props) > MAX_PROPERTIES_LENGTH:
            raise PropertiesSizeExceededError(f"properties are {len(props)} bytes")
        parts.append(_BATCH_HEAD.pack(_BATCH_HEAD.size + len(body) + 2 + len(props), BATCH_ITEM_MAGIC, 0, flag,
                                      len(body)))
        parts.append(body)
        parts.append(_I16.pack(len(props)))
        parts.append(props)
    return b"".join(parts)
