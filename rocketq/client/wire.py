"""The client's remote calls: one typed function per request code, over a RemotingClient.

Each function builds the request (typed header -> extFields, body), sends it to one address,
and turns the answer into a value, ``None`` for the "not found" answers a caller expects, or an
exception: ``BrokerError`` for an error code, ``ProtocolError`` for an answer that is not a
valid response, ``RemotingError`` (unchanged) when the transport fails. Nothing here retries,
caches or chooses addresses; that is the caller's policy. Timeouts are in seconds.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final, TypeVar

import orjson

from rocketq.client import replies, routes
from rocketq.client.errors import BrokerError, ProtocolError
from rocketq.client.queues import MessageQueue
from rocketq.client.routes import TopicRoute
from rocketq.protocol import headers, nativecodecs
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frames import RemotingCommand
from rocketq.protocol.headers import Header, HeaderError
from rocketq.protocol.requests import PULL_CODES, SEND_OK_CODES, command
from rocketq.protocol.sharedbodies import BodyError, SubscriptionGroupConfig, TopicConfig, load_json
from rocketq.protocol.subscription import SubscriptionData
from rocketq.remoting.client import RemotingClient

H = TypeVar("H", bound=Header)


@dataclass(slots=True)
class SendReply:
    code: ResponseCode
    header: headers.SendMessageResponseHeader
    region_id: str | None = None


@dataclass(frozen=True, slots=True)
class PullReply:
    code: ResponseCode
    header: headers.PullMessageResponseHeader
    body: bytes


def _response_header(kind: type[H], response: RemotingCommand, addr: str) -> H:
    try:
        return kind.from_ext(response.ext_fields)
    except HeaderError as exc:
        raise ProtocolError(f"{addr} answered code {response.code} with a bad header: {exc}") from None


def _fail(response: RemotingCommand, addr: str) -> BrokerError:
    return BrokerError(response.code, response.remark, addr)


async def _invoke_ok(rc: RemotingClient, addr: str, request: RemotingCommand, timeout: float) -> RemotingCommand:
    response = await rc.invoke(addr, request, timeout)
    if response.code != ResponseCode.SUCCESS:
        raise _fail(response, addr)
    return response


async def _invoke_found(rc: RemotingClient, addr: str, request: RemotingCommand,
                        timeout: float) -> RemotingCommand | None:
    """The SUCCESS answer; None for TOPIC_NOT_EXIST (the "not found" a caller expects)."""
    response = await rc.invoke(addr, request, timeout)
    if response.code == ResponseCode.TOPIC_NOT_EXIST:
        return None
    if response.code != ResponseCode.SUCCESS:
        raise _fail(response, addr)
    return response


# --- name server ------------------------------------------------------------------------------


async def get_route(rc: RemotingClient, addr: str, topic: str, timeout: float) -> TopicRoute | None:
    """GET_ROUTEINFO_BY_TOPIC; None when the name server does not know the topic."""
    request = command(RequestCode.GET_ROUTEINFO_BY_TOPIC, headers.TopicHeader(topic=topic))
    response = await _invoke_found(rc, addr, request, timeout)
    if response is None:
        return None
    try:
        return routes.decode_route(response.body)
    except routes.RouteDataError as exc:
        raise ProtocolError(f"route of {topic} from {addr}: {exc}") from None


# --- sending ----------------------------------------------------------------------------------


_SEND_OK: Final = {int(code): code for code in SEND_OK_CODES}
"""The answers that mean stored, by plain int: ``ResponseCode(code)`` runs enum code per send."""


def send_request(header: headers.SendMessageRequestHeader, body: bytes, *, batch: bool) -> RemotingCommand:
    """The SEND_MESSAGE_V2 (SEND_BATCH_MESSAGE, SEND_REPLY_MESSAGE_V2) request for ``header``."""
    code = RequestCode.SEND_BATCH_MESSAGE if batch else RequestCode.SEND_MESSAGE_V2
    if not batch and replies.is_reply(header.properties):
        code = RequestCode.SEND_REPLY_MESSAGE_V2  # a request-reply answer: the broker pushes it on
    return command(code, headers.send_header_to_v2(header), body)


def send_v2_request(ext: dict[str, str], body: bytes, *, reply: bool) -> RemotingCommand:
    """SEND_MESSAGE_V2 (SEND_REPLY_MESSAGE_V2 for a reply) with its short-named extFields ready
    (``sending.send_ext``): ``send_request`` without the header object."""
    code = RequestCode.SEND_REPLY_MESSAGE_V2 if reply else RequestCode.SEND_MESSAGE_V2
    return RemotingCommand(code=int(code), ext_fields=ext, body=body)


_FRAME_PREFIX: Final = struct.Struct(">iI")
"""A frame's length and, for a JSON header (serialize type 0), the header's length."""
_SPLICED: Final = ((b'"opaque":0,', b'"opaque":', b","), (b'"e":"0"', b'"e":"', b'"'), (b'"f":"0"', b'"f":"', b'"'),
                   (b'"g":"0"', b'"g":"', b'"'), (b'"h":"0"', b'"h":"', b'"'), (b'"i":""', b'"i":', b""))
"""The per-message fields of a SEND_MESSAGE_V2 header (opaque, queueId, sysFlag, bornTimestamp,
flag, properties) as encoded with zeros, and what stays of each around its value. A key-value
pair occurs once in the header: inside a JSON string a quote is always escaped."""


class SendFrames:
    """The SEND_MESSAGE_V2 request frames of one producer group and topic, made from a template.

    The header of a single-message send differs between messages only in six fields; the rest
    (the frame's JSON keys, group, topic, the auto-create topic, its queue count, the constant
    flags) is encoded once, by the frame encoder itself, with zeros, and cut into the seven
    pieces around those six values. ``frame`` puts the values between the pieces (the
    properties as orjson encodes a string) and the length prefix before them: byte for byte
    what ``send_v2_request(ext, body, reply=False)`` encodes with that opaque
    (tests/client/test_sendframes.py), for a fraction of the CPU. Integer fields must be exact
    ``int``s (``%d`` of a ``bool`` is not ``str`` of it); the producer sends anything else the
    general way.
    """

    __slots__ = ("pieces",)

    def __init__(self, group: str, topic: str, create_topic_key: str, queue_nums: int) -> None:
        ext = {"a": group, "b": topic, "c": create_topic_key, "d": str(queue_nums), "e": "0", "f": "0", "g": "0",
               "h": "0", "i": "", "j": "0", "k": "false", "m": "false"}
        _prefix, header = RemotingCommand(int(RequestCode.SEND_MESSAGE_V2), 0, 0, None, ext)._encode_head(0)
        pieces, start = [], 0
        for zero, before, after in _SPLICED:
            at = header.find(zero, start)
            if at < 0 or header.count(zero) != 1:
                raise ValueError(f"no single {zero!r} after the previous field in the SEND_MESSAGE_V2 header")
            pieces.append(header[start:at + len(before)])
            start = at + len(zero) - len(after)
        pieces.append(header[start:])
        self.pieces = tuple(pieces)
        """What ``send_frame_of`` takes (a producer calls it directly: one call less per send)."""

    def frame(self, opaque: int, queue_id: int, sys_flag: int, born_timestamp: int, flag: int, properties: str,
              body: bytes) -> bytes:
        return send_frame_of(self.pieces, opaque, queue_id, sys_flag, born_timestamp, flag, properties, body)


@nativecodecs.accelerated
def send_frame_of(pieces: tuple[bytes, ...], opaque: int, queue_id: int, sys_flag: int, born_timestamp: int,
                  flag: int, properties: str, body: bytes) -> bytes:
    """A frame from ``SendFrames``' seven pieces and the six values between them, then the
    body. Its C twin (native/clientsend.c) writes it in one allocation, byte for byte the same
    (tests/client/test_sendframes.py)."""
    header = b"".join((pieces[0], b"%d" % opaque, pieces[1], b"%d" % queue_id, pieces[2], b"%d" % sys_flag,
                       pieces[3], b"%d" % born_timestamp, pieces[4], b"%d" % flag, pieces[5],
                       orjson.dumps(properties), pieces[6]))
    size = len(header)
    return b"".join((_FRAME_PREFIX.pack(4 + size + len(body), size), header, body))


def send_reply(response: RemotingCommand, addr: str) -> SendReply:
    """A send's answer as a value; BrokerError unless the broker stored the message."""
    code = _SEND_OK.get(response.code)
    if code is None:
        raise _fail(response, addr)
    reply_header = _response_header(headers.SendMessageResponseHeader, response, addr)
    return SendReply(code, reply_header, response.ext_fields.get("MSG_REGION"))


