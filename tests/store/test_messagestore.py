"""MessageStore: puts and pulls, pull statuses, batches, queries, listeners, refusals, lifecycle."""

from __future__ import annotations

import time

import pytest
from store_helpers import StoreFactory, put_many, request

from rocketq.protocol import codes, javahash, messageproperties, msgid, namerules, storedrecords
from rocketq.protocol.messagetypes import MessageSysFlag
from rocketq.store.messagestore import GetStatus, MessageStore, PutRequest, PutStatus, StoreError, StoreState
from rocketq.store.settings import StoreSettings


async def test_put_get_round_trip(make_store: StoreFactory) -> None:
    store = await make_store()
    result = await store.put(request(body=b"hello", properties={"TAGS": "a", "KEYS": "k1 k2", "UNIQ_KEY": "U1"},
                                     born_host=("10.1.2.3", 5555), born_timestamp=42, flag=9, reconsume_times=1))
    assert result.ok and result.message_count == 1
    assert (result.wrote_offset, result.queue_offset) == (0, 0)
    assert result.offset_msg_id == msgid.create_offset_msg_id(("127.0.0.1", 10911), 0)
    got = store.get_messages("T", 0, 0, 32)
    assert got.status is GetStatus.FOUND
    assert (got.next_begin_offset, got.min_offset, got.max_offset, got.message_count) == (1, 0, 1, 1)
    assert got.queue_offsets == [0] and got.tag_codes == [javahash.tag_hash("a")]
    rec = storedrecords.decode_stored_record(got.buffers[0], check_crc=True)
    assert (rec.topic, rec.queue_id, rec.body, rec.flag, rec.reconsume_times) == ("T", 0, b"hello", 9, 1)
    assert (rec.born_host, rec.born_timestamp, rec.store_host) == (("10.1.2.3", 5555), 42, ("127.0.0.1", 10911))
    assert rec.store_timestamp == result.store_timestamp
    assert abs(rec.store_timestamp - time.time() * 1000) < 60_000
    assert rec.msg_id == "U1" and rec.offset_msg_id == result.offset_msg_id
    assert got.buffer_total_size == result.wrote_bytes == rec.store_size
    assert store.look_message_by_offset(0) == got.buffers[0]


async def test_encoded_properties_are_accepted(make_store: StoreFactory) -> None:
    store = await make_store()
    props = messageproperties.encode_properties({"TAGS": "x", "UNIQ_KEY": "U9", "KEYS": "kk"})
    result = await store.put(request(properties=props))
    assert result.ok
    got = store.get_messages("T", 0, 0, 1, tag_filter=lambda code: code == javahash.tag_hash("x"))
    assert got.status is GetStatus.FOUND
    assert len(store.query_message("T", "U9", 10, 0, 1 << 62).buffers) == 1
    assert len(store.query_message("T", "kk", 10, 0, 1 << 62).buffers) == 1


async def test_pull_status_table(make_store: StoreFactory) -> None:
    store = await make_store()
    unknown = store.get_messages("T", 5, 3, 32)
    assert (unknown.status, unknown.next_begin_offset, unknown.max_offset) == (GetStatus.NO_MESSAGE_IN_QUEUE, 0, 0)
    await put_many(store, 10)
    over_one = store.get_messages("T", 0, 10, 32)
    assert (over_one.status, over_one.next_begin_offset) == (GetStatus.OFFSET_OVERFLOW_ONE, 10)
    over_badly = store.get_messages("T", 0, 99, 32)
    assert (over_badly.status, over_badly.next_begin_offset) == (GetStatus.OFFSET_OVERFLOW_BADLY, 10)
    middle = store.get_messages("T", 0, 4, 3)
    assert (middle.status, middle.next_begin_offset, middle.queue_offsets) == (GetStatus.FOUND, 7, [4, 5, 6])
    assert [storedrecords.decode_stored_record(b).queue_offset for b in middle.buffers] == [4, 5, 6]
    store.get_messages("T", 0, 0, 0)  # max_nums 0 still returns one message, as RocketMQ does
    assert store.get_messages("T", 0, 0, 0).message_count == 1


async def test_offset_too_small_after_cleanup(make_store: StoreFactory) -> None:
    store = await make_store()
    await put_many(store, 5)
    store.queues.by_topic["T"][0].min_offset = 2  # as after retention removed the head
    result = store.get_messages("T", 0, 0, 32)
    assert (result.status, result.next_begin_offset, result.min_offset) == (GetStatus.OFFSET_TOO_SMALL, 2, 2)


