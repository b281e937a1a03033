"""Preparing a message for the wire and reading the broker's answer: the producer's pure half.

Before a send the client checks the message the way RocketMQ's ``Validators`` do (topic name,
a non-empty body no larger than ``maxMessageSize``), stamps a unique key (``UNIQ_KEY``, which
becomes ``SendResult.msg_id``) unless the message has one, and zlib-compresses a body of at
least ``compressMsgBodyOverHowmuch`` bytes, marking ``sysFlag`` COMPRESSED. The caller's
message keeps its original body; only the unique key is written back, as Java does.

A batch is one SEND_BATCH_MESSAGE frame holding several messages of one topic; RocketMQ refuses
delayed and retry-topic messages in a batch, and so does this module, before sending.

After a send, ``to_result`` maps the answer: SUCCESS is SEND_OK, the three durability caveats
(FLUSH_DISK_TIMEOUT, FLUSH_SLAVE_TIMEOUT, SLAVE_NOT_AVAILABLE) are statuses, not errors.
"""

from __future__ import annotations

import dataclasses
import functools
import time
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from rocketq.client import messages, namechecks, replies
from rocketq.client.errors import BrokerError, MessageError, ProtocolError
from rocketq.client.queues import MessageQueue
from rocketq.client.settings import ProducerSettings
from rocketq.client.wire import SendReply
from rocketq.protocol import batchbodies, messageerrors, messageproperties, msgid, nativecodecs
from rocketq.protocol.codes import RETRY_GROUP_TOPIC_PREFIX, ResponseCode
from rocketq.protocol.frames import RemotingCommand
from rocketq.protocol.headers import HeaderError, SendMessageRequestHeader, SendMessageResponseHeader
from rocketq.protocol.messagetypes import Message, MessageSysFlag
from rocketq.protocol.requests import SEND_STATUS_BY_CODE, SendResult, SendStatus
from rocketq.remoting import storedanswers

__all__ = ["Outgoing", "SendResult", "SendStatus", "check", "header", "prepare", "prepare_batch", "send_ext",
           "to_result"]

COMPRESS_LEVEL: Final = 5
"""RocketMQ's default ``rocketmq.message.compressLevel``."""

RETRY_CODES: Final = frozenset({
    ResponseCode.TOPIC_NOT_EXIST, ResponseCode.SERVICE_NOT_AVAILABLE, ResponseCode.SYSTEM_ERROR,
    ResponseCode.SYSTEM_BUSY, ResponseCode.NO_PERMISSION, ResponseCode.NO_BUYER_ID,
    ResponseCode.NOT_IN_CURRENT_UNIT,
})
"""Broker answers after which a send is retried on another broker (``retryResponseCodes``)."""

MAX_CHECKED_TOPICS: Final = 10_000
"""Topic names remembered as valid send targets (the set is emptied when full)."""
_checked_topics: set[str] = set()
"""Send topics already validated: the check is a regular expression per message otherwise,
and a producer sends to few topics (an exact ``str`` only; the check depends on nothing else)."""


@dataclass(slots=True)
class Outgoing:
    """A message (or batch) ready to send: final body, sysFlag and encoded properties.

    Not frozen: one is made per send, and a frozen dataclass's ``__init__`` sets each field
    through ``object.__setattr__`` (four times the cost). Nothing changes one once made."""

    topic: str
    body: bytes
    sys_flag: int
    flag: int
    properties: str
    msg_id: str
    batch: bool = False
    reply: bool = False
    """A request-reply answer (MSG_TYPE reply): sent as SEND_REPLY_MESSAGE_V2."""


@functools.cache
def _uniq_ids() -> msgid.UniqIdGenerator:
    return msgid.UniqIdGenerator()


def _check_body(msg: Message, max_size: int) -> None:
    if not isinstance(msg.body, bytes | bytearray | memoryview):
        raise MessageError(f"the message body must be bytes, not {type(msg.body).__name__}")
    if len(msg.body) == 0:
        raise MessageError("the message body length is zero")
    if len(msg.body) > max_size:
        raise MessageError(f"the message body size over max value, MAX: {max_size}")


def _check_properties(msg: Message) -> str:
    return _properties_text(msg.properties)