async def send(
    rc: RemotingClient, addr: str, header: headers.SendMessageRequestHeader, body: bytes, timeout: float,
    *, batch: bool = False,
) -> SendReply:
    """SEND_MESSAGE_V2 (or SEND_BATCH_MESSAGE); BrokerError unless the broker stored it."""
    return send_reply(await rc.invoke(addr, send_request(header, body, batch=batch), timeout), addr)


async def send_oneway(rc: RemotingClient, addr: str, header: headers.SendMessageRequestHeader, body: bytes) -> None:
    await rc.invoke_oneway(addr, send_request(header, body, batch=False))


async def consumer_send_back(
    rc: RemotingClient, addr: str, header: headers.ConsumerSendMsgBackRequestHeader, timeout: float
) -> None:
    """CONSUMER_SEND_MSG_BACK: hand a message the listener failed on back to the broker for retry."""
    await _invoke_ok(rc, addr, command(RequestCode.CONSUMER_SEND_MSG_BACK, header), timeout)


def end_transaction_request(header: headers.EndTransactionRequestHeader, remark: str | None) -> RemotingCommand:
    """END_TRANSACTION: commit (8), roll back (12) or "unknown" (0) a half message."""
    request = command(RequestCode.END_TRANSACTION, header)
    request.remark = remark
    return request