async def test_tag_filter_and_limits(make_store: StoreFactory) -> None:
    store = await make_store()
    for i in range(20):
        await store.put(request(body=b"x" * 100, properties={"TAGS": "even" if i % 2 == 0 else "odd"}))
    even = javahash.tag_hash("even")
    got = store.get_messages("T", 0, 0, 4, tag_filter=lambda code: code == even)
    assert got.queue_offsets == [0, 2, 4, 6] and got.next_begin_offset == 7
    none = store.get_messages("T", 0, 0, 4, tag_filter=lambda code: False)
    assert (none.status, none.next_begin_offset, none.message_count) == (GetStatus.NO_MATCHED_MESSAGE, 20, 0)
    size = got.buffer_total_size // 4
    capped = store.get_messages("T", 0, 0, 32, max_bytes=size * 3 + 1)
    assert capped.message_count == 3 and capped.next_begin_offset == 3
    one = store.get_messages("T", 0, 0, 32, max_bytes=1)
    assert one.message_count == 1  # always at least one


async def test_batch_put(make_store: StoreFactory) -> None:
    store = await make_store()
    await store.put(request(queue_id=1))
    batch = [request(queue_id=1, body=f"m{i}".encode(), properties={"UNIQ_KEY": f"B{i}"}) for i in range(5)]
    result = await store.put_batch(batch)
    assert result.ok and result.queue_offsets == (1, 2, 3, 4, 5)
    assert len(set(result.offset_msg_ids)) == 5 and len(result.wrote_offsets) == 5
    assert list(result.wrote_offsets) == sorted(result.wrote_offsets)
    got = store.get_messages("T", 1, 1, 32)
    stamps = {storedrecords.decode_stored_record(b).store_timestamp for b in got.buffers}
    assert len(stamps) == 1 and got.message_count == 5
    empty = await store.put_batch([])
    assert empty.status is PutStatus.MESSAGE_ILLEGAL
    bad = await store.put_batch([request(queue_id=1), request(queue_id=1, properties={"P": "v" * 40000})])
    assert bad.status is PutStatus.PROPERTIES_SIZE_EXCEEDED and not bad.appended
    assert store.get_max_offset("T", 1) == 6  # all or nothing


async def test_arrival_listeners(make_store: StoreFactory) -> None:
    store = await make_store()
    seen: list[tuple[str, int, int]] = []
    store.add_arrival_listener(lambda t, q, o: seen.append((t, q, o)))
    store.add_arrival_listener(lambda t, q, o: 1 / 0)  # a failing listener does not break puts
    await store.put(request(queue_id=2))
    await store.put_batch([request(queue_id=2), request(queue_id=3), request(queue_id=2)])
    assert seen == [("T", 2, 1), ("T", 2, 3), ("T", 3, 1)]


async def test_a_group_of_single_puts_notifies_each_queue_once(make_store: StoreFactory) -> None:
    """The broker's read of single sends: one notice per queue, in the order the group first
    touched it, with the queue's next offset after the whole group; a lone send's put too."""
    store = await make_store()
    seen: list[tuple[str, int, int]] = []
    store.add_arrival_listener(lambda t, q, o: 1 / 0)  # a failing listener stops neither puts nor notices
    store.add_arrival_listener(lambda t, q, o: seen.append((t, q, o)))
    results = store.put_group_now([[request(queue_id=q)] for q in (3, 1, 3, 3, 1)])
    assert [r.status for r in results] == [PutStatus.PUT_OK] * 5
    assert seen == [("T", 3, 3), ("T", 1, 2)]
    store.put_one_now(request(queue_id=1))
    assert seen[2:] == [("T", 1, 3)]


async def test_a_listener_is_called_only_while_something_waits(make_store: StoreFactory) -> None:
    """``waiting``: an empty collection spares the listener its call; a round in which no
    listener is called calls no round listener either; removal finds a gated listener."""
    store = await make_store()
    held: dict[int, str] = {}
    seen: list[tuple[str, int, int]] = []
    rounds: list[int] = []

    def gated(t: str, q: int, o: int) -> None:
        seen.append((t, q, o))

    store.add_arrival_listener(gated, held)
    store.add_arrival_round_listener(lambda: rounds.append(len(seen)))
    store.put_one_now(request(queue_id=1))
    store.put_group_now([[request(queue_id=q)] for q in (1, 2)])
    await store.put(request(queue_id=2))
    assert seen == [] and rounds == []
    held[0] = "a pull"
    store.put_one_now(request(queue_id=1))
    store.put_group_now([[request(queue_id=q)] for q in (1, 2)])
    await store.put(request(queue_id=2))
    assert seen == [("T", 1, 3), ("T", 1, 4), ("T", 2, 3), ("T", 2, 4)] and rounds == [1, 3, 4]
    store.remove_arrival_listener(gated)
    store.put_one_now(request(queue_id=1))
    assert len(seen) == 4 and rounds == [1, 3, 4]


