"""A woken held pull reads with the arguments it was held with (``HeldPull.reads``: batch,
bytes, tag filter) instead of going through ``PullHandlers._get`` again; its answers must be
byte for byte those of the general read.

Two consumers hold the same pull (same opaque, subscription, batch and byte limits) on one
queue; the second's ``reads`` is cleared, so its wake-up takes ``_get``. A producer's read of
sends with assorted tags and sizes then wakes both in the same notices: their writes must be
the same bytes (answers, records, suggested broker, next offsets, refusals to answer: a pull
whose tags match nothing stays held on both)."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from test_woken_pulls import Broker

from rocketq.broker.topics import TopicConfig
from rocketq.client import sending, wire
from rocketq.client.queues import MessageQueue
from rocketq.client.settings import ProducerSettings
from rocketq.protocol import pullsysflag
from rocketq.protocol.codes import RequestCode
from rocketq.protocol.frames import RemotingCommand
from rocketq.protocol.headers import PullMessageRequestHeader
from rocketq.protocol.message import Message

_TAGS = ("TagA", "TagB", "TagC", None)
_EXPRESSIONS = ("*", "TagA", "TagA || TagB", "TagC", "TagD")


def _send(opaque: int, topic: str, body: bytes, tag: str | None) -> bytes:
    producer = ProducerSettings()
    out = sending.prepare(Message(topic, body, properties={"TAGS": tag} if tag else {}), producer)
    request = wire.send_request(sending.header(out, "pg", MessageQueue(topic, "broker-a", 0), producer), out.body,
                                batch=False)
    request.opaque = opaque
    return request.encode()


def _pull(topic: str, expression: str, max_nums: int, max_bytes: int | None) -> bytes:
    header = PullMessageRequestHeader(
        consumer_group="cg", topic=topic, queue_id=0, queue_offset=0, max_msg_nums=max_nums,
        sys_flag=pullsysflag.SUSPEND | pullsysflag.SUBSCRIPTION, commit_offset=0, suspend_timeout_millis=15_000,
        subscription=expression, sub_version=1, expression_type="TAG", max_msg_bytes=max_bytes)
    return RemotingCommand(code=RequestCode.PULL_MESSAGE, opaque=7, ext_fields=header.to_ext()).encode()


_sends = st.lists(st.tuples(st.sampled_from(_TAGS), st.integers(1, 3000)), min_size=1, max_size=12)


async def test_a_woken_pull_answers_as_the_general_read(tmp_path: Path) -> None:
    broker = Broker(tmp_path)
    broker.store.open()
    await broker.store.start()
    topics = iter(range(1_000_000))

    @settings(max_examples=120, deadline=None)
    @given(_sends, st.sampled_from(_EXPRESSIONS), st.integers(1, 40), st.sampled_from([None, 1, 2_000, 9_000]))
    def check(sends: list[tuple[str | None, int]], expression: str, max_nums: int, max_bytes: int | None) -> None:
        topic = f"T{next(topics)}"
        broker.topics.upsert(TopicConfig(topic, 1, 1))
        lean, lean_out = broker.connection("lean")
        general, general_out = broker.connection("general")
        producer, _ = broker.connection("producer")
        lean.data_received(_pull(topic, expression, max_nums, max_bytes))
        general.data_received(_pull(topic, expression, max_nums, max_bytes))
        held = broker.pull._held[(topic, 0)]
        assert len(held) == 2 and held[0].reads is not None
        held[1].reads = None  # the second reads through ``_get``
        producer.data_received(b"".join(_send(i, topic, bytes([65 + i]) * size, tag)
                                        for i, (tag, size) in enumerate(sends)))
        assert bytes(lean_out.data) == bytes(general_out.data)
        answered = bool(lean_out.data)
        matching = expression == "*" or any(tag is not None and tag in expression.split(" || ") for tag, _ in sends)
        assert answered == matching
        for conn in (lean, general, producer):
            conn.connection_lost(None)

    try:
        check()
    finally:
        broker.pull.close()
        await broker.store.close()
