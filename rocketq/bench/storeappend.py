"""Append throughput of the store: ``python -m rocketq.bench.storeappend [--messages N] ...``.

Puts 1 KiB messages (each with a unique key and a tag, as a producer sends them) into a fresh
store in a temporary directory, in batches (``put_batch``) or one by one (``put``), and prints
messages per second and MiB per second. Includes encoding, the CommitLog append, ConsumeQueue
and IndexFile dispatch; excludes the network. A measurement tool, not a test.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time

from rocketq.protocol import javahash, messageproperties, msgid
from rocketq.store.messagestore import MessageStore, PutRequest
from rocketq.store.settings import FlushDiskType, StoreSettings


def _requests(count: int, body_size: int, queues: int, batch: int) -> list[PutRequest]:
    ids = msgid.UniqIdGenerator(ip="127.0.0.1")
    body = b"x" * body_size
    born = int(time.time() * 1000)
    return [
        PutRequest("BenchTopic", (i // batch) % queues, body,
                   properties=messageproperties.encode_properties({"UNIQ_KEY": ids.next_id(), "TAGS": "TagA"}),
                   born_timestamp=born, born_host=("127.0.0.1", 50000), tags_code=javahash.tag_hash("TagA"))
        for i in range(count)
    ]


async def run(messages: int, batch: int, body_size: int, flush: FlushDiskType, queues: int) -> float:
    with tempfile.TemporaryDirectory(prefix="rocketq-bench-") as root:
        settings = StoreSettings(store_path_root_dir=root, flush_disk_type=flush,
                                 mapped_file_size_commit_log=1 << 30)
        store = MessageStore(settings, ("127.0.0.1", 10911))
        store.open()
        await store.start()
        try:
            requests = _requests(messages, body_size, queues, max(1, batch))
            started = time.perf_counter()
            if batch > 1:
                for i in range(0, messages, batch):
                    result = await store.put_batch(requests[i:i + batch])
                    assert result.ok, result
            else:
                for r in requests:
                    assert (await store.put(r)).ok
            elapsed = time.perf_counter() - started
        finally:
            await store.close()
    return store.stats.put_message_times / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--batch", type=int, default=64, help="messages per put_batch; 1 uses put()")
    parser.add_argument("--body-size", type=int, default=1024)
    parser.add_argument("--queues", type=int, default=1)
    parser.add_argument("--flush", choices=[t.name for t in FlushDiskType], default="ASYNC_FLUSH")
    args = parser.parse_args()
    rate = asyncio.run(run(args.messages, args.batch, args.body_size, FlushDiskType[args.flush], args.queues))
    print(f"{rate:,.0f} msg/s, {rate * args.body_size / (1 << 20):,.1f} MiB/s of bodies "
          f"({args.messages} x {args.body_size} B, batch {args.batch}, {args.flush})")


if __name__ == "__main__":
    main()