async def end_transaction_oneway(rc: RemotingClient, addr: str, header: headers.EndTransactionRequestHeader,
                                 remark: str | None) -> None:
    """END_TRANSACTION, oneway as RocketMQ's producers send it: the broker answers nothing we wait for."""
    await rc.invoke_oneway(addr, end_transaction_request(header, remark))


# --- pulling and offsets ----------------------------------------------------------------------


async def pull(rc: RemotingClient, addr: str, header: headers.PullMessageRequestHeader | Mapping[str, str],
               timeout: float) -> PullReply:
    """PULL_MESSAGE (a header, or its extFields); the raw answer for the four pull outcomes,
    BrokerError for anything else."""
    return pull_reply(await rc.invoke(addr, command(RequestCode.PULL_MESSAGE, header), timeout), addr)


def pull_reply(response: RemotingCommand, addr: str) -> PullReply:
    """A PULL_MESSAGE answer from ``addr``: the raw answer for the four pull outcomes,
    BrokerError for anything else (``pull``'s second half, for a caller that sent the request)."""
    code = _PULL_RESPONSE_CODES.get(response.code)
    if code is None:
        raise _fail(response, addr)
    return PullReply(code, pull_header(response, addr), response.body)


def pull_header(response: RemotingCommand, addr: str) -> headers.PullMessageResponseHeader:
    """The header of a pull answer whose code is one of the four outcomes (ProtocolError when
    it does not parse)."""
    return _response_header(headers.PullMessageResponseHeader, response, addr)


_PULL_RESPONSE_CODES: Final = {int(code): ResponseCode(code) for code in PULL_CODES}
"""The pull answers' codes as members, by value: one lookup checks and converts (calling the
enum costs ~0.5 µs per pull)."""


def _queue_header(group: str, mq: MessageQueue) -> headers.QueryConsumerOffsetRequestHeader:
    return headers.QueryConsumerOffsetRequestHeader(consumer_group=group, topic=mq.topic, queue_id=mq.queue_id)


