"""A broker's shutdown always flushes and closes its store, whatever failed before it."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from rocketq.broker.server import BrokerServer
from rocketq.broker.settings import BrokerBehaviour, BrokerIdentity
from rocketq.settings import PORT_OFF
from rocketq.store.messagestore import StoreState
from rocketq.store.settings import StoreSettings

FLUSH_INTERVAL_MS = 10


def broker(tmp_path: Path) -> BrokerServer:
    return BrokerServer(
        BrokerIdentity(listen_host="127.0.0.1", listen_port=0, broker_ip1="127.0.0.1", metrics_port=PORT_OFF),
        BrokerBehaviour(flush_consumer_offset_interval=FLUSH_INTERVAL_MS),
        StoreSettings(store_path_root_dir=str(tmp_path / "store"), mapped_file_size_commit_log=1 << 20),
    )


async def test_a_dead_background_loop_does_not_keep_the_store_open(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    server = broker(tmp_path)
    await server.start()

    def broken_persist(force: bool = False) -> None:
        raise RuntimeError("offsets cannot be written")

    server.offsets.persist = broken_persist  # type: ignore[method-assign]
    await asyncio.sleep(FLUSH_INTERVAL_MS / 1000 * 20)  # the offset-flush loop runs into it and dies
    with caplog.at_level(logging.ERROR):
        await server.close()
        await server.close()
    assert server.store.state is StoreState.CLOSED
    assert not (tmp_path / "store" / "abort").exists(), "a complete flush removes the abort file"
    assert "persisting consumer offsets failed" in caplog.text, "each failed step is logged"
    reopened = broker(tmp_path)
    await reopened.start()  # the store's lock was released
    await reopened.close()
