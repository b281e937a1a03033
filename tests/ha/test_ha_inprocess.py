"""Master and slave HA services in one event loop: streaming, SYNC_MASTER answers, truncation."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from rocketq.ha import protocol
from rocketq.ha.epochs import EpochHistory
from rocketq.ha.service import HAService
from rocketq.ha.settings import HASettings
from rocketq.ha.slave import HAClient
from rocketq.store.messagestore import MessageStore, PutRequest
from rocketq.store.results import PutStatus
from rocketq.store.settings import StoreSettings

SETTINGS = HASettings(ha_send_heartbeat_interval=200, ha_housekeeping_interval=2000)


def store_settings(root: Path) -> StoreSettings:
    return StoreSettings(store_path_root_dir=str(root), mapped_file_size_commit_log=64 * 1024,
                         mapped_file_size_consume_queue=20 * 100, max_hash_slot_num=64, max_index_num=400,
                         sync_flush_timeout=300)


Opener = Callable[..., Awaitable[tuple[MessageStore, HAService]]]


@pytest.fixture
async def open_node(tmp_path: Path) -> AsyncIterator[Opener]:
    """``await open_node(name, master=None)``: a store and its HA service (a slave of ``master``)."""
    opened: list[tuple[MessageStore, HAService]] = []

    async def factory(name: str, master: HAService | None = None, *, sync: bool = True) -> tuple[MessageStore,
                                                                                                   HAService]:
        store = MessageStore(store_settings(tmp_path / name), ("127.0.0.1", 10911))
        store.open()
        await store.start()
        ha = HAService(store, SETTINGS, is_master=master is None, sync_master=sync, listen_host="127.0.0.1",
                       advertised_host="127.0.0.1", ha_port=0, sync_timeout_ms=300,
                       master_ha_addr=lambda: master.ha_server_addr if master else None)
        await ha.start()
        opened.append((store, ha))
        return store, ha

    yield factory
    for store, ha in reversed(opened):
        await ha.close()
        await store.close()


async def put(store: MessageStore, ha: HAService, body: bytes = b"m" * 300, **props: str) -> PutStatus:
    request = PutRequest("T", 0, body, properties={"UNIQ_KEY": "u", **props})
    result = await store.put(request)
    return (await ha.wait_for_slave([request], result)).status


async def until(condition: Callable[[], bool], timeout: float = 5) -> None:
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.01)


async def test_sync_master_answers_after_the_slave_has_the_message(open_node: Opener,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    master, master_ha = await open_node("m")
    assert await put(master, master_ha) is PutStatus.SLAVE_NOT_AVAILABLE  # no slave yet: stored, not waited
    assert "SYNC_MASTER: no slave is connected" in caplog.text
    assert await put(master, master_ha, WAIT="false") is PutStatus.PUT_OK
    slave, slave_ha = await open_node("s", master_ha)
    await until(lambda: master_ha.in_sync(master.max_phy_offset))
    for _ in range(300):  # crosses several 64 KiB segments
        assert await put(master, master_ha) is PutStatus.PUT_OK
        assert slave.max_phy_offset >= master.max_phy_offset
    assert slave.get_max_offset("T", 0) == master.get_max_offset("T", 0) == 302
    status = master_ha.status()
    assert status.connections == 1 and status.in_sync and status.behind_bytes == 0
    # a send ending further beyond the slave's acknowledgement than haMaxGapNotInSync does not wait
    gap = SETTINGS.ha_max_gap_not_in_sync
    assert master_ha.in_sync(master.max_phy_offset + gap - 1)
    assert not master_ha.in_sync(master.max_phy_offset + gap)
    assert slave_ha.status().in_sync and slave_ha.runtime_info()["haClientState"] == "transferring"


async def test_a_stalled_slave_times_out_then_is_not_available(open_node: Opener) -> None:
    master, master_ha = await open_node("m")
    _slave, slave_ha = await open_node("s", master_ha)
    await until(lambda: master_ha.in_sync(master.max_phy_offset))
    assert slave_ha.client is not None
    await slave_ha.client.close()  # the slave stops; the master notices the closed connection
    assert await put(master, master_ha) in (PutStatus.FLUSH_SLAVE_TIMEOUT, PutStatus.SLAVE_NOT_AVAILABLE)
    await until(lambda: not master_ha.server.connections)  # type: ignore[union-attr]
    assert await put(master, master_ha) is PutStatus.SLAVE_NOT_AVAILABLE


async def test_concurrent_sync_sends_share_acknowledgements(open_node: Opener) -> None:
    master, master_ha = await open_node("m")
    await open_node("s", master_ha)
    await until(lambda: master_ha.in_sync(master.max_phy_offset))
    statuses = await asyncio.gather(*(put(master, master_ha) for _ in range(200)))
    assert set(statuses) == {PutStatus.PUT_OK}


async def test_a_slave_ahead_of_its_master_truncates_to_it(open_node: Opener) -> None:
    """An old master rejoining as a slave after its slave took over: the messages the new master
    never received are cut, and the new master's later writes replace them."""
    old, old_ha = await open_node("old", sync=False)
    for _ in range(10):
        await put(old, old_ha)
    new, new_ha = await open_node("new", sync=False)
    five = old.commitlog.read_replica(0, 5 * (old.max_phy_offset // 10))  # the new master had 5 of 10
    assert five is not None
    new.append_replicated(0, bytes(five))
    await old_ha.close()
    await old.close()
    old_again = MessageStore(store_settings(old.settings.root_dir), ("127.0.0.1", 10911))
    old_again.open()
    await old_again.start()
    slave_ha = HAService(old_again, SETTINGS, is_master=False, sync_master=False, listen_host="127.0.0.1",
                         advertised_host="127.0.0.1", ha_port=0, sync_timeout_ms=300,
                         master_ha_addr=lambda: new_ha.ha_server_addr)
    await slave_ha.start()
    try:
        await until(lambda: old_again.max_phy_offset == new.max_phy_offset)
        assert old_again.get_max_offset("T", 0) == 5
        await put(new, new_ha, body=b"new history")
        await until(lambda: old_again.get_max_offset("T", 0) == 6)
        assert bytes(old_again.commitlog.read_replica(0, 1 << 20) or b"") == bytes(
            new.commitlog.read_replica(0, 1 << 20) or b"")
    finally:
        await slave_ha.close()
        await old_again.close()


async def test_a_slave_stopped_as_a_frame_arrives_does_stop(tmp_path: Path) -> None:
    """The stop (a cancel) and the master's heartbeat land in the same loop turn. With
    ``asyncio.wait_for`` around the read, Python 3.11 returned the frame and dropped the cancel,
    so the client kept reading and the broker never finished its shutdown."""
    store = MessageStore(store_settings(tmp_path / "s"), ("127.0.0.1", 10911))
    store.open()
    await store.start()
    try:
        client = HAClient(store, SETTINGS, lambda: None, EpochHistory(tmp_path / "s" / "config"))
        reader = asyncio.StreamReader()
        receiving = asyncio.create_task(client._receive(reader, None))  # type: ignore[arg-type]
        await asyncio.sleep(0.01)  # blocked on the next frame header
        reader.feed_data(protocol.encode_transfer_header(0, 0))  # a heartbeat arrives ...
        receiving.cancel()  # ... as the broker stops
        done, _ = await asyncio.wait({receiving}, timeout=1)
        assert done and receiving.cancelled()
    finally:
        await store.close()


async def test_the_ha_server_does_not_log_the_ready_phrase(open_node: Opener,
                                                           caplog: pytest.LogCaptureFixture) -> None:
    """Launchers (rocketq local, the test harness) take the first line with " listening on " as
    the broker's ready line and its address; the HA port's start-up line came first and was
    taken for the broker's address."""
    caplog.set_level("INFO")
    await open_node("m")
    assert "HA server" in caplog.text
    assert " listening on " not in caplog.text
