"""What handing every record from a network process to a store process costs, per message.

    .venv/bin/python bench/split_handoff.py [--messages 64000] [--size 1100]

A broker split into two processes (frames, headers and checks in one; the CommitLog, queues
and index in the other) must move each record across, and each answer (offsets) back. This
measures exactly that hand-off, with nothing else in either process, so it is the least such
a split adds to the CPU per message:

* ``pipe``: the group's record sizes and bytes written to a pipe with one ``writev``, read
  by the store side into a buffer and sliced into records; the offsets answered through a
  second pipe;
* ``shm``: the records copied into a shared-memory ring (``multiprocessing.shared_memory``),
  only the sizes and the ring position sent through the pipe (the doorbell); the store side
  slices the records out of the ring; offsets answered as above.

Each at groups of 1 (a lone sync send, one group in flight: a round trip per message), 16
(a pipelined read's group, 8 groups in flight) and 32 (a batch, 8 in flight). It prints the
CPU per message of both processes (``getrusage``; they are forked, so no start-up is
counted) and the wall-clock rate. Compare the sum with what the split would move off the
network process: the store's own put of the same groups (``MessageStore.put_group`` of 16
single puts, ``put_batch`` of 32: record encoding, CommitLog append, queue units, index
entries), measured here in process as CPU per message. It asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import struct
import tempfile
import time
from multiprocessing import shared_memory
from typing import Final

from rocketq.bench.storeappend import _requests
from rocketq.store.messagestore import MessageStore
from rocketq.store.settings import StoreSettings

HEADER: Final = struct.Struct("<iiq")
"""count, payload bytes, ring position (shm only) of one group."""
RING_BYTES: Final = 64 << 20
ANSWER: Final = struct.Struct("<qq")
"""Per record: its physical offset and queue offset, as a put's result carries."""
CASES: Final = ((1, 1), (16, 8), (32, 8))
"""(records per group, groups in flight)."""


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _read_exact(fd: int, n: int) -> bytearray:
    buf = bytearray(n)
    view, got = memoryview(buf), 0
    while got < n:
        read = os.readv(fd, [view[got:]])
        if not read:
            raise EOFError(f"the other side closed the pipe after {got} of {n} bytes")
        got += read
    return buf


def _store_side(requests: int, answers: int, ring: shared_memory.SharedMemory | None) -> None:
    """Read groups until a count of 0; slice out each record; answer the offsets."""
    started = _cpu()
    phys = 0
    ring_view = ring.buf if ring is not None else None
    while True:
        count, payload, position = HEADER.unpack(_read_exact(requests, HEADER.size))
        if count == 0:
            break
        sizes = struct.unpack(f"<{count}i", _read_exact(requests, 4 * count))
        data = memoryview(_read_exact(requests, payload)) if ring_view is None else ring_view[position:]
        offsets = []
        pos = 0
        for size in sizes:
            record = data[pos:pos + size]  # what the store's append takes
            pos += size
            offsets.append(ANSWER.pack(phys, len(record)))
            phys += size
        os.write(answers, b"".join(offsets))
    os.write(answers, struct.pack("<d", _cpu() - started))


def _network_side(requests: int, answers: int, ring: shared_memory.SharedMemory | None, records: list[bytes],
                  group: int, in_flight: int) -> tuple[float, float]:
    """Send every record in groups, ``in_flight`` groups at most un-answered; (CPU, wall) seconds."""
    started, wall = _cpu(), time.perf_counter()
    ring_view = ring.buf if ring is not None else None
    cursor = phys = 0
    waiting: list[list[int]] = []
    for first in range(0, len(records), group):
        chunk = records[first:first + group]
        lengths = [len(record) for record in chunk]
        sizes = struct.pack(f"<{len(chunk)}i", *lengths)
        payload = sum(lengths)
        if ring_view is None:
            os.writev(requests, [HEADER.pack(len(chunk), payload, 0), sizes, *chunk])
        else:
            if cursor + payload > RING_BYTES:
                cursor = 0  # the store side is at most ``in_flight`` groups behind: far less than the ring
            position = cursor
            for record in chunk:
                ring_view[cursor:cursor + len(record)] = record
                cursor += len(record)
            os.writev(requests, [HEADER.pack(len(chunk), payload, position), sizes])
        waiting.append(lengths)
        if len(waiting) >= in_flight:
            phys = _answers(answers, waiting.pop(0), phys)
    for lengths in waiting:
        phys = _answers(answers, lengths, phys)
    return _cpu() - started, time.perf_counter() - wall