async def query_consumer_offset(
    rc: RemotingClient, addr: str, group: str, mq: MessageQueue, timeout: float
) -> int | None:
    """QUERY_CONSUMER_OFFSET; None when the broker has no offset for the group (QUERY_NOT_FOUND)."""
    request = command(RequestCode.QUERY_CONSUMER_OFFSET, _queue_header(group, mq))
    response = await rc.invoke(addr, request, timeout)
    if response.code == ResponseCode.QUERY_NOT_FOUND:
        return None
    if response.code != ResponseCode.SUCCESS:
        raise _fail(response, addr)
    return _response_header(headers.OffsetResponseHeader, response, addr).offset


def _update_offsetcommand(group: str, mq: MessageQueue, offset: int) -> RemotingCommand:
    header = headers.UpdateConsumerOffsetRequestHeader(
        consumer_group=group, topic=mq.topic, queue_id=mq.queue_id, commit_offset=offset)
    return command(RequestCode.UPDATE_CONSUMER_OFFSET, header)


async def update_consumer_offset(
    rc: RemotingClient, addr: str, group: str, mq: MessageQueue, offset: int, timeout: float
) -> None:
    await _invoke_ok(rc, addr, _update_offsetcommand(group, mq, offset), timeout)


async def update_consumer_offset_oneway(
    rc: RemotingClient, addr: str, group: str, mq: MessageQueue, offset: int
) -> None:
    await rc.invoke_oneway(addr, _update_offsetcommand(group, mq, offset))


async def _offset_call(rc: RemotingClient, addr: str, request: RemotingCommand, timeout: float) -> int:
    response = await _invoke_ok(rc, addr, request, timeout)
    return _response_header(headers.OffsetResponseHeader, response, addr).offset


async def get_max_offset(rc: RemotingClient, addr: str, mq: MessageQueue, timeout: float) -> int:
    """GET_MAX_OFFSET: the next logical offset the queue will write."""
    header = headers.TopicQueueRequestHeader(topic=mq.topic, queue_id=mq.queue_id)
    return await _offset_call(rc, addr, command(RequestCode.GET_MAX_OFFSET, header), timeout)


async def get_min_offset(rc: RemotingClient, addr: str, mq: MessageQueue, timeout: float) -> int:
    header = headers.TopicQueueRequestHeader(topic=mq.topic, queue_id=mq.queue_id)
    return await _offset_call(rc, addr, command(RequestCode.GET_MIN_OFFSET, header), timeout)


async def search_offset(rc: RemotingClient, addr: str, mq: MessageQueue, timestamp_ms: int, timeout: float) -> int:
    """SEARCH_OFFSET_BY_TIMESTAMP: the first offset stored at or after ``timestamp_ms``."""
    header = headers.SearchOffsetRequestHeader(topic=mq.topic, queue_id=mq.queue_id, timestamp=timestamp_ms)
    return await _offset_call(rc, addr, command(RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, header), timeout)


# --- membership ---------------------------------------------------------------------------------


async def heartbeat(rc: RemotingClient, addr: str, body: bytes, timeout: float) -> None:
    """HEART_BEAT with a HeartbeatData JSON body."""
    await _invoke_ok(rc, addr, command(RequestCode.HEART_BEAT, body=body), timeout)


async def unregister_client(
    rc: RemotingClient, addr: str, client_id: str, timeout: float,
    *, producer_group: str | None = None, consumer_group: str | None = None,
) -> None:
    header = headers.UnregisterClientRequestHeader(
        client_id=client_id, producer_group=producer_group, consumer_group=consumer_group)
    await _invoke_ok(rc, addr, command(RequestCode.UNREGISTER_CLIENT, header), timeout)


async def check_client_config(rc: RemotingClient, addr: str, client_id: str, group: str, sub: SubscriptionData,
                              timeout: float) -> None:
    """CHECK_CLIENT_CONFIG: asks the broker whether it can filter with ``sub`` (a SQL92
    subscription's syntax, and whether property filtering is on); a refusal raises BrokerError."""
    body = orjson.dumps({"clientId": client_id, "group": group, "subscriptionData": sub.to_json()})
    await _invoke_ok(rc, addr, command(RequestCode.CHECK_CLIENT_CONFIG, body=body), timeout)