def _properties_text(props: Mapping[str, str], limit: int = messageproperties.MAX_PROPERTIES_LENGTH) -> str:
    """The encoded properties; MessageError unless every name and value is a ``str`` the
    framing can carry, and the text fits ``limit`` UTF-8 bytes."""
    for name, value in props.items():
        if name.__class__ is not str or value.__class__ is not str:  # exact str: the common case, decided fast
            if not all(isinstance(k, str) and isinstance(v, str) for k, v in props.items()):
                raise MessageError("message property names and values must be strings")
            break
    try:
        encoded = messageproperties.encode_properties(props)
    except messageerrors.MessageIllegalError as exc:
        raise MessageError(str(exc)) from None
    if len(encoded) > limit or (not encoded.isascii() and len(encoded.encode()) > limit):  # UTF-8 bytes
        raise MessageError(f"the message properties exceed {limit} bytes")
    return encoded


def _stamp_uniq_key(msg: Message) -> str:
    key = msg.properties.get(messageproperties.UNIQ_KEY)
    if not key:
        key = msgid.next_unique_key(_uniq_ids())
        msg.properties[messageproperties.UNIQ_KEY] = key
    return key


def _check_fields(msg: Message, settings: ProducerSettings, checked_topic: str | None = None) -> None:
    """``checked_topic``: a topic name already validated (a batch's first message's)."""
    if not isinstance(msg, Message):
        raise MessageError(f"expected a Message, not {type(msg).__name__}")
    if msg.topic != checked_topic:
        _check_send_topic(msg.topic)
    _check_body(msg, settings.max_message_size)
    if not isinstance(msg.flag, int) or not -(1 << 31) <= msg.flag < (1 << 31):
        raise MessageError(f"message flag {msg.flag!r} is not a 32-bit integer")


def _check_send_topic(topic: object) -> None:
    if topic.__class__ is str and topic in _checked_topics:
        return
    name = namechecks.check_send_topic(topic)
    if len(_checked_topics) >= MAX_CHECKED_TOPICS:
        _checked_topics.clear()
    _checked_topics.add(name)


def check(msg: Message, settings: ProducerSettings) -> None:
    """Validate without changing anything; MessageError names the problem."""
    _check_fields(msg, settings)
    _check_properties(msg)


_PLAIN_MESSAGE_TYPES: Final = frozenset({Message, messages.Message})
"""The message classes whose fields ``prepare``'s C twin and ``_prepare_plain_batch`` read
directly (the protocol's and the SDK's, which adds only a constructor); a subclass of the
caller's goes the general way."""


@nativecodecs.accelerated_with(Outgoing, tuple(f.name for f in dataclasses.fields(Outgoing)), _PLAIN_MESSAGE_TYPES,
                               _checked_topics, _uniq_ids, msgid.next_unique_key,
                               messageproperties.MAX_PROPERTIES_LENGTH, messageproperties.MSG_TYPE,
                               replies.REPLY_MESSAGE_FLAG)
def prepare(msg: Message, settings: ProducerSettings) -> Outgoing:
    """Validate, stamp the unique key, compress if large.

    Its C twin (native/clientsend.c) makes the plain message's ``Outgoing`` in one call: a
    message of ``_PLAIN_MESSAGE_TYPES`` to a checked topic, an exact bytes body below the
    compression threshold, an i32 flag, a dict of properties without UNIQ_KEY (the key, the
    stamped text and the ``Outgoing`` as here: tests/client/test_prepare_native.py). Anything
    else comes here."""
    if (msg.__class__ is not Message or msg.topic.__class__ is not str or msg.topic not in _checked_topics
            or msg.body.__class__ is not bytes or not 0 < len(msg.body) <= settings.max_message_size
            or msg.flag.__class__ is not int or not -(1 << 31) <= msg.flag < (1 << 31)):
        _check_fields(msg, settings)  # the plain case above is one the checks would pass
    props = msg.properties
    msg_id = props.get(messageproperties.UNIQ_KEY) if props.__class__ is dict else None
    if msg_id:
        properties = _check_properties(msg)
    elif props.__class__ is dict:  # _stamped_properties inline: the common case, one call less
        msg_id = msgid.next_unique_key(_uniq_ids())
        properties = stamp_unique_key(props, msg_id, messageproperties.MAX_PROPERTIES_LENGTH)
    else:
        properties = _stamped_properties(msg)
        msg_id = props[messageproperties.UNIQ_KEY]
    body, sys_flag = msg.body, 0
    if body.__class__ is not bytes:
        body = bytes(body)
    if len(body) >= settings.compress_msg_body_over_howmuch:
        body = zlib.compress(body, COMPRESS_LEVEL)
        sys_flag = _COMPRESSED
    return Outgoing(msg.topic, body, sys_flag, msg.flag, properties, msg_id, False,
                    props.get(messageproperties.MSG_TYPE) == replies.REPLY_MESSAGE_FLAG)


