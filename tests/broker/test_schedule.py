"""Delay levels: the put-time rewrite into SCHEDULE_TOPIC_XXXX, the per-level delivery, and
delayOffset.json (format, clamping on load, written only once re-puts are durable)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.broker import schedule
from rocketq.protocol import javahash, messageerrors, messageproperties, storedrecords
from rocketq.protocol.codes import SCHEDULE_TOPIC, TRANS_HALF_TOPIC, RequestCode, ResponseCode
from rocketq.protocol.frames import RemotingCommand
from rocketq.protocol.messagetypes import MessageSysFlag
from rocketq.store.messagestore import MessageStore, PutRequest, PutResult, PutStatus
from rocketq.store.settings import StoreSettings

LEVELS = "1s 2s 3s"
StoreFactory = Callable[[], Awaitable[MessageStore]]


@pytest.fixture
async def make_store(tmp_path: Path) -> AsyncIterator[StoreFactory]:
    made: list[MessageStore] = []

    async def factory() -> MessageStore:
        settings = StoreSettings(store_path_root_dir=str(tmp_path / "store"), mapped_file_size_commit_log=1 << 20,
                                 mapped_file_size_consume_queue=20 * 100, message_delay_level=LEVELS)
        store = MessageStore(settings, ("127.0.0.1", 10911))
        made.append(store)
        store.open()
        await store.start()
        return store

    yield factory
    for store in made:
        await store.close()


def service(store: MessageStore, put: schedule.Put | None = None) -> schedule.ScheduleService:
    return schedule.ScheduleService(store, store.settings.delay_levels_ms,
                                    store.settings.config_dir / "delayOffset.json", put or store.put)


async def put_delayed(store: MessageStore, level: int, body: bytes, topic: str = "Real", queue_id: int = 1) -> None:
    props = {messageproperties.DELAY: str(level), messageproperties.UNIQ_KEY: body.decode(),
             messageproperties.TAGS: "tg"}
    where = schedule.to_schedule(topic, queue_id, props, 0, len(store.settings.delay_levels_ms))
    assert where is not None
    result = await store.put(PutRequest(where[0], where[1], body, 0, where[2], born_timestamp=7))
    assert result.ok


def bodies(store: MessageStore, topic: str = "Real", queue_id: int = 1) -> list[bytes]:
    got = store.get_messages(topic, queue_id, 0, 100)
    return [storedrecords.decode_stored_record(b).body for b in got.buffers]


def test_to_schedule_rewrites_and_clamps() -> None:
    props = {messageproperties.DELAY: "99", messageproperties.TAGS: "a"}
    topic, queue_id, rewritten = schedule.to_schedule("T", 5, props, 0, 18) or ("", -1, {})
    assert (topic, queue_id) == (SCHEDULE_TOPIC, 17)
    assert rewritten == {messageproperties.DELAY: "18", messageproperties.TAGS: "a",
                         messageproperties.REAL_TOPIC: "T", messageproperties.REAL_QID: "5"}
    assert props[messageproperties.DELAY] == "99"  # the caller's map is left alone
    assert schedule.to_schedule("T", 0, {messageproperties.DELAY: "2"}, 0, 18)[:2] == (SCHEDULE_TOPIC, 1)  # type: ignore[index]


@pytest.mark.parametrize("delay", [None, "", "0", "-3"])
def test_no_positive_delay_is_not_scheduled(delay: str | None) -> None:
    props = {} if delay is None else {messageproperties.DELAY: delay}
    assert schedule.to_schedule("T", 0, props, 0, 18) is None


def test_prepared_transaction_messages_are_not_scheduled() -> None:
    props = {messageproperties.DELAY: "3"}
    assert schedule.to_schedule("T", 0, props, MessageSysFlag.TRANSACTION_PREPARED_TYPE, 18) is None
    assert schedule.to_schedule("T", 0, props, MessageSysFlag.TRANSACTION_COMMIT_TYPE, 18) is not None


def test_a_non_integer_delay_is_illegal() -> None:
    with pytest.raises(messageerrors.MessageIllegalError, match="not a delay level"):
        schedule.to_schedule("T", 0, {messageproperties.DELAY: "soon"}, 0, 18)


def test_delay_offsets_read_what_apache_rocketmq_writes() -> None:
    java = b'{\n\t"offsetTable":{1:1,2:1,3:11\n\t}\n}'
    assert schedule.parse_delay_offsets(java) == {1: 1, 2: 1, 3: 11}


@given(st.dictionaries(st.integers(1, 200), st.integers(0, 2**62)))
def test_delay_offsets_round_trip(offsets: dict[int, int]) -> None:
    raw = orjson.dumps(schedule.render_delay_offsets(offsets), option=orjson.OPT_NON_STR_KEYS)
    assert schedule.parse_delay_offsets(raw) == offsets


_JSONISH = st.recursive(st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.text(max_size=5),
                        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner,
                                                                                   max_size=3), max_leaves=8)


@given(st.binary(max_size=64) | _JSONISH.map(lambda v: orjson.dumps({"offsetTable": v})))
def test_delay_offsets_parser_fails_only_with_value_error(raw: bytes) -> None:
    try:
        offsets = schedule.parse_delay_offsets(raw)
    except ValueError:
        return
    assert all(isinstance(k, int) and isinstance(v, int) for k, v in offsets.items())


async def test_due_messages_move_to_their_real_queue_in_order(make_store: StoreFactory) -> None:
    store = await make_store()
    svc = service(store)
    sent = time.time()
    for i in range(3):
        await put_delayed(store, 1, f"m{i}".encode())
    await put_delayed(store, 2, b"later")
    wait = await svc.deliver_due(1)
    assert bodies(store) == [] and 0 < wait <= schedule.IDLE_RECHECK_S  # none is due yet
    while time.time() - sent < 1.05:
        time.sleep(0.05)
    assert await svc.deliver_due(1) == 0.0
    assert bodies(store) == [b"m0", b"m1", b"m2"]
    assert svc.offsets[1] == 3 and svc.delivered == 3
    assert await svc.deliver_due(2) > 0  # level 2 waits its own 2 s
    rec = storedrecords.decode_stored_record(store.get_messages("Real", 1, 0, 1).buffers[0])
    assert rec.topic == "Real" and rec.born_timestamp == 7
    assert rec.msg_id == "m0"  # UNIQ_KEY kept: the client's message id is unchanged
    assert rec.properties[messageproperties.REAL_TOPIC] == "Real" and rec.properties[messageproperties.DELAY] == "1"
    assert store.get_messages("Real", 1, 0, 1).tag_codes == [javahash.tag_hash("tg")]


async def test_a_failed_re_put_is_retried_at_the_same_offset(make_store: StoreFactory) -> None:
    store = await make_store()
    refuse = [True]

    async def flaky_put(request: PutRequest) -> PutResult:
        if refuse[0]:
            return PutResult(PutStatus.OS_PAGECACHE_BUSY)
        return await store.put(request)

    svc = service(store, flaky_put)
    await put_delayed(store, 1, b"x")
    svc._levels = (0, 0, 0)  # due at once
    assert await svc.deliver_due(1) == schedule.RETRY_AFTER_FAILURE_S
    assert svc.offsets.get(1, 0) == 0 and bodies(store) == []
    refuse[0] = False
    await svc.deliver_due(1)
    assert bodies(store) == [b"x"] and svc.offsets[1] == 1


async def test_transaction_half_and_unroutable_messages_are_skipped(make_store: StoreFactory) -> None:
    store = await make_store()
    svc = service(store)
    svc._levels = (0, 0, 0)
    await put_delayed(store, 1, b"half", topic=TRANS_HALF_TOPIC)
    await store.put(PutRequest(SCHEDULE_TOPIC, 0, b"nowhere", properties={messageproperties.DELAY: "1"}))
    await put_delayed(store, 1, b"ok")
    await svc.deliver_due(1)
    assert bodies(store) == [b"ok"] and bodies(store, TRANS_HALF_TOPIC) == [] and svc.offsets[1] == 3


async def test_offsets_persist_and_are_clamped_on_load(make_store: StoreFactory) -> None:
    store = await make_store()
    svc = service(store)
    svc._levels = (0, 0, 0)
    for i in range(2):
        await put_delayed(store, 3, f"m{i}".encode())
    await svc.deliver_due(3)
    await svc.persist()
    path = store.settings.config_dir / "delayOffset.json"
    assert schedule.parse_delay_offsets(path.read_bytes()) == {3: 2}
    again = service(store)
    again.load()
    assert again.offsets == {3: 2}
    path.write_bytes(b'{"offsetTable":{1:40,2:-5,3:1}}')  # beyond the queues: clamped into [min, max]
    clamped = service(store)
    clamped.load()
    assert clamped.offsets == {1: 0, 2: 0, 3: 1}


async def test_persist_flushes_the_commitlog_before_writing_offsets(make_store: StoreFactory,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    store = await make_store()
    svc = service(store)
    order: list[str] = []
    real_flush = store.flush

    async def flush() -> None:
        order.append("flush")
        await real_flush()

    monkeypatch.setattr(store, "flush", flush)
    monkeypatch.setattr(schedule.configfiles, "write_json_atomic", lambda *a: order.append("write"))
    await svc.persist()
    assert order == ["flush", "write"]


async def test_delivery_is_not_counted_as_pulls(make_store: StoreFactory) -> None:
    store = await make_store()
    svc = service(store)
    await svc.deliver_due(1)  # idle
    await put_delayed(store, 1, b"x")
    assert await svc.deliver_due(1) > 0  # not due
    svc._levels = (0, 0, 0)
    await svc.deliver_due(1)
    assert svc.delivered == 1
    stats = store.stats
    assert (stats.get_message_transferred, stats.get_message_times_found, stats.get_message_times_miss) == (0, 0, 0)


async def test_an_offset_outside_the_queue_is_moved_back_into_it(make_store: StoreFactory) -> None:
    store = await make_store()
    svc = service(store)
    svc._levels = (0, 0, 0)
    await put_delayed(store, 1, b"x")
    svc.offsets[1] = 7
    assert await svc.deliver_due(1) == schedule.IDLE_RECHECK_S and svc.offsets[1] == 1


async def test_close_persists_only_what_a_started_service_delivered(make_store: StoreFactory) -> None:
    store = await make_store()
    path = store.settings.config_dir / "delayOffset.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b'{"offsetTable":{1:0}}')  # e.g. a slave's copy of its master's offsets
    idle = service(store)
    await idle.close()
    assert path.read_bytes() == b'{"offsetTable":{1:0}}'
    await put_delayed(store, 1, b"x")
    running = service(store)
    running.start()
    running._levels = (0, 0, 0)
    await running.deliver_due(1)
    await running.close()
    await running.close()
    assert schedule.load_delay_offsets(path) == {1: 1}


async def test_unchanged_offsets_are_not_written_again(make_store: StoreFactory,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    store = await make_store()
    svc = service(store)
    writes: list[object] = []
    monkeypatch.setattr(schedule.configfiles, "write_json_atomic", lambda *a: writes.append(a))
    await svc.persist()
    await svc.persist()
    svc.offsets[2] = 5
    await svc.persist()
    assert len(writes) == 2


async def test_get_all_delay_offset_answers_the_offset_table(make_store: StoreFactory) -> None:
    store = await make_store()
    svc = service(store)
    svc.offsets.update({3: 11, 1: 1})
    request = RemotingCommand(code=RequestCode.GET_ALL_DELAY_OFFSET)
    answer = await svc.handlers()[RequestCode.GET_ALL_DELAY_OFFSET](None, request)  # type: ignore[arg-type]
    assert answer.code == ResponseCode.SUCCESS
    assert schedule.parse_delay_offsets(answer.body) == {1: 1, 3: 11}
