"""The first half of a put: validate and encode every message before anything is appended.

A put is all or nothing, so every request is checked and encoded into its stored record
(``storedrecords.RecordEncoder``) before the CommitLog moves: a message that is illegal, too
large for a segment, or names a bad topic or queue fails the whole put with no store state
changed. What comes out is one ``PreparedMessage`` per message: the record and what dispatch
needs after the append (``MessageStore._append_prepared``: CommitLog, ConsumeQueue unit, index entries).

``PreparedMessage`` is a plain tuple, not a class: the put path builds one per message and
unpacks it in the append loop, and a tuple costs no Python-level constructor call.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from rocketq.protocol import javahash, messageproperties, nativecodecs, storedrecords
from rocketq.protocol.codes import SCHEDULE_TOPIC
from rocketq.protocol.messageerrors import MessageIllegalError
from rocketq.store import dispatch
from rocketq.store.consumequeue import ConsumeQueue
from rocketq.store.queuetable import QueueTable
from rocketq.store.results import BatchPutRequest, PutRequest

PreparedMessage = tuple[bytes, int, ConsumeQueue, bool, int, str | None, str | None, str | None]
"""An encoded record and what dispatch needs: (record, STORETIMESTAMP position, queue, builds a
queue unit, tag code, UNIQ_KEY, KEYS, DELAY for SCHEDULE_TOPIC_XXXX)."""


class PreparedBatch(list[PreparedMessage]):
    """The prepared messages of one sender's batch (a ``BatchPutRequest``): every one goes to
    ``queue`` (with a unit when ``unit``) and has its STORETIMESTAMP at ``ts_pos``; ``scheduled``
    when the topic is SCHEDULE_TOPIC_XXXX (each unit's tag is then a delivery time). What lets
    the store append the whole batch with one call (``batchappend``)."""

    __slots__ = ("queue", "scheduled", "ts_pos", "unit")

    def __init__(self, queue: ConsumeQueue, ts_pos: int, unit: bool, scheduled: bool) -> None:
        super().__init__()
        self.queue = queue
        self.ts_pos = ts_pos
        self.unit = unit
        self.scheduled = scheduled


@nativecodecs.accelerated
def index_properties(encoded: str) -> tuple[str | None, str | None, str | None]:
    """TAGS, UNIQ_KEY and KEYS of encoded properties, each as ``property_value`` finds it.

    The reference for native/putfields.c, which reads all three in one pass of the text."""
    return (messageproperties.property_value(encoded, messageproperties.TAGS),
            messageproperties.property_value(encoded, messageproperties.UNIQ_KEY),
            messageproperties.property_value(encoded, messageproperties.KEYS))


def _index_fields(encoded: str, hint: tuple[str | None, str | None] | None,
                  tags_code: int | None) -> tuple[str | None, str | None, str | None]:
    """TAGS, UNIQ_KEY and KEYS of a put's encoded properties, from the put's hints where it
    has them (the broker's sends give both: then no TAGS is needed, the tag hash is known)."""
    if hint is None or tags_code is None:
        tags, uniq, keys = index_properties(encoded)
        if hint is not None:
            uniq, keys = hint
        return tags, uniq, keys
    return None, hint[0], hint[1]


@nativecodecs.accelerated_with(index_properties, javahash.tag_hash)
def prepare_plain(encode: Callable[..., tuple[bytes, int]], by_topic: Mapping[str, Mapping[int, ConsumeQueue]],
                  max_record: int, r: PutRequest) -> PreparedMessage | None:
    """``Preparer.prepare`` of one request in the plain case, or None when it is not plain.

    Plain: encoded (str) properties, sys_flag 0 (a whole message, no transaction half), a
    topic other than SCHEDULE_TOPIC_XXXX (no delay level) whose queue exists, and a record a
    segment holds. Its prepared message is then exactly the one ``prepare`` builds; anything
    else (None) goes by ``prepare``'s own loop. ``encode`` raises as in ``prepare`` (an
    illegal message fails the same way on both paths). The reference for the C twin in
    native/putfields.c, which makes the calls below without a Python frame.
    """
    props = r.properties
    topic = r.topic
    if r.sys_flag != 0 or props.__class__ is not str or topic == SCHEDULE_TOPIC:
        return None
    by_id = by_topic.get(topic)
    cq = by_id.get(r.queue_id) if by_id is not None else None
    if cq is None:
        return None
    tags, uniq, keys = _index_fields(props, r.index_keys, r.tags_code)
    record, ts_pos = encode(topic, r.queue_id, r.body, r.flag, props, 0, r.born_timestamp, r.born_host,
                            r.reconsume_times, r.prepared_transaction_offset)
    if len(record) > max_record:
        return None
    tag = r.tags_code if r.tags_code is not None else javahash.tag_hash(tags)
    return (record, ts_pos, cq, True, tag, uniq, keys, None)


class Preparer:
    """Encodes puts for one store: its host (in every record), its queues and segment size."""

    def __init__(self, encoder: storedrecords.RecordEncoder, queues: QueueTable, segment_size: int,
                 max_record: int) -> None:
        self._encoder = encoder
        self._queues = queues
        self._segment_size = segment_size
        self._max_record = max_record
        """The largest record a segment can hold (its size minus the end-of-file blank)."""

    def plain_parts(self) -> tuple[Callable[..., tuple[bytes, int]], dict[str, dict[int, ConsumeQueue]], int]:
        """``prepare_plain``'s first three arguments for this store (its encoder, its queues by
        topic and id, the largest record), for a caller that prepares lone puts itself."""
        return self._encoder.encode, self._queues.by_topic, self._max_record

    def prepare(self, requests: Sequence[PutRequest] | BatchPutRequest,
                plain_tried: bool = False) -> list[PreparedMessage]:
        """Validate and encode every request (no store state changes); MessageIllegalError
        (PropertiesSizeExceededError for long properties) when any of them cannot be stored.
        ``plain_tried``: the caller has had ``prepare_plain`` decline these requests (or raise),
        so it is not asked again."""
        if isinstance(requests, BatchPutRequest):
            return self._prepare_batch(requests)
        encode = self._encoder.encode
        by_topic = self._queues.by_topic
        max_record = self._max_record
        prepared = []
        for r in requests:
            plain = None if plain_tried else prepare_plain(encode, by_topic, max_record, r)
            if plain is not None:
                prepared.append(plain)
                continue
            props = r.properties
            hint = r.index_keys
            if isinstance(props, str):
                encoded = props
                tags, uniq, keys = _index_fields(props, hint, r.tags_code)
            else:
                encoded = messageproperties.encode_properties(props)
                tags = props.get(messageproperties.TAGS)
                uniq, keys = hint or (props.get(messageproperties.UNIQ_KEY), props.get(messageproperties.KEYS))
            by_id = by_topic.get(r.topic)  # the table's own lookup, inline: once per message
            cq = by_id.get(r.queue_id) if by_id is not None else None
            if cq is None:
                cq = self._queues.get_or_create(r.topic, r.queue_id)
            record, ts_pos = encode(r.topic, r.queue_id, r.body, r.flag, encoded, r.sys_flag, r.born_timestamp,
                                    r.born_host, r.reconsume_times, r.prepared_transaction_offset)
            if len(record) > self._max_record:
                raise self._too_large(record)
            delay = None
            if r.topic == SCHEDULE_TOPIC:
                delay = (messageproperties.property_value(encoded, messageproperties.DELAY) or "")
            tag = r.tags_code if r.tags_code is not None else javahash.tag_hash(tags)
            unit = not r.sys_flag or dispatch.builds_queue_unit(r.sys_flag)  # flag 0: a plain message
            prepared.append((record, ts_pos, cq, unit, tag, uniq, keys, delay))
        return prepared

    def _prepare_batch(self, batch: BatchPutRequest) -> PreparedBatch:
        """``prepare`` for one sender's batch to one queue: the shared parts looked up once."""
        cq = self._queues.get_or_create(batch.topic, batch.queue_id)
        encode, ts_pos = self._encoder.for_sender(batch.topic, batch.queue_id, batch.sys_flag, batch.born_timestamp,
                                                  batch.born_host, batch.reconsume_times)
        unit = dispatch.builds_queue_unit(batch.sys_flag)
        schedule = batch.topic == SCHEDULE_TOPIC
        max_record = self._max_record
        prepared = PreparedBatch(cq, ts_pos, unit, schedule)
        append = prepared.append
        for body, flag, props, tag, uniq, keys in batch.messages:
            record = encode(body, flag, props)
            if len(record) > max_record:
                raise self._too_large(record)
            delay = (messageproperties.property_value(props, messageproperties.DELAY) or "") if schedule else None
            append((record, ts_pos, cq, unit, tag, uniq, keys, delay))
        return prepared

    def _too_large(self, record: bytes) -> MessageIllegalError:
        return MessageIllegalError(f"message of {len(record)} bytes cannot fit a commitlog segment of "
                                   f"{self._segment_size} bytes")


def wants_flush_wait(properties: Mapping[str, str] | str) -> bool:
    """A producer can set WAIT=false to skip waiting for the flush (RocketMQ's waitStoreMsgOK)."""
    if isinstance(properties, str):
        value = messageproperties.property_value(properties, messageproperties.WAIT)
    else:
        value = properties.get(messageproperties.WAIT)
    return value != "false"
