"""Pulls: building PULL_MESSAGE requests and turning answers into ``PullResult`` values.

A pull asks one queue for up to ``max_nums`` messages from an offset. Its ``sysFlag`` says
what else the request carries (``rocketq.protocol.pullsysflag``): the consumer's offset to
commit, long polling, the subscription expression.

The four answers become a ``PullStatus`` (``rocketq.protocol.requests``, shared with the admin
client), each with the offset to pull next. The body is the stored records, decoded with the
protocol codec. Since
the broker filters by tag *hash code*, a different tag with the same hash can arrive; messages
whose tag is not in the subscription are dropped here, and ``next_begin_offset`` still moves
past them. A body that does not decode is a ``ProtocolError``, never a silent skip.

A push consumer pulls one queue again and again with the same group, queue, batch size and
subscription: ``PullRequests`` keeps that request's extFields and fills in only what changes
between pulls (offset, sysFlag, commit offset), the same fields in the same order as
``request_header(...).to_ext()``, without building the header object per pull. On an open
connection the pull goes out as a frame made from a template (``PullRequests.frame``): the
request encoded once with zeros in the opaque and the three changing fields, cut around them,
and the values put back between the pieces per pull; byte for byte what the frame encoder
makes of ``command(PULL_MESSAGE, ext_fields(...))`` with that opaque
(tests/client/test_pullframes.py), without the dict, the command and its JSON per pull.

With the native codecs, a FOUND body is decoded and stamped with the queue's bounds in one C
call (``_native.decode_pulled``); anything it does not take (a compressed or malformed record)
goes the pure way, which is the reference.

A chained pull's FOUND answer is read without a ``RemotingCommand`` at all when it is the
plain answer a broker writes: ``found_at`` gives its nextBeginOffset, suggestWhichBrokerId and
messages straight from the frame in the read (native/pullanswer.c reads the header's fields
and the records in place); None for anything else, which then takes the general path
(``wire.pull_header`` and ``found_messages``, the reference: tests/client/test_pullanswer.py).
"""

from __future__ import annotations

import struct
from typing import Final

from rocketq.client.errors import ProtocolError
from rocketq.client.queues import MessageQueue
from rocketq.client.wire import PullReply
from rocketq.protocol import messageerrors, messageproperties, nativecodecs, requests
from rocketq.protocol.codes import RequestCode
from rocketq.protocol.headers import PullMessageRequestHeader, PullMessageResponseHeader
from rocketq.protocol.messagetypes import MessageExt
from rocketq.protocol.pullsysflag import build as sys_flag
from rocketq.protocol.requests import PULL_STATUS_BY_CODE, PullResult, PullStatus
from rocketq.protocol.subscription import SubscriptionData

_FRAME_PREFIX: Final = struct.Struct(">iI")
"""A frame's length and, for a JSON header (serialize type 0), the header's length."""
_SPLICED: Final = (b'"opaque":0,', b'"queueOffset":"0"', b'"sysFlag":"0"', b'"commitOffset":"0"')
"""The fields of a pull request that change between a queue's pulls, as encoded with zeros. A
key-value pair occurs once in the header: inside a JSON string a quote is always escaped."""

__all__ = ["PullRequests", "PullResult", "PullStatus", "decode_messages", "found_at", "found_messages",
           "request_header", "stamped_messages", "sys_flag", "to_result"]


def request_header(
    group: str, mq: MessageQueue, offset: int, max_nums: int, sub: SubscriptionData, *,
    flag: int, commit_offset: int = 0, suspend_timeout_ms: int = 0,
) -> PullMessageRequestHeader:
    return requests.pull_header(
        group, mq, offset, max_nums, sys_flag=flag, subscription=sub.sub_string, sub_version=sub.sub_version,
        expression_type=sub.expression_type, commit_offset=commit_offset, suspend_timeout_ms=suspend_timeout_ms)