_COMPRESSED: Final = int(MessageSysFlag.COMPRESSED)


def _stamped_properties(msg: Message) -> str:
    """The properties with a new unique key (in place of an empty one, or as the last entry),
    encoded: ``encode_properties`` of the stamped map. Invalid properties raise MessageError
    and leave the message as it was."""
    props = msg.properties
    if props.__class__ is not dict:
        _check_properties(msg)  # what is not a plain dict is refused (or accepted) as before
    return stamp_unique_key(props, msgid.next_unique_key(_uniq_ids()), messageproperties.MAX_PROPERTIES_LENGTH)


@nativecodecs.accelerated
def stamp_unique_key(props: dict[str, str], key: str, limit: int) -> str:
    """``props[UNIQ_KEY] = key`` (where the entry was, else as the last one) and the stamped
    map's properties text, checked as ``_properties_text`` checks it against ``limit`` UTF-8
    bytes; MessageError, the map as it was, for invalid properties. Its C twin
    (native/clientsend.c) does both in one call, byte for byte the same
    (tests/client/test_stamp_unique_key.py)."""
    had_entry = messageproperties.UNIQ_KEY in props
    previous = props.get(messageproperties.UNIQ_KEY)
    props[messageproperties.UNIQ_KEY] = key
    try:
        return _properties_text(props, limit)
    except MessageError:
        if had_entry:
            props[messageproperties.UNIQ_KEY] = previous  # type: ignore[assignment]
        else:
            del props[messageproperties.UNIQ_KEY]
        raise


def prepare_batch(msgs: Sequence[Message], settings: ProducerSettings) -> Outgoing:
    """One SEND_BATCH_MESSAGE: same topic, no delay, no retry topic, within maxMessageSize."""
    if not msgs:
        raise MessageError("a batch needs at least one message")
    plain = _prepare_plain_batch(msgs, settings)
    return plain if plain is not None else _prepare_checked_batch(msgs, settings)


_UNIQ_ENTRY_LENGTH: Final = len(f"{messageproperties.UNIQ_KEY}\x01\x02")
"""UTF-8 bytes a new unique key's entry adds to the properties, besides the key itself."""


def _prepare_plain_batch(msgs: Sequence[Message], settings: ProducerSettings) -> Outgoing | None:
    """``prepare_batch`` for the common batch, in one pass and without a call per check: every
    message a ``Message`` of the first one's (already validated, not retry) topic, with a
    ``bytes`` body, an i32 flag and str properties without UNIQ_KEY or DELAY, none of them
    twice. None, having changed nothing, for any other batch: the general path then checks
    (and refuses) it."""
    first = msgs[0]
    plain_types = _PLAIN_MESSAGE_TYPES
    topic = first.topic if first.__class__ in plain_types else None
    if topic.__class__ is not str or topic not in _checked_topics or topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
        return None
    max_size = settings.max_message_size
    uniq_key, delay, encode = messageproperties.UNIQ_KEY, messageproperties.DELAY, messageproperties.encode_properties
    texts = []
    for msg in msgs:
        if msg.__class__ not in plain_types or msg.topic != topic:
            return None
        body, flag, props = msg.body, msg.flag, msg.properties
        if (body.__class__ is not bytes or not 0 < len(body) <= max_size or flag.__class__ is not int
                or not -(1 << 31) <= flag < (1 << 31) or props.__class__ is not dict):
            return None
        if not props:
            texts.append("")
            continue
        if uniq_key in props or delay in props or not all(isinstance(k, str) and isinstance(v, str)
                                                         for k, v in props.items()):
            return None
        try:
            text = encode(props)
        except messageerrors.MessageIllegalError:
            return None
        if len(text.encode()) + _UNIQ_ENTRY_LENGTH + msgid.IPV6_ID_LENGTH > messageproperties.MAX_PROPERTIES_LENGTH:
            return None  # near the limit: the general path measures with the key itself
        texts.append(text)
    if len({id(msg) for msg in msgs}) != len(msgs):
        return None  # one message twice: the general path stamps it once and sends the key once
    keys = _uniq_ids().next_ids(len(msgs))
    entries = []
    for msg, text, key in zip(msgs, texts, keys, strict=True):
        msg.properties[uniq_key] = key
        entries.append((msg.body, msg.flag, f"{text}{uniq_key}\x01{key}\x02"))
    body = batchbodies.encode_batch_entries(entries)
    if len(body) > max_size:  # as on the general path, the keys stay stamped
        raise MessageError(f"the batch of {len(body)} bytes is over the max message size {max_size}")
    wait = first.properties.get(messageproperties.WAIT, "true")
    properties = messageproperties.encode_properties({messageproperties.WAIT: wait})
    return Outgoing(topic, body, 0, 0, properties, ",".join(keys), batch=True)


