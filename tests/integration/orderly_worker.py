"""An orderly consumer process for the orderly-consumption tests: ``python orderly_worker.py
NAMESRV GROUP TOPIC OUTFILE``. Each message consumed appends ``<wall time> <body>`` to OUTFILE
(flushed per line, so a SIGKILL loses nothing written); "ready" is printed on start."""

from __future__ import annotations

import asyncio
import sys
import time

from rocketq.client.orderly import ConsumeOrderlyContext, ConsumeOrderlyStatus
from rocketq.client.pushconsumer import PushConsumer
from rocketq.client.settings import ConsumeFromWhere
from rocketq.protocol.message import MessageExt

PER_MESSAGE_S = 0.05
"""Work per message: slow enough that a kill lands in the middle of the stream."""


async def main(namesrv: str, group: str, topic: str, outfile: str) -> None:
    with open(outfile, "a", buffering=1) as out:
        async def listener(msgs: list[MessageExt], ctx: ConsumeOrderlyContext) -> ConsumeOrderlyStatus:
            for m in msgs:
                await asyncio.sleep(PER_MESSAGE_S)
                out.write(f"{time.time():.6f} {m.body.decode()}\n")
            return ConsumeOrderlyStatus.SUCCESS

        consumer = PushConsumer(group, namesrv_addr=namesrv, rebalance_interval=1000,
                                persist_consumer_offset_interval=200, heartbeat_broker_interval=1000,
                                poll_name_server_interval=1000, broker_suspend_max_time_millis=1000,
                                consumer_timeout_millis_when_suspend=5000,
                                consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
        consumer.subscribe(topic, "*")
        consumer.register_orderly_listener(listener)
        await consumer.start()
        print("ready", flush=True)
        try:
            await asyncio.Event().wait()
        finally:
            await consumer.close()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))
