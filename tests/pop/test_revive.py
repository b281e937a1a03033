"""The revive log and the revive service over a real store: checkpoint/ack bodies, acks settling
checkpoints, due checkpoints copied to the retry topic with reconsumeTimes + 1, the settled
offset, and a restart (a new service over the same store) rebuilding what was pending."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.broker.offsets import ConsumerOffsetManager
from rocketq.broker.revive import FIRST_POP_TIME, ReviveService
from rocketq.broker.revivelog import REVIVE_GROUP, AckRecord, CheckPoint, ReviveRecordError, ReviveWriter
from rocketq.protocol import storedrecords
from rocketq.store.messagestore import MessageStore, PutRequest
from rocketq.store.settings import StoreSettings

REVIVE = "rmq_sys_REVIVE_LOG_DefaultCluster"
RETRY = "%RETRY%cg_T"


def test_checkpoint_body_uses_rocketmqs_field_names() -> None:
    ck = CheckPoint(10, 1000, 500, 2, "T", "cg", "broker-a", [0, 3])
    ck.ack(13)
    raw = orjson.loads(ck.to_json())
    assert raw == {"so": 10, "pt": 1000, "it": 500, "bm": 2, "n": 2, "q": 2, "t": "T", "c": "cg", "ro": 0,
                   "d": [0, 3], "bn": "broker-a", "rp": 0}
    again = CheckPoint.from_json(ck.to_json())
    assert again.acked == {1} and again.unacked_offsets() == [10]
    ack = AckRecord(13, 10, "cg", "T", 2, 1000, "broker-a")
    assert orjson.loads(ack.to_json()) == {"ao": 13, "so": 10, "c": "cg", "t": "T", "q": 2, "pt": 1000,
                                           "bn": "broker-a"}
    assert AckRecord.from_json(ack.to_json()) == ack and ack.key == ck.key


@given(st.binary(max_size=200) | st.builds(lambda d: json.dumps(d).encode(), st.dictionaries(
    st.sampled_from(["so", "pt", "it", "q", "t", "c", "d", "ao", "bn", "bm"]),
    st.one_of(st.integers(), st.text(max_size=5), st.lists(st.integers(), max_size=3), st.none()))))
def test_any_body_decodes_or_is_refused(body: bytes) -> None:
    for kind in (CheckPoint, AckRecord):
        try:
            kind.from_json(body)
        except ReviveRecordError:
            continue


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[MessageStore]:
    settings = StoreSettings(store_path_root_dir=str(tmp_path / "store"), mapped_file_size_commit_log=1 << 20,
                             mapped_file_size_consume_queue=2000)
    store = MessageStore(settings, ("127.0.0.1", 10911))
    store.open()
    await store.start()
    try:
        yield store
    finally:
        await store.close()


def service(store: MessageStore, offsets: ConsumerOffsetManager, clock: Clock) -> ReviveService:
    async def ensure(_topic: str) -> bool:
        return True

    async def persist() -> None:
        offsets.persist()

    revive = ReviveService(store, offsets, revive_topic=REVIVE, queue_nums=2, interval_s=1, retry_v2=False,
                           ensure_retry_topic=ensure, persist_offsets=persist, clock=clock)
    revive.load()
    return revive


async def test_unacked_offsets_are_revived_once_due_and_the_offset_settles(store: MessageStore,
                                                                           tmp_path: Path) -> None:
    for i in range(3):
        await store.put(PutRequest("T", 0, f"m{i}".encode(), properties={"TAGS": "x"}, reconsume_times=0))
    offsets = ConsumerOffsetManager(tmp_path / "offsets.json")
    clock = Clock()
    writer = ReviveWriter(store, REVIVE, 2, ("127.0.0.1", 10911))
    pop_time = int(clock.now * 1000)
    assert (await writer.checkpoint(CheckPoint(0, pop_time, 2000, 0, "T", "cg", "b", [0, 1, 2]), 1)).ok
    assert (await writer.ack(AckRecord(1, 0, "cg", "T", 0, pop_time, "b"), 1)).ok
    revive = service(store, offsets, clock)
    await revive.revive_pass()
    assert revive.pending_count == 1 and store.get_max_offset(RETRY, 0) == 0  # not due yet
    assert offsets.query(REVIVE_GROUP, REVIVE, 1) <= 0  # never settled past the pending checkpoint

    restarted = service(store, ConsumerOffsetManager(tmp_path / "offsets.json"), clock)  # a crash: rebuilt
    assert restarted.pending_count == 1
    clock.now += 2.0
    await restarted.revive_pass()
    assert restarted.pending_count == 0 and restarted.revived == 2
    got = store.get_messages(RETRY, 0, 0, 10)
    copies = [storedrecords.decode_stored_record(b) for b in got.buffers]
    assert [(m.body, m.reconsume_times) for m in copies] == [(b"m0", 1), (b"m2", 1)]
    assert all(m.properties[FIRST_POP_TIME] == str(pop_time) and m.tags == "x" for m in copies)
    assert restarted._offsets.query(REVIVE_GROUP, REVIVE, 1) == 2  # past both records: nothing re-read


async def test_a_fully_acked_checkpoint_is_settled_without_reviving(store: MessageStore, tmp_path: Path) -> None:
    await store.put(PutRequest("T", 0, b"m"))
    offsets = ConsumerOffsetManager(tmp_path / "offsets.json")
    clock = Clock()
    writer = ReviveWriter(store, REVIVE, 2, ("127.0.0.1", 10911))
    await writer.checkpoint(CheckPoint(0, 1, 1, 0, "T", "cg", "b", [0]), 0)
    await writer.ack(AckRecord(0, 0, "cg", "T", 0, 1, "b"), 0)
    revive = service(store, offsets, clock)
    await revive.revive_pass()
    assert revive.revived == 0 and revive.pending_count == 0 and store.get_max_offset(RETRY, 0) == 0
    assert offsets.query(REVIVE_GROUP, REVIVE, 0) == 2