def _prepare_checked_batch(msgs: Sequence[Message], settings: ProducerSettings) -> Outgoing:
    """``prepare_batch`` with every check a call of its own: any batch."""
    topic = msgs[0].topic if isinstance(msgs[0], Message) else None
    checked: str | None = None
    encoded = []
    for msg in msgs:
        _check_fields(msg, settings, checked)
        checked = msg.topic
        encoded.append(_check_properties(msg))
        if msg.topic != topic:
            raise MessageError("The topic of the messages in one batch should be the same")
        if msg.delay_level > 0:
            raise MessageError("TimeDelayLevel is not supported for batching")
        if msg.topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            raise MessageError("Retry Group is not supported for batching")
    # the properties as encode_properties would give them after the keys are stamped, from
    # the text encoded while validating: a new key is the dict's last entry
    entries = []
    ids = []
    for msg, text in zip(msgs, encoded, strict=True):
        had_entry = messageproperties.UNIQ_KEY in msg.properties
        had_key = bool(msg.properties.get(messageproperties.UNIQ_KEY))
        key = _stamp_uniq_key(msg)
        if not had_entry:
            text += (f"{messageproperties.UNIQ_KEY}{messageproperties.NAME_VALUE_SEPARATOR}{key}"
                     f"{messageproperties.PROPERTY_SEPARATOR}")
        elif not had_key:
            text = messageproperties.encode_properties(msg.properties)  # an empty key was filled in where it was
        entries.append((msg.body, msg.flag, text))
        ids.append(key)
    try:
        body = batchbodies.encode_batch_entries(entries)
    except messageerrors.MessageIllegalError as exc:
        raise MessageError(str(exc)) from None
    if len(body) > settings.max_message_size:
        raise MessageError(f"the batch of {len(body)} bytes is over the max message size {settings.max_message_size}")
    wait = msgs[0].properties.get(messageproperties.WAIT, "true")
    properties = messageproperties.encode_properties({messageproperties.WAIT: wait})
    return Outgoing(msgs[0].topic, body, 0, 0, properties, ",".join(ids), batch=True)


def header(out: Outgoing, group: str, mq: MessageQueue, settings: ProducerSettings) -> SendMessageRequestHeader:
    return SendMessageRequestHeader(
        producer_group=group,
        topic=out.topic,
        default_topic=settings.create_topic_key,
        default_topic_queue_nums=settings.default_topic_queue_nums,
        queue_id=mq.queue_id,
        sys_flag=out.sys_flag,
        born_timestamp=time.time_ns() // 1_000_000,
        flag=out.flag,
        properties=out.properties,
        reconsume_times=0,
        unit_mode=False,
        batch=out.batch,
    )


