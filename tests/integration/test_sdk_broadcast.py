"""BROADCASTING against real processes: every member of the group gets every message."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from test_sdk_push import FAST, TOPIC, Collector, send_all, wait_until

from rocketq.client import Producer, PushConsumer
from rocketq.client.settings import MessageModel


async def test_broadcasting_delivers_every_message_to_every_member(processes: Any, tmp_path: Path) -> None:
    ns = processes.namesrv()
    processes.broker(ns.address, config={"defaultTopicQueueNums": "4"})
    async with Producer("bc-pg", namesrv_addr=ns.address) as producer:
        await send_all(producer, "warmup", 4)
        members: list[tuple[PushConsumer, Collector]] = []
        for i in range(3):
            collector = Collector()
            consumer = PushConsumer("bc-cg", namesrv_addr=ns.address, message_model=MessageModel.BROADCASTING,
                                    instance_name=f"member-{i}", offset_store_dir=str(tmp_path / "offsets"),
                                    **FAST)
            consumer.subscribe(TOPIC, "*")
            consumer.register_listener(collector)
            await consumer.start()
            members.append((consumer, collector))
        try:
            await wait_until(lambda: all(len(c.assigned()) == 4 for c, _ in members))
            sent = await send_all(producer, "everyone", 30)
            for _consumer, collector in members:
                await wait_until(lambda collector=collector: collector.bodies() >= sent)
        finally:
            for consumer, _collector in members:
                await consumer.close()
