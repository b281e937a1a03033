"""Held long-poll pulls woken by one round of arrivals: answered together, one write per consumer.

A real ``MessageStore`` in a temporary directory, the broker's ``SendHandlers`` and
``PullHandlers`` wired as ``BrokerServer`` wires them, and ``Connection``s whose transports only
record what is written (and in which order, across connections). A consumer holds one pull per
queue; a producer's read of single sends then lands one message in each queue.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import test_send_groups as send_groups

from rocketq.broker import pull as pull_mod
from rocketq.broker.clienttable import ClientManager
from rocketq.broker.groups import SubscriptionGroupManager
from rocketq.broker.offsets import ConsumerOffsetManager
from rocketq.broker.pull import PullHandlers
from rocketq.broker.send import BrokerAddress, SendHandlers
from rocketq.broker.settings import BrokerBehaviour
from rocketq.broker.topics import TopicConfig, TopicConfigManager
from rocketq.protocol import frames, pullsysflag, requests
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frames import RemotingCommand
from rocketq.protocol.headers import PullMessageRequestHeader
from rocketq.remoting.connection import Connection
from rocketq.store.messagestore import MessageStore
from rocketq.store.settings import StoreSettings

TOPIC = "WokenTopic"
GROUP = "woken_cg"
QUEUES = 8


class Transport(send_groups.Transport):
    """``test_send_groups``' transport that also notes each write in a log shared by several."""

    def __init__(self, name: str, log: list[str]) -> None:
        super().__init__()
        self.name, self.log = name, log

    def writelines(self, chunks: list[bytes]) -> None:
        self.log.append(self.name)
        super().writelines(chunks)

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        """No buffer to limit."""

    def frames(self) -> list[RemotingCommand]:
        return list(frames.FrameDecoder().feed(bytes(self.data)))


class Broker:
    def __init__(self, root: Path) -> None:
        behaviour = BrokerBehaviour()
        self.store = MessageStore(StoreSettings(store_path_root_dir=str(root), mapped_file_size_commit_log=1 << 24),
                                  ("127.0.0.1", 10911))
        self.topics = TopicConfigManager(root / "topics.json")
        self.topics.upsert(TopicConfig(TOPIC, QUEUES, QUEUES))
        self.send = SendHandlers(self.store, self.topics, behaviour,
                                 BrokerAddress("DefaultCluster", "broker-a", "127.0.0.1", 10911, True),
                                 on_topic_created=_nothing)
        self.pull = PullHandlers(self.store, self.topics, SubscriptionGroupManager(root / "groups.json"),
                                 ConsumerOffsetManager(root / "offsets.json"), ClientManager(lambda g, c: None),
                                 behaviour, is_master=True)
        self.handlers = {**self.send.handlers(), **self.pull.handlers()}
        self.log: list[str] = []

    def connection(self, name: str) -> tuple[Connection, Transport]:
        conn = Connection(self.handlers, name=name, guard_backlog=True)
        transport = Transport(name, self.log)
        conn.connection_made(transport)  # type: ignore[arg-type]
        return conn, transport


async def _nothing() -> None:
    """No name server to tell about a new topic."""


@pytest.fixture
async def broker(tmp_path: Path) -> AsyncIterator[Broker]:
    b = Broker(tmp_path)
    b.store.open()
    await b.store.start()
    try:
        yield b
    finally:
        b.pull.close()
        await b.store.close()


def pull_frame(opaque: int, queue_id: int, offset: int = 0) -> bytes:
    header = PullMessageRequestHeader(
        consumer_group=GROUP, topic=TOPIC, queue_id=queue_id, queue_offset=offset, max_msg_nums=32,
        sys_flag=pullsysflag.SUSPEND | pullsysflag.SUBSCRIPTION, commit_offset=0, suspend_timeout_millis=15_000,
        subscription="*", sub_version=1, expression_type="TAG")
    return RemotingCommand(code=RequestCode.PULL_MESSAGE, opaque=opaque, ext_fields=header.to_ext()).encode()


def send_frame(opaque: int, body: bytes, queue_id: int) -> bytes:
    return send_groups.send_frame(opaque, body, topic=TOPIC, queue_id=queue_id)


