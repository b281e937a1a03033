"""The broker's queue-lock table and the LOCK_BATCH_MQ / UNLOCK_BATCH_MQ sharedbodies."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.broker import locks
from rocketq.protocol import sharedbodies
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frames import RemotingCommand

Q0 = ("T", "broker-a", 0)
Q1 = ("T", "broker-a", 1)


class Clock:
    def __init__(self) -> None:
        self.ms = 1_000_000.0

    def __call__(self) -> float:
        return self.ms


def table() -> tuple[locks.RebalanceLocks, Clock]:
    clock = Clock()
    return locks.RebalanceLocks(60_000, clock), clock


def test_a_free_queue_is_granted_and_a_held_one_refused() -> None:
    lock_table, _ = table()
    assert lock_table.try_lock("g", "c1", [Q0]) == [Q0]
    assert lock_table.try_lock("g", "c2", [Q0, Q1]) == [Q1]
    assert lock_table.holder("g", Q0) == "c1"
    assert lock_table.try_lock("other-group", "c2", [Q0]) == [Q0]  # locks are per group


def test_renewal_keeps_a_lock_and_expiry_hands_it_over() -> None:
    lock_table, clock = table()
    lock_table.try_lock("g", "c1", [Q0])
    clock.ms += 50_000
    assert lock_table.try_lock("g", "c1", [Q0]) == [Q0]  # renewed
    clock.ms += 59_000
    assert lock_table.try_lock("g", "c2", [Q0]) == []  # 59 s since the renewal: still c1's
    clock.ms += 1_001
    assert lock_table.holder("g", Q0) is None
    assert lock_table.try_lock("g", "c2", [Q0]) == [Q0]
    assert lock_table.holder("g", Q0) == "c2"


def test_unlock_releases_only_the_requesters_locks() -> None:
    lock_table, _ = table()
    lock_table.try_lock("g", "c1", [Q0])
    lock_table.try_lock("g", "c2", [Q1])
    lock_table.unlock("g", "c1", [Q0, Q1])
    assert lock_table.holder("g", Q0) is None
    assert lock_table.holder("g", Q1) == "c2"


def _request(code: int, payload: object) -> RemotingCommand:
    return RemotingCommand(code=code, body=orjson.dumps(payload))


async def test_handlers_speak_rocketmqs_bodies() -> None:
    handlers = locks.LockHandlers(table()[0])
    mq = {"topic": "T", "brokerName": "broker-a", "queueId": 0}
    body = {"consumerGroup": "g", "clientId": "10.0.0.5@1", "mqSet": [mq], "onlyThisBroker": False}
    answer = await handlers.lock_batch(None, _request(RequestCode.LOCK_BATCH_MQ, body))  # type: ignore[arg-type]
    assert answer.code == ResponseCode.SUCCESS
    assert orjson.loads(answer.body) == {"lockOKMQSet": [mq]}
    refused = await handlers.lock_batch(None, _request(  # type: ignore[arg-type]
        RequestCode.LOCK_BATCH_MQ, {**body, "clientId": "10.0.0.6@2"}))
    assert orjson.loads(refused.body) == {"lockOKMQSet": []}
    released = await handlers.unlock_batch(None, _request(RequestCode.UNLOCK_BATCH_MQ, body))  # type: ignore[arg-type]
    assert (released.code, released.body) == (ResponseCode.SUCCESS, b"")
    assert handlers.locks.holder("g", Q0) is None


@pytest.mark.parametrize("payload", [
    [], {"consumerGroup": "g"}, {"consumerGroup": "g", "clientId": "c", "mqSet": {}},
    {"consumerGroup": "g", "clientId": "c", "mqSet": [{"topic": "T", "brokerName": "b", "queueId": -1}]},
    {"consumerGroup": "g", "clientId": "c", "mqSet": [7]},
])
async def test_malformed_bodies_are_refused_with_a_reason(payload: object) -> None:
    handlers = locks.LockHandlers(table()[0])
    answer = await handlers.lock_batch(None, _request(RequestCode.LOCK_BATCH_MQ, payload))  # type: ignore[arg-type]
    assert answer.code == ResponseCode.SYSTEM_ERROR and answer.remark


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["consumerGroup", "clientId", "mqSet", "topic", "brokerName", "queueId"]), inner,
        max_size=4),
    max_leaves=12,
)


@given(json_values)
def test_the_body_parser_never_fails_another_way(value: object) -> None:
    try:
        parsed = locks.parse_request(orjson.dumps(value))
    except sharedbodies.BodyError:
        return
    assert all(q[2] >= 0 for q in parsed.queues)


@given(st.binary(max_size=40))
def test_any_bytes_give_a_request_or_a_body_error(raw: bytes) -> None:
    try:
        parsed = locks.parse_request(raw)
    except sharedbodies.BodyError:
        return
    assert isinstance(parsed, locks.LockRequest)