class PullRequests:
    """The extFields of one queue's pulls, for a subscription and batch size (see the module)."""

    def __init__(self, group: str, mq: MessageQueue, max_nums: int, sub: SubscriptionData,
                 suspend_timeout_ms: int) -> None:
        self.key = (sub, max_nums, suspend_timeout_ms)
        """What the kept fields were made from: a change of any of it needs a new instance."""
        self._fields = request_header(group, mq, 0, max_nums, sub, flag=0,
                                      suspend_timeout_ms=suspend_timeout_ms).to_ext()
        self._format = b"%d".join(piece.replace(b"%", b"%%") for piece in _template_pieces(self._fields))
        """The header as a bytes format of the four values (one ``%`` operation per pull; a ``%``
        of the header itself, as in a ``%RETRY%`` topic, doubled)."""

    def ext_fields(self, offset: int, flag: int, commit_offset: int) -> dict[str, str]:
        """A new dict: the kept fields with these (their places in the order are kept)."""
        ext = self._fields.copy()
        ext["queueOffset"] = str(offset)
        ext["sysFlag"] = str(flag)
        ext["commitOffset"] = str(commit_offset)
        return ext


    def frame(self, opaque: int, offset: int, flag: int, commit_offset: int) -> bytes:
        """The request frame ``command(PULL_MESSAGE, self.ext_fields(offset, flag, commit_offset))``
        encodes with ``opaque``: the template's pieces around the four values, put in by one format. The values must be
        exact ``int``s (``%d`` of a ``bool`` is not its ``str``): the caller checks."""
        header = self._format % (opaque, offset, flag, commit_offset)
        return _FRAME_PREFIX.pack(4 + len(header), len(header)) + header


def _template_pieces(fields: dict[str, str]) -> tuple[bytes, ...]:
    """The JSON header of a pull with these fields (opaque and the three changing ones zero), cut
    into the five pieces around the four values."""
    ext = dict(fields, queueOffset="0", sysFlag="0", commitOffset="0")
    _prefix, header = requests.command(RequestCode.PULL_MESSAGE, ext)._encode_head(0)
    pieces, start = [], 0
    for zero in _SPLICED:
        at = header.find(zero, start)
        if at < 0 or header.count(zero) != 1:
            raise ValueError(f"no single {zero!r} after the previous field in the PULL_MESSAGE header")
        cut = at + len(zero) - 2  # the 0, before its comma or closing quote
        pieces.append(header[start:cut])
        start = cut + 1
    pieces.append(header[start:])
    return tuple(pieces)


def decode_messages(body: bytes) -> list[MessageExt]:
    """Every record of a pull body; ProtocolError if any part of it is not a record."""
    try:
        return requests.decode_records(body)
    except messageerrors.MessageFormatError as exc:
        raise ProtocolError(f"pull body does not decode: {exc}") from None


def stamped_messages(body: bytes, min_offset: int, max_offset: int) -> list[MessageExt]:
    """Every record of a FOUND body, each stamped with the queue's bounds (RocketMQ does so for
    lag-aware listeners); ProtocolError if the body is not all records."""
    stamps = {messageproperties.MIN_OFFSET: str(min_offset), messageproperties.MAX_OFFSET: str(max_offset)}
    if _native is not None:
        decoded = _native.decode_pulled(body, MessageExt, stamps)
        if decoded is not None:
            return decoded
    messages = decode_messages(body)
    for m in messages:
        m.properties.update(stamps)
    return messages


_native = nativecodecs.native


def found_messages(body: bytes, header: PullMessageResponseHeader, sub: SubscriptionData) -> list[MessageExt]:
    """A FOUND answer's messages, stamped with the queue's bounds, those of other tags dropped."""
    messages = stamped_messages(body, header.min_offset, header.max_offset)
    return messages if sub.matches_all else _of_tags(messages, sub)


def _of_tags(messages: list[MessageExt], sub: SubscriptionData) -> list[MessageExt]:
    """The messages whose tag the subscription takes (the broker filters by the tag's hash)."""
    return [m for m in messages if sub.matches_tag(m.tags)]


def found_at(data: bytes, pos: int, end: int, sub: SubscriptionData) -> tuple[int, int, list[MessageExt]] | None:
    """``(nextBeginOffset, suggestWhichBrokerId, messages)`` of the plain FOUND answer whose frame
    is ``data[pos:end]``, read in place (see the module); None when it is not one, or without
    the native codecs: the general path then reads the frame."""
    if _native is None:
        return None
    found = _native.found_pulled(data, pos, end, MessageExt)
    if found is None or sub.matches_all:
        return found
    return found[0], found[1], _of_tags(found[2], sub)


def to_result(reply: PullReply, sub: SubscriptionData) -> PullResult:
    header = reply.header
    status = PULL_STATUS_BY_CODE[reply.code]
    messages = found_messages(reply.body, header, sub) if status is PullStatus.FOUND else []
    return PullResult(status, header.next_begin_offset, header.min_offset, header.max_offset, messages,
                      header.suggest_which_broker_id)
