"""A full disk under a real broker: puts get an error, the broker lives, nothing acknowledged is lost.

Before the store reserved (fallocated) what it writes through its maps, a full disk killed the
broker with SIGBUS and no log line. Needs root to mount a small tmpfs; skipped, saying why,
where that is not allowed.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from clusterprocs import Processes, pull_bodies

from rocketq.client.errors import BrokerError
from rocketq.client.producer import Producer
from rocketq.protocol.codes import ResponseCode
from rocketq.protocol.messagetypes import Message

TOPIC = "DiskFullIT"
DISK_SIZE = 16 * 1024 * 1024
FILLER_SIZE = 8 * 1024 * 1024
"""Taken by another file, so that the store has about 8 MiB and filling it is quick."""
BODY = 32 * 1024


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 16 MiB tmpfs mounted for the test, unmounted after it. Request it before ``processes``
    so that the processes are stopped (and their files closed) before it is unmounted."""
    mount = tmp_path / "disk"
    mount.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={DISK_SIZE}", "tmpfs", str(mount)],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        if subprocess.run(["umount", str(mount)], check=False).returncode != 0:
            subprocess.run(["umount", "--lazy", str(mount)], check=False)  # busy: detach it anyway


async def _send_until_refused(producer: Producer, acked: list[bytes], in_a_row: int) -> BrokerError:
    """Send until ``in_a_row`` sends in a row are refused (another queue's file may still have
    room after the first refusal); returns the last refusal."""
    refused: list[BrokerError] = []
    for i in range(DISK_SIZE // BODY * 2):
        body = b"%06d" % i + os.urandom(BODY)  # random: the producer compresses big bodies
        try:
            await producer.send(Message(TOPIC, body))
        except BrokerError as exc:
            refused.append(exc)
            if len(refused) == in_a_row:
                return exc
            continue
        refused.clear()
        acked.append(body)
    raise AssertionError("the disk never filled up")


@pytest.mark.slow
async def test_broker_on_a_full_disk_stays_up(small_disk: Path, processes: Processes) -> None:
    filler = small_disk / "filler"
    filler.write_bytes(b"\0" * FILLER_SIZE)
    store = small_disk / "store"
    config = {
        "mappedFileSizeCommitLog": str(1024 * 1024),
        "mappedFileSizeConsumeQueue": str(20 * 64),
        "maxHashSlotNum": "1000",
        "maxIndexNum": "4000",
        "diskSpaceWarningLevelRatio": "100",  # let the disk really fill: the ENOSPC path is tested
        "diskMaxUsedSpaceRatio": "100",
    }
    ns = processes.namesrv()
    broker = processes.broker(ns.address, store=store, config=config)
    port = int(broker.address.rsplit(":", 1)[1])
    acked: list[bytes] = []
    async with Producer("diskfull-pg", namesrv_addr=ns.address, retry_times_when_send_failed=0) as producer:
        refusal = await _send_until_refused(producer, acked, in_a_row=5)
        assert refusal.code == ResponseCode.SERVICE_NOT_AVAILABLE, refusal
        assert broker.popen.poll() is None
        assert len(acked) > 100
        assert sorted(await pull_bodies(ns.address, TOPIC, "diskfull-cg")) == sorted(acked)  # reads keep working
        filler.unlink()
        for _ in range(100):  # the store reads the disk again within a second or so
            try:
                await producer.send(Message(TOPIC, b"after"))
                break
            except BrokerError:
                await asyncio.sleep(0.1)
        else:
            raise AssertionError("puts were still refused after space was freed")
        acked.append(b"after")
    assert broker.stop() == 0
    log = broker.log.read_text(errors="replace")
    assert "no space left on device" in log
    processes.broker(ns.address, store=store, port=port, config=config)
    assert sorted(await pull_bodies(ns.address, TOPIC, "diskfull-cg")) == sorted(acked)