async def test_a_listener_of_one_topic_hears_only_that_topic(make_store: StoreFactory) -> None:
    store = await make_store()
    seen: list[tuple[str, int, int]] = []
    rounds: list[int] = []
    store.add_arrival_listener(lambda t, q, o: seen.append((t, q, o)), topic="U")
    store.add_arrival_round_listener(lambda: rounds.append(len(seen)))
    store.put_one_now(request(queue_id=1))
    store.put_group_now([[request(queue_id=1)], [request(topic="U", queue_id=0)]])
    store.put_one_now(request(topic="U", queue_id=0))
    await store.put(request(queue_id=1))
    assert seen == [("U", 0, 1), ("U", 0, 2)] and rounds == [1, 2]


async def test_a_listener_of_some_queues_hears_only_those(make_store: StoreFactory) -> None:
    store = await make_store()
    queues: dict[tuple[str, int], str] = {("T", 2): "a pull"}
    seen: list[tuple[str, int, int]] = []
    store.add_arrival_listener(lambda t, q, o: seen.append((t, q, o)), queues=queues)
    store.put_one_now(request(queue_id=1))
    store.put_one_now(request(queue_id=2))
    store.put_group_now([[request(queue_id=q)] for q in (1, 2, 3)])
    await store.put(request(queue_id=3))
    queues[("T", 3)] = "another"
    await store.put(request(queue_id=3))
    assert seen == [("T", 2, 1), ("T", 2, 2), ("T", 3, 3)]


async def test_query_offsets_and_times(make_store: StoreFactory) -> None:
    store = await make_store()
    before = int(time.time() * 1000) - 1
    results = await put_many(store, 6, keys="shared")
    assert [len(store.query_message("T", "shared", n, 0, 1 << 62).buffers) for n in (2, 100)] == [2, 6]
    query = store.query_message("T", "shared", 100, 0, 1 << 62)
    assert query.index_last_update_phyoffset == results[-1].wrote_offset
    assert store.query_message("Other", "shared", 10, 0, 1 << 62).buffers == []
    assert store.query_message("T", "shared", 10, 0, 1).buffers == []  # outside the time range
    assert store.get_min_offset("T", 0) == 0 and store.get_max_offset("T", 0) == 6
    assert store.get_max_offset("T", 9) == 0
    assert store.get_store_time("T", 0, 0) == results[0].store_timestamp
    assert store.get_store_time("T", 0, 6) == -1
    assert store.get_earliest_store_time("T", 0) == results[0].store_timestamp
    assert store.get_offset_by_time("T", 0, before) == 0
    assert store.get_offset_by_time("T", 0, results[3].store_timestamp) <= 3
    assert store.get_offset_by_time("T", 0, results[-1].store_timestamp + 1) == 6
    assert store.get_offset_by_time("T", 9, 0) == 0
    assert store.topic_queue_table() == {"T": {0: 6}}
    assert store.look_message_by_offset(1) is None
    assert store.look_message_by_offset(10 ** 9) is None


async def test_put_validation(make_store: StoreFactory) -> None:
    store = await make_store()
    for bad in (request(topic="../escape"), request(topic="a/b"), request(queue_id=-1),
                request(body=b"x" * (70 * 1024))):
        result = await store.put(bad)
        assert result.status is PutStatus.MESSAGE_ILLEGAL and result.error and not result.appended
    props = await store.put(request(properties={"K": "v" * 33000}))
    assert props.status is PutStatus.PROPERTIES_SIZE_EXCEEDED
    host = await store.put(request(born_host=("not-an-ip", 1)))
    assert host.status is PutStatus.MESSAGE_ILLEGAL
    assert store.stats.put_failures == 6
    assert (await store.put(request(topic="%RETRY%group_1"))).ok


async def test_topic_names_follow_protocol_names(make_store: StoreFactory) -> None:
    """The store uses protocol.names' topic rule: its characters (no trailing newline, which a
    `$` regex lets through) and its 127-character limit, which is also MAGIC_V1's."""
    store = await make_store()
    for bad in ("T\n", "", " ", "x" * (namerules.MAX_TOPIC_LENGTH + 1), "%RETRY%" + "g" * namerules.MAX_GROUP_LENGTH):
        result = await store.put(request(topic=bad))
        assert result.status is PutStatus.MESSAGE_ILLEGAL and "topic" in result.error, bad
    assert not (store.settings.consumequeue_dir / "T\n").exists()
    assert (await store.put(request(topic="x" * namerules.MAX_TOPIC_LENGTH))).ok