async def get_consumer_list(rc: RemotingClient, addr: str, group: str, timeout: float) -> list[str]:
    """GET_CONSUMER_LIST_BY_GROUP: the client ids of the group's live consumers on that broker."""
    request = command(RequestCode.GET_CONSUMER_LIST_BY_GROUP, headers.ConsumerGroupHeader(consumer_group=group))
    response = await _invoke_ok(rc, addr, request, timeout)
    try:
        raw = orjson.loads(response.body)
    except orjson.JSONDecodeError as exc:
        raise ProtocolError(f"consumer list from {addr} is not JSON: {exc}") from None
    ids = raw.get("consumerIdList") if isinstance(raw, dict) else None
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        raise ProtocolError(f"consumer list from {addr} has no consumerIdList of strings")
    return ids


# --- queue locks (orderly consumption) --------------------------------------------------------


def _lock_body(group: str, client_id: str, mqs: Iterable[MessageQueue]) -> bytes:
    return orjson.dumps({"consumerGroup": group, "clientId": client_id, "mqSet": [mq.to_json() for mq in mqs]})


async def lock_batch_mq(rc: RemotingClient, addr: str, group: str, client_id: str, mqs: Iterable[MessageQueue],
                        timeout: float) -> set[MessageQueue]:
    """LOCK_BATCH_MQ: lock (or renew) queues for this client on their master; the queues granted."""
    request = command(RequestCode.LOCK_BATCH_MQ, body=_lock_body(group, client_id, mqs))
    response = await _invoke_ok(rc, addr, request, timeout)
    try:
        raw = orjson.loads(response.body) if response.body else {}
        items = (raw.get("lockOKMQSet") or []) if isinstance(raw, dict) else None
        if not isinstance(items, list):
            raise ValueError("no lockOKMQSet array")
        return {MessageQueue.from_json(item) for item in items}
    except (orjson.JSONDecodeError, ValueError) as exc:
        raise ProtocolError(f"lock answer from {addr} is not a LockBatchResponseBody: {exc}") from None


async def unlock_batch_mq(rc: RemotingClient, addr: str, group: str, client_id: str, mqs: Iterable[MessageQueue],
                          timeout: float, *, oneway: bool = False) -> None:
    """UNLOCK_BATCH_MQ: release this client's locks on the queues (others' locks are untouched)."""
    request = command(RequestCode.UNLOCK_BATCH_MQ, body=_lock_body(group, client_id, mqs))
    if oneway:
        await rc.invoke_oneway(addr, request)
    else:
        await _invoke_ok(rc, addr, request, timeout)


# --- metadata (RocketMQ 5) --------------------------------------------------------------------


async def get_topic_config(rc: RemotingClient, addr: str, topic: str, timeout: float) -> TopicConfig | None:
    """GET_TOPIC_CONFIG: the topic's config on that broker (attributes included); None when absent."""
    request = command(RequestCode.GET_TOPIC_CONFIG, headers.GetTopicConfigRequestHeader(topic=topic))
    response = await _invoke_found(rc, addr, request, timeout)
    if response is None:
        return None
    try:
        return TopicConfig.from_json(load_json(response.body, "topic config"), name=topic)
    except BodyError as exc:
        raise ProtocolError(f"topic config of {topic} from {addr}: {exc}") from None


async def get_group_config(rc: RemotingClient, addr: str, group: str, timeout: float) -> SubscriptionGroupConfig:
    """GET_SUBSCRIPTIONGROUP_CONFIG: the group's config on that broker (BrokerError when it has none)."""
    request = command(RequestCode.GET_SUBSCRIPTIONGROUP_CONFIG,
                      headers.GetSubscriptionGroupConfigRequestHeader(group=group))
    response = await _invoke_ok(rc, addr, request, timeout)
    try:
        return SubscriptionGroupConfig.from_json(load_json(response.body, "group config"))
    except BodyError as exc:
        raise ProtocolError(f"group config of {group} from {addr}: {exc}") from None
