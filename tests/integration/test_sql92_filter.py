"""SQL92 subscriptions against real `rocketq namesrv` + `rocketq broker` processes.

The broker filters by message properties: a pull consumer (expression in the pull) and a push
consumer (expression registered by heartbeat) each get exactly the matching messages. A broker
without enablePropertyFilter refuses SQL92, and CHECK_CLIENT_CONFIG reports a parse error with
its position, as RocketMQ's brokers do.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from test_sdk_push import FAST, Collector, wait_until

from rocketq.client import BrokerError, Message, MessageSelector, Producer, PullConsumer, PushConsumer
from rocketq.client.errors import ClientStateError
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frames import RemotingCommand
from rocketq.remoting.client import RemotingClient

TOPIC = "SqlIT"
SELECTOR = "a >= 10 AND (color = 'red' OR color IS NULL)"
COUNT = 30


def color(i: int) -> str | None:
    return ("red", "blue", None)[i % 3]


def expected_bodies() -> set[bytes]:
    return {f"m{i}".encode() for i in range(COUNT) if i >= 10 and color(i) in ("red", None)}


async def send_all(namesrv: str) -> None:
    async with Producer("sql-pg", namesrv_addr=namesrv) as producer:
        for i in range(COUNT):
            props = {"a": str(i)}
            if color(i) is not None:
                props["color"] = color(i)  # type: ignore[assignment]
            await producer.send(Message(TOPIC, f"m{i}".encode(), properties=props, tags="T"))


async def pull_all(namesrv: str, expression: Any) -> list[bytes]:
    bodies: list[bytes] = []
    async with PullConsumer("sql-pull-cg", namesrv_addr=namesrv) as consumer:
        for mq in await consumer.fetch_subscribe_queues(TOPIC):
            offset = 0
            while True:
                result = await consumer.pull(mq, expression, offset, max_nums=32)
                bodies.extend(m.body for m in result.messages)
                if result.next_begin_offset >= result.max_offset:
                    break
                offset = result.next_begin_offset
    return bodies


async def test_sql92_selects_exactly_the_matching_messages(processes: Any) -> None:
    ns = processes.namesrv()
    processes.broker(ns.address, config={"enablePropertyFilter": "true"})
    await send_all(ns.address)
    pulled = await pull_all(ns.address, MessageSelector.by_sql(SELECTOR))
    assert sorted(pulled) == sorted(expected_bodies())

    collector = Collector()
    consumer = PushConsumer("sql-push-cg", namesrv_addr=ns.address, **FAST)
    consumer.subscribe(TOPIC, MessageSelector.by_sql(SELECTOR))
    consumer.register_listener(collector)
    async with consumer:
        await wait_until(lambda: collector.bodies() >= expected_bodies())
    assert {m.body for m in collector.messages} == expected_bodies()


async def test_a_broker_without_property_filter_refuses_sql92(processes: Any) -> None:
    ns = processes.namesrv()
    processes.broker(ns.address)
    await send_all(ns.address)
    with pytest.raises(BrokerError) as refused:
        await pull_all(ns.address, MessageSelector.by_sql("a > 1"))
    assert refused.value.code == ResponseCode.SYSTEM_ERROR
    assert "does not support consumer to filter message by SQL92" in refused.value.remark


async def test_check_client_config_reports_the_parse_error_position(processes: Any) -> None:
    ns = processes.namesrv()
    broker = processes.broker(ns.address, config={"enablePropertyFilter": "true"})

    def check(sql: str) -> RemotingCommand:
        body = {"clientId": "it", "group": "g", "subscriptionData": {
            "topic": TOPIC, "subString": sql, "expressionType": "SQL92", "subVersion": 1}}
        return RemotingCommand(code=RequestCode.CHECK_CLIENT_CONFIG, body=orjson.dumps(body))

    client = RemotingClient(name="it")
    try:
        ok = await client.invoke(broker.address, check("a = 'x'"), 5)
        bad = await client.invoke(broker.address, check("a = 'x' AND b >"), 5)
    finally:
        await client.close()
    assert ok.code == ResponseCode.SUCCESS
    assert bad.code == ResponseCode.SUBSCRIPTION_PARSE_FAILED
    assert "column 16" in (bad.remark or "")


def test_the_sdk_refuses_a_bad_selector_at_subscribe() -> None:
    consumer = PushConsumer("sql-bad-cg", namesrv_addr="127.0.0.1:1")
    with pytest.raises(ClientStateError, match="column 3"):
        consumer.subscribe(TOPIC, MessageSelector.by_sql("a != 1"))


async def test_a_push_consumer_with_sql92_fails_to_start_on_a_broker_that_cannot_filter(processes: Any) -> None:
    """CHECK_CLIENT_CONFIG at start (as Java's consumer sends it): the broker's refusal, not a
    consumer that runs and never receives."""
    ns = processes.namesrv()
    processes.broker(ns.address)
    await send_all(ns.address)  # creates the topic, so the consumer finds a broker to ask
    consumer = PushConsumer("sql-check-cg", namesrv_addr=ns.address, **FAST)
    consumer.subscribe(TOPIC, MessageSelector.by_sql("a > 1"))
    consumer.register_listener(Collector())
    with pytest.raises(BrokerError) as refused:
        await consumer.start()
    assert refused.value.code == ResponseCode.SYSTEM_ERROR
    assert "SQL92" in (refused.value.remark or "")
