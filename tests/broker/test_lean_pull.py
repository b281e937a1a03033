"""The lean pull (``PullHandlers._lean``) answers, commits and holds exactly as the general path.

One real ``MessageStore`` and two pull sides on it, each with its own topics, groups and
offsets: the first answers its pulls as a broker does (the lean path for the common pull, the
general one for the rest), the second has its lean path switched off, so every pull takes
``_pull``. Hypothesis draws sequences of
pulls over groups and topics that exist or not, consume and read permissions, queue ids,
sysFlags, subscriptions, offsets, batch and byte limits, commit offsets, broker permission and
master or slave; both brokers must write the same bytes, commit the same offsets and hold the
same pulls, and answer them alike when messages arrive (the held pulls' wake-up)."""

from __future__ import annotations

import dataclasses
import itertools
from pathlib import Path
from typing import Any

import test_send_groups as send_groups
from hypothesis import given, settings
from hypothesis import strategies as st
from test_woken_pulls import Transport

from rocketq.broker import pull as pull_mod
from rocketq.broker.clienttable import ClientManager
from rocketq.broker.groups import SubscriptionGroupManager
from rocketq.broker.offsets import ConsumerOffsetManager
from rocketq.broker.pull import PullHandlers
from rocketq.broker.send import BrokerAddress, SendHandlers
from rocketq.broker.settings import BrokerBehaviour
from rocketq.broker.topics import TopicConfig, TopicConfigManager
from rocketq.protocol.codes import RequestCode
from rocketq.protocol.frames import RemotingCommand
from rocketq.protocol.headers import PullMessageRequestHeader
from rocketq.protocol.sharedbodies import SubscriptionGroupConfig
from rocketq.remoting.connection import Connection
from rocketq.store.messagestore import GetResult, MessageStore
from rocketq.store.settings import StoreSettings

STORED = 6
"""Messages stored in each queue of a drawn topic before its pulls."""


def _suggest(result: GetResult, group: SubscriptionGroupConfig | None) -> int:
    """A suggested broker that depends on what ``_answer`` hands it."""
    return (len(result.buffers) % 2) + (0 if group is None else 2)


class PullSide:
    """``PullHandlers`` with their own topic, group and offset tables, on a shared store."""

    def __init__(self, store: MessageStore, root: Path, *, lean: bool) -> None:
        root.mkdir()
        self.behaviour = BrokerBehaviour()
        self.topics = TopicConfigManager(root / "topics.json")
        self.groups = SubscriptionGroupManager(root / "groups.json")
        self.offsets = ConsumerOffsetManager(root / "offsets.json")
        self.pull = PullHandlers(store, self.topics, self.groups, self.offsets, ClientManager(lambda g, c: None),
                                 self.behaviour, is_master=True, suggest_broker=_suggest)
        self.lean_answers = 0
        lean_path = self.pull._lean

        def counted_lean(*args: Any) -> Any:
            answer = lean_path(*args) if lean else pull_mod._DECLINED
            self.lean_answers += answer is not pull_mod._DECLINED
            return answer

        self.pull._lean = counted_lean  # type: ignore[method-assign,assignment]

    def allow_all(self, topic: str, group: str) -> None:
        self.topics.upsert(TopicConfig(topic, 3, 3, perm=6))
        self.groups.upsert(SubscriptionGroupConfig(group))
        self.pull.broker_permission, self.pull._is_master = 6, True

    def change(self, setup: str, topic: str, group: str) -> None:
        self.pull._behaviour = dataclasses.replace(self.behaviour,
                                                   auto_create_subscription_group=setup.endswith("auto-created"))
        self.pull.broker_permission = {"broker write-only": 2, "broker read-only": 4}.get(setup, 6)
        self.pull._is_master = setup != "slave"
        self.topics.upsert(TopicConfig(topic, 3, 3, perm={"topic write-only": 2, "topic read-only": 4}.get(setup, 6)))
        if setup == "topic deleted":
            self.topics.delete([topic])
        if setup.startswith("group deleted"):
            self.groups.delete(group)
        elif setup == "group consume disabled":
            self.groups.upsert(SubscriptionGroupConfig(group, consume_enable=False))


def _connection(handlers: dict[int, Any], name: str) -> tuple[Connection, Transport]:
    conn = Connection(handlers, name=name, guard_backlog=True)
    transport = Transport(name, [])
    conn.connection_made(transport)  # type: ignore[arg-type]
    return conn, transport


async def _nothing() -> None:
    """No name server to tell about a new topic."""


def _pull(opaque: int, group: str, topic: str, fields: dict[str, Any]) -> bytes:
    header = PullMessageRequestHeader(consumer_group=group, topic=topic, suspend_timeout_millis=60_000, **fields)
    return RemotingCommand(code=RequestCode.PULL_MESSAGE, opaque=opaque, ext_fields=header.to_ext()).encode()