async def test_transactions_and_schedule_topic(make_store: StoreFactory) -> None:
    store = await make_store()
    prepared = await store.put(request(sys_flag=MessageSysFlag.TRANSACTION_PREPARED_TYPE,
                                       properties={"UNIQ_KEY": "TX1"}))
    assert prepared.ok and prepared.queue_offset == 0 and store.get_max_offset("T", 0) == 0
    assert len(store.query_message("T", "TX1", 10, 0, 1 << 62).buffers) == 1  # indexed, not queued
    committed = await store.put(request(sys_flag=MessageSysFlag.TRANSACTION_COMMIT_TYPE))
    assert committed.queue_offset == 0 and store.get_max_offset("T", 0) == 1
    delayed = await store.put(request(topic=codes.SCHEDULE_TOPIC, queue_id=2, properties={"DELAY": "3"}))
    unit = store.queues.by_topic[codes.SCHEDULE_TOPIC][2].unit(0)
    assert unit is not None and unit[2] == delayed.store_timestamp + 10_000


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_page_cache_busy(make_store: StoreFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = FakeClock()
    store = await make_store(monotonic=clock)
    real_append = store.commitlog.append

    def slow_append(*args: object) -> int:
        clock.now += 2.0  # page faults stall the copy into the map for two seconds
        return real_append(*args)

    monkeypatch.setattr(store.commitlog, "append", slow_append)
    assert (await store.put(request())).ok
    assert store.is_os_page_cache_busy()
    refused = await store.put(request())
    assert refused.status is PutStatus.OS_PAGECACHE_BUSY
    clock.now += 2.5
    assert not store.is_os_page_cache_busy()
    monkeypatch.setattr(store.commitlog, "append", real_append)
    assert (await store.put(request())).ok
    assert store.runtime_info()["pageCacheLockTimeMills"] == "2000"


async def test_delete_topics(make_store: StoreFactory) -> None:
    store = await make_store()
    await put_many(store, 3)
    await store.put(request(topic="Keep"))
    assert store.delete_topics(["T", "Nope"]) == 1
    assert store.get_max_offset("T", 0) == 0
    assert not (store.settings.consumequeue_dir / "T").exists()
    assert store.topic_queue_table() == {"Keep": {0: 1}}
    assert (await store.put(request())).queue_offset == 0


async def test_lifecycle(settings: StoreSettings) -> None:
    store = MessageStore(settings, ("127.0.0.1", 10911))
    assert (await store.put(request())).status is PutStatus.SERVICE_NOT_AVAILABLE
    await store.close()  # never opened: nothing to do
    store = MessageStore(settings, ("127.0.0.1", 10911))
    store.open()
    assert settings.abort_path.exists() and settings.config_dir.is_dir()
    other = MessageStore(settings, ("127.0.0.1", 10911))
    with pytest.raises(StoreError, match="in use"):
        other.open()
    with pytest.raises(StoreError):
        store.open()
    assert (await store.put(request())).status is PutStatus.SERVICE_NOT_AVAILABLE  # not started
    await store.start()
    assert (await store.put(request())).ok
    await store.close()
    await store.close()
    assert store.state is StoreState.CLOSED and not settings.abort_path.exists()
    assert (await store.put(request())).status is PutStatus.SERVICE_NOT_AVAILABLE
    reopened = MessageStore(settings, ("127.0.0.1", 10911))
    reopened.open()
    assert reopened.recovery_report is not None and not reopened.recovery_report.abnormal
    assert reopened.get_max_offset("T", 0) == 1
    await reopened.close()


async def test_runtime_info_and_stats(make_store: StoreFactory) -> None:
    store = await make_store()
    await put_many(store, 3)
    store.get_messages("T", 0, 0, 32)
    store.get_messages("T", 0, 3, 32)
    info = store.runtime_info()
    assert info["putMessageTimesTotal"] == "3"
    assert info["putMessageDistributeTime"].startswith("[<=0ms]:")
    assert info["getMessageTimesTotalFound"] == "1" and info["getMessageTimesTotalMiss"] == "1"
    assert info["commitLogMaxOffset"] == str(store.max_phy_offset)
    assert store.min_phy_offset == 0


async def test_put_request_is_a_value() -> None:
    req = PutRequest("T", 0, b"x")
    with pytest.raises(AttributeError):
        req.topic = "U"  # type: ignore[misc]