def send_ext(out: Outgoing, group: str, mq: MessageQueue, settings: ProducerSettings) -> dict[str, str]:
    """SEND_MESSAGE_V2's extFields for ``out``: what ``send_header_to_v2(header(...))`` gives,
    in the same order, without building the header object (the pipelined send's path)."""
    return {
        "a": group, "b": out.topic, "c": settings.create_topic_key, "d": str(settings.default_topic_queue_nums),
        "e": str(mq.queue_id), "f": str(out.sys_flag), "g": str(time.time_ns() // 1_000_000), "h": str(out.flag),
        "i": out.properties, "j": "0", "k": "false", "m": "true" if out.batch else "false",
    }


def frozen_new(*values: Any) -> SendResult:
    """``SendResult`` given all six fields positionally (the name is the C twin's: native/headers.c
    fills the slots as the frozen dataclass's ``__init__`` does, without its ``object.__setattr__``
    calls; one result is made per send)."""
    return SendResult(*values)


new_send_result: Callable[..., SendResult] = nativecodecs.accelerated_with(
    SendResult, tuple(f.name for f in dataclasses.fields(SendResult)))(frozen_new)


def to_result(reply: SendReply, out: Outgoing, mq: MessageQueue) -> SendResult:
    return _result(SEND_STATUS_BY_CODE[reply.code], out.msg_id, reply.header, mq, reply.region_id)


def _result(status: SendStatus, msg_id: str, answer: SendMessageResponseHeader, mq: MessageQueue,
            region: str | None) -> SendResult:
    """The result of a stored send: the answer's queue (``mq`` itself when the broker kept it)."""
    queue = mq if answer.queue_id == mq.queue_id else MessageQueue(mq.topic, mq.broker_name, answer.queue_id)
    return new_send_result(status, msg_id, answer.msg_id, queue, answer.queue_offset, region)


@nativecodecs.accelerated_with(SendResult, tuple(f.name for f in dataclasses.fields(SendResult)))
def answer_result(ext: Mapping[str, str], status: SendStatus, msg_id: str, mq: MessageQueue) -> SendResult:
    """``to_result`` of a stored send's answer from its extFields, without the ``SendReply``
    and header in between: HeaderError for a header ``from_ext`` refuses. Its C twin
    (native/clientsend.c) reads msgId, queueId, queueOffset and MSG_REGION straight into the
    result for the answer brokers send (tests/client/test_answer_result.py)."""
    return _result(status, msg_id, SendMessageResponseHeader.from_ext(ext), mq, ext.get("MSG_REGION"))


@nativecodecs.accelerated_with(SendResult, tuple(f.name for f in dataclasses.fields(SendResult)))
def send_result_at(data: bytes, pos: int, end: int, status: SendStatus, msg_id: str, mq: MessageQueue) -> SendResult:
    """``answer_result`` of the SUCCESS answer whose frame is ``data[pos:end]`` (one
    ``storedanswers.answer_at`` found), given its frame: its C twin (native/clientsend.c)
    reads msgId, queueId, queueOffset and MSG_REGION from the header in place, without the
    extFields dict; anything else comes here (tests/client/test_answer_result.py)."""
    answer = storedanswers.stored_answer_at(data, pos, end - pos)
    if answer is None or answer[2] != end:
        raise HeaderError(f"no SUCCESS answer at {pos}:{end}")
    return answer_result(answer[1], status, msg_id, mq)


_SEND_STATUS: Final = {int(code): status for code, status in SEND_STATUS_BY_CODE.items()}
"""The answers that mean stored, by plain int, and their status."""


def send_answer(response: RemotingCommand, addr: str, out: Outgoing, mq: MessageQueue) -> SendResult:
    """``to_result(wire.send_reply(response, addr), out, mq)`` in one step (the pipelined and
    sync sends' answer): BrokerError unless the broker stored the message, ProtocolError for
    a bad answer header."""
    status = _SEND_STATUS.get(response.code)
    if status is None:
        raise BrokerError(response.code, response.remark, addr)
    return stored_result(response.ext_fields, addr, out, mq, status, response.code)


def stored_result(ext: Mapping[str, str], addr: str, out: Outgoing, mq: MessageQueue,
                  status: SendStatus = SendStatus.SEND_OK, code: int = ResponseCode.SUCCESS) -> SendResult:
    """The result of an answer with ``code`` that means stored (``status``), given its extFields
    (a client connection hands a SUCCESS answer's straight to the send: ``ClientConnection``):
    ProtocolError for a bad answer header."""
    try:
        return answer_result(ext, status, out.msg_id, mq)
    except HeaderError as exc:
        raise ProtocolError(f"{addr} answered code {code} with a bad header: {exc}") from None

