"""A real crash: a writer process is SIGKILLed mid-run; every message it acknowledged under
SYNC_FLUSH must be readable after the store reopens and recovers."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from rocketq.protocol import storedrecords
from rocketq.store.messagestore import GetStatus, MessageStore
from rocketq.store.settings import FlushDiskType, StoreSettings

WRITER = Path(__file__).with_name("kill9_writer.py")
ACKS_BEFORE_KILL = 1500


@pytest.mark.slow
@pytest.mark.timeout(120)
async def test_sigkill_loses_no_acknowledged_message(tmp_path: Path) -> None:
    root = tmp_path / "store"
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).parents[2]))
    proc = subprocess.Popen([sys.executable, str(WRITER), str(root)], stdout=subprocess.PIPE, env=env, text=True)
    acked: list[tuple[int, int, str]] = []
    try:
        assert proc.stdout is not None
        while len(acked) < ACKS_BEFORE_KILL:
            line = proc.stdout.readline()
            if not line:
                break
            fields = line.split()
            acked.append((int(fields[0]), int(fields[1]), fields[2]))
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    assert len(acked) >= ACKS_BEFORE_KILL, f"writer exited early with {proc.returncode}"
    assert (root / "abort").exists()

    settings = StoreSettings(store_path_root_dir=str(root), mapped_file_size_commit_log=256 * 1024,
                             mapped_file_size_consume_queue=20 * 1000, max_hash_slot_num=1000,
                             max_index_num=10_000, flush_disk_type=FlushDiskType.SYNC_FLUSH)
    store = MessageStore(settings, ("127.0.0.1", 10911))
    store.open()
    try:
        assert store.recovery_report is not None and store.recovery_report.abnormal
        assert store.get_max_offset("T", 0) >= max(q for q, _, _ in acked) + 1
        for queue_offset, phys, body in acked:
            got = store.get_messages("T", 0, queue_offset, 1)
            assert got.status is GetStatus.FOUND
            record = storedrecords.decode_stored_record(got.buffers[0], check_crc=True)
            assert record.body == body.encode() * 20
            assert record.commit_log_offset == phys
        uniq = acked[-1][2].replace("m", "U")
        assert len(store.query_message("T", uniq, 10, 0, 1 << 62).buffers) == 1
    finally:
        await store.close()
