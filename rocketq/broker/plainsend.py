"""A plain single send, read in one call: its header and properties straight into a PutRequest.

Almost every send a broker takes is *plain*: SEND_MESSAGE or SEND_MESSAGE_V2, not a batch, no
TRAN_MSG (transactional half) or DELAY (scheduled) property, properties in the canonical
``name\\x01value\\x02`` form the producer's SDK writes. The general path
(``SendHandlers._checked_records`` → ``_encoded`` → ``_records``) reads such a send through a
header object, a properties dict, a canonical-form test and a tag hash, each a call of its own;
``plain_put`` gives the same ``PutRequest`` in one, and its C twin (native/plainsend.c) reads
the extFields and the properties text without building the header or the dict.

It decides nothing about the broker's policy (is the topic there and writable, is the queue
id valid, is the broker accepting, is the body too large): the send handlers check that, and
anything ``plain_put`` declines (None) or they do not accept goes the general way, which
answers exactly as it always did. This function is the reference: it is written as the general
path's own steps, and a property test compares both, refusals included (tests/broker).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from rocketq.protocol import headers, message, nativecodecs
from rocketq.protocol.codes import RequestCode
from rocketq.protocol.headers import HeaderError, SendMessageRequestHeader
from rocketq.store.results import PutRequest, new_put_request

_SEND_MESSAGE: Final = int(RequestCode.SEND_MESSAGE)
_SEND_MESSAGE_V2: Final = int(RequestCode.SEND_MESSAGE_V2)
_PICKED: Final = ("topic", "queue_id", "flag", "properties", "sys_flag", "born_timestamp", "reconsume_times",
                  "batch")
"""The header fields a put is made of, in the order native/plainsend.c takes their indices."""


def _native_context() -> tuple[object, ...]:
    """What the C twin reads: the PutRequest builder, each code with its header's field table
    (the compiled parsers' own, ``headers._native_table``), the indices of ``_PICKED``."""
    wire_names = headers._wire_names(SendMessageRequestHeader)
    short_of = {wire: short for short, wire in headers.SEND_V2_ALIASES.items()}
    short_names = {name: short_of[wire] for name, wire in wire_names.items()}
    names = list(wire_names)
    return (new_put_request, _SEND_MESSAGE, headers._native_table(SendMessageRequestHeader, wire_names),
            _SEND_MESSAGE_V2, headers._native_table(SendMessageRequestHeader, short_names),
            (*(names.index(name) for name in _PICKED), 0))


@nativecodecs.accelerated_with(*_native_context())
def plain_put(code: int, ext: Mapping[str, str], body: bytes, cluster_entry: str,
              born_host: tuple[str, int]) -> PutRequest | None:
    """The ``PutRequest`` of a plain single send, as ``SendHandlers._records`` makes it; None
    when the send is not plain (another code, a bad header, a batch, TRAN_MSG or DELAY, other
    than canonical properties): the general path then handles it. ``cluster_entry`` is the
    CLUSTER entry added to properties that name no cluster."""
    try:
        if code == _SEND_MESSAGE_V2:
            header = headers.send_header_from_v2(ext)
        elif code == _SEND_MESSAGE:
            header = SendMessageRequestHeader.from_ext(ext)
        else:
            return None
        if header.batch:
            return None
        text = header.properties or ""
        props = message.decode_properties(text)
        if message.TRAN_MSG in props or message.DELAY in props or not message.is_canonical(text, props):
            return None
        get = props.get
        tag = message.tag_hash(get(message.TAGS))
    except (HeaderError, message.MessageFormatError, UnicodeError):  # (a TAGS value with a lone surrogate)
        return None
    stored = text if message.CLUSTER in props else text + cluster_entry
    return new_put_request(header.topic, header.queue_id, body, header.flag, stored, header.sys_flag,
                           header.born_timestamp, born_host, header.reconsume_times or 0, 0, tag,
                           (get(message.UNIQ_KEY), get(message.KEYS)))
