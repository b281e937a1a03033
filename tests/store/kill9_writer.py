"""Subprocess for the kill -9 test: writes SYNC_FLUSH messages forever and prints each one
acknowledged as ``<queue offset> <commitlog offset> <body>``; the test kills it mid-run."""

from __future__ import annotations

import asyncio
import sys

from rocketq.store.messagestore import MessageStore, PutRequest, PutStatus
from rocketq.store.settings import FlushDiskType, StoreSettings


async def main(root: str) -> None:
    settings = StoreSettings(store_path_root_dir=root, mapped_file_size_commit_log=256 * 1024,
                             mapped_file_size_consume_queue=20 * 1000, max_hash_slot_num=1000,
                             max_index_num=10_000, flush_disk_type=FlushDiskType.SYNC_FLUSH)
    store = MessageStore(settings, ("127.0.0.1", 10911))
    store.open()
    await store.start()
    i = 0
    while True:
        batch = [PutRequest("T", 0, f"m{i + k}".encode() * 20, properties={"UNIQ_KEY": f"U{i + k}"})
                 for k in range(4)]
        results = await asyncio.gather(*(store.put(r) for r in batch))
        for k, result in enumerate(results):
            if result.status is PutStatus.PUT_OK:
                sys.stdout.write(f"{result.queue_offset} {result.wrote_offset} m{i + k}\n")
        sys.stdout.flush()
        i += len(batch)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