def _answers(fd: int, lengths: list[int], phys: int) -> int:
    """Read one group's answers and check them (each record where the last one ended, with
    its own size, as a store would answer); the offset after the group."""
    raw = _read_exact(fd, ANSWER.size * len(lengths))
    for i, length in enumerate(lengths):
        offset, size = ANSWER.unpack_from(raw, i * ANSWER.size)
        if (offset, size) != (phys, length):
            raise RuntimeError(f"answer {i} of a group: ({offset}, {size}), expected ({phys}, {length})")
        phys += length
    return phys


def measure(transport: str, messages: int, size: int, group: int, in_flight: int) -> tuple[float, float, float]:
    """(network side µs/msg, store side µs/msg, msg/s) of one run; RuntimeError if an answer
    is not what the store side should have said."""
    records = [os.urandom(size) for _ in range(messages)]
    ring = shared_memory.SharedMemory(create=True, size=RING_BYTES) if transport == "shm" else None
    req_r, req_w = os.pipe()
    ans_r, ans_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(req_w)
            os.close(ans_r)
            _store_side(req_r, ans_w, ring)
        finally:
            os._exit(0)
    os.close(req_r)
    os.close(ans_w)
    try:
        cpu, wall = _network_side(req_w, ans_r, ring, records, group, in_flight)
        os.write(req_w, HEADER.pack(0, 0, 0))
        (store_cpu,) = struct.unpack("<d", _read_exact(ans_r, 8))
    finally:
        os.close(req_w)  # first: a store side still reading or answering ends (EOF, EPIPE)
        os.close(ans_r)
        os.waitpid(pid, 0)
        if ring is not None:
            ring.close()
            ring.unlink()
    return cpu / messages * 1e6, store_cpu / messages * 1e6, messages / wall


async def _store_put_cpu(messages: int, group: int) -> float:
    """CPU µs per message of the store's put of ``group``-sized groups (16: ``put_group`` of
    single puts, as a pipelined read; 32: one ``put_batch``; 1: ``put``)."""
    with tempfile.TemporaryDirectory(prefix="rocketq-handoff-") as root:
        store = MessageStore(StoreSettings(store_path_root_dir=root, mapped_file_size_commit_log=1 << 30),
                             ("127.0.0.1", 10911))
        store.open()
        await store.start()
        try:
            requests = _requests(messages, 1024, 8, group)
            started = time.process_time()
            for first in range(0, messages, group):
                chunk = requests[first:first + group]
                if group == 1:
                    await store.put(chunk[0])
                elif group == 32:
                    await store.put_batch(chunk)
                else:
                    await store.put_group([[r] for r in chunk])
            return (time.process_time() - started) / messages * 1e6
        finally:
            await store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=64000)
    parser.add_argument("--size", type=int, default=1100, help="bytes per stored record (a 1 KiB body's record)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per case; the one with the least CPU is shown")
    args = parser.parse_args()
    print(f"load average {os.getloadavg()}")
    print("| transport | records per group, in flight | network side µs/msg | store side µs/msg | sum | msg/s |")
    print("|---|---|---|---|---|---|")
    for transport in ("pipe", "shm"):
        for group, in_flight in CASES:
            count = args.messages if group > 1 else args.messages // 8  # a round trip each: fewer
            runs = [measure(transport, count, args.size, group, in_flight) for _ in range(args.repeat)]
            net, store, rate = min(runs, key=lambda r: r[0] + r[1])
            print(f"| {transport} | {group}, {in_flight} | {net:.2f} | {store:.2f} | {net + store:.2f} | {rate:,.0f} |",
                  flush=True)
    print("\n| the store's own put (the work a split moves), records per put | CPU µs/msg |\n|---|---|")
    for group, _in_flight in CASES:
        best = min(asyncio.run(_store_put_cpu(args.messages // 2, group)) for _ in range(args.repeat))
        print(f"| {group} | {best:.2f} |", flush=True)


if __name__ == "__main__":
    main()