def bodies(answer: RemotingCommand) -> list[bytes]:
    return [m.body for m in requests.decode_records(answer.body)]


def hold_one_pull_per_queue(broker: Broker, conn: Connection, first_opaque: int = 100) -> None:
    conn.data_received(b"".join(pull_frame(first_opaque + q, q) for q in range(QUEUES)))
    assert broker.pull.held_count == QUEUES


async def test_a_read_of_sends_answers_the_pulls_it_wakes_in_two_writes_before_the_acks(broker: Broker) -> None:
    consumer, consumer_out = broker.connection("consumer")
    producer, producer_out = broker.connection("producer")
    hold_one_pull_per_queue(broker, consumer)
    assert consumer_out.writes == 0  # all held: nothing to answer yet

    producer.data_received(b"".join(send_frame(q, b"m%d" % q, q) for q in range(QUEUES)))

    # answered inside the read that brought the messages, not a loop turn later: the first
    # answer at once, the other seven together at the round's end
    assert consumer_out.writes == 2
    answers = consumer_out.frames()
    assert sorted(a.opaque for a in answers) == [100 + q for q in range(QUEUES)]
    for answer in answers:
        assert answer.code == ResponseCode.SUCCESS
        assert bodies(answer) == [b"m%d" % (answer.opaque - 100)]
        assert answer.ext_fields["nextBeginOffset"] == "1"
    assert broker.pull.held_count == 0
    # the consumer's answers leave before the producer's acknowledgements
    assert broker.log[0] == "consumer" and "producer" in broker.log
    acks = producer_out.frames()
    assert sorted(a.opaque for a in acks) == list(range(QUEUES))
    assert {a.code for a in acks} == {ResponseCode.SUCCESS}


async def test_each_consumer_connection_gets_its_own_writes(broker: Broker) -> None:
    first, first_out = broker.connection("first")
    second, second_out = broker.connection("second")
    producer, _ = broker.connection("producer")
    first.data_received(b"".join(pull_frame(100 + q, q) for q in range(0, QUEUES, 2)))
    second.data_received(b"".join(pull_frame(200 + q, q) for q in range(1, QUEUES, 2)))

    producer.data_received(b"".join(send_frame(q, b"m%d" % q, q) for q in range(QUEUES)))

    assert (first_out.writes, second_out.writes) == (2, 2)  # its first answer, then the rest
    assert sorted(a.opaque for a in first_out.frames()) == [100 + q for q in range(0, QUEUES, 2)]
    assert sorted(a.opaque for a in second_out.frames()) == [200 + q for q in range(1, QUEUES, 2)]


async def test_a_round_that_wakes_many_pulls_of_one_consumer_writes_them_in_slices(
        broker: Broker, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pull_mod, "MAX_WOKEN_PER_WRITE", 3)
    consumer, consumer_out = broker.connection("consumer")
    producer, _ = broker.connection("producer")
    hold_one_pull_per_queue(broker, consumer)

    producer.data_received(b"".join(send_frame(q, b"m%d" % q, q) for q in range(QUEUES)))

    assert consumer_out.writes == 4  # the first; 3 and 3 as they filled; the last at the round's end
    assert sorted(a.opaque for a in consumer_out.frames()) == [100 + q for q in range(QUEUES)]


async def test_a_lone_send_answers_its_pull_at_once_and_the_others_stay_held(broker: Broker) -> None:
    consumer, consumer_out = broker.connection("consumer")
    producer, _ = broker.connection("producer")
    hold_one_pull_per_queue(broker, consumer)

    producer.data_received(send_frame(1, b"only", 5))

    assert consumer_out.writes == 1
    (answer,) = consumer_out.frames()
    assert answer.opaque == 105 and bodies(answer) == [b"only"]
    assert broker.pull.held_count == QUEUES - 1


async def test_pulls_of_a_closed_connection_are_dropped_not_answered(broker: Broker) -> None:
    consumer, consumer_out = broker.connection("consumer")
    producer, _ = broker.connection("producer")
    hold_one_pull_per_queue(broker, consumer)
    consumer.connection_lost(None)

    producer.data_received(b"".join(send_frame(q, b"m%d" % q, q) for q in range(QUEUES)))

    assert consumer_out.writes == 0
    assert broker.pull.held_count == 0