_pull_fields = st.fixed_dictionaries({
    "queue_id": st.sampled_from([0, 1, 2, 0, 1, 2, -1, 3]),  # -1, 3: no such queue
    "queue_offset": st.sampled_from([-1, 0, 1, 3, STORED - 1, STORED, STORED + 1, 10_000]),
    "max_msg_nums": st.integers(0, 8),
    "sys_flag": st.integers(0, 15) | st.integers(0, 15).map(lambda flag: flag | 4),  # 4: SUBSCRIPTION
    "commit_offset": st.sampled_from([-1, 0, 0, 1, 3, STORED]),
    "max_msg_bytes": st.sampled_from([None, 1, 300, 5_000]),
})
_subscriptions = st.fixed_dictionaries({
    "subscription": st.sampled_from([None, "*", "*", "*", "*", "*", "TagA", "TagA || TagB", "", "a = 1"]),
    "sub_version": st.integers(0, 2),
    "expression_type": st.sampled_from([None, "TAG", "TAG", "TAG", "SQL92"]),
})
"""A consumer's subscription, the same in all its pulls of one topic (as a real consumer's)."""
_setups = st.sampled_from(["as before", "group consume disabled", "group deleted",
                          "group deleted, auto-created", "topic deleted", "topic write-only", "topic read-only",
                          "broker write-only", "broker read-only", "slave"])
"""What changes after the first pulls (one thing at a time, so the lean path's every check is met
with all the others passed)."""


async def test_the_lean_pull_answers_as_the_general_one(tmp_path: Path) -> None:
    settings_ = StoreSettings(store_path_root_dir=str(tmp_path / "store"), mapped_file_size_commit_log=1 << 24)
    store = MessageStore(settings_, ("127.0.0.1", 10911))
    store.open()
    await store.start()
    send_topics = TopicConfigManager(tmp_path / "topics.json")
    address = BrokerAddress("DefaultCluster", "broker-a", "127.0.0.1", 10911, True)
    send = SendHandlers(store, send_topics, BrokerBehaviour(), address, on_topic_created=_nothing)
    producer, _ = _connection(send.handlers(), "producer")
    sides = [PullSide(store, tmp_path / "lean", lean=True), PullSide(store, tmp_path / "general", lean=False)]
    numbers = itertools.count()

    def sends(topic: str, bodies: list[tuple[bytes, int]]) -> None:
        producer.data_received(b"".join(send_groups.send_frame(i, body, topic=topic, queue_id=queue_id)
                                        for i, (body, queue_id) in enumerate(bodies)))

    @settings(max_examples=400, deadline=None)
    @given(_setups, _subscriptions, st.lists(_pull_fields, min_size=1, max_size=8), st.booleans())
    def check(setup: str, sub: dict[str, Any], drawn_pulls: list[dict[str, Any]], repeat: bool) -> None:
        n = next(numbers)
        pulls = [{**fields, **sub} for fields in drawn_pulls]
        topic, group = f"T{n}", f"cg{n}"
        send_topics.upsert(TopicConfig(topic, 3, 3))
        # queues 0 and 1 hold messages of 1 B to 8 KiB (answers joined into one frame and not), 2 none
        sends(topic, [(bytes([65 + i]) * (1 + 700 * i), i % 2) for i in range(2 * STORED)])
        consumers = [_connection(side.pull.handlers(), "consumer") for side in sides]
        # first with everything allowed, without commits (the subscriptions get built: the
        # lean path takes them from then on), then as drawn: one read of all the pulls (a
        # group), then each on its own
        for side, (consumer, _out) in zip(sides, consumers, strict=True):
            side.allow_all(topic, group)
            consumer.data_received(b"".join(_pull(i, group, topic, {**f, "sys_flag": f["sys_flag"] & ~1})
                                            for i, f in enumerate(pulls)))
            side.change(setup, topic, group)
            drawn = pulls * 2 if repeat else pulls
            consumer.data_received(b"".join(_pull(20 + i, group, topic, f) for i, f in enumerate(drawn)))
            for i, fields in enumerate(pulls):
                consumer.data_received(_pull(100 + i, group, topic, fields))
        held = [side.pull.held_count for side in sides]
        sends(topic, [(b"late%d" % i, i % 3) for i in range(6)])  # wakes the held pulls
        lean, general = [(bytes(out.data), held_before, side.pull.held_count, side.offsets.offsets_of(group, topic),
                          group in side.groups.table)
                         for side, (_conn, out), held_before in zip(sides, consumers, held, strict=True)]
        assert lean == general
        for consumer, _out in consumers:
            consumer.connection_lost(None)

    try:
        check()
    finally:
        for side in sides:
            side.pull.close()
        producer.connection_lost(None)
        await store.close()
    assert sides[0].lean_answers > 0 and sides[1].lean_answers == 0
