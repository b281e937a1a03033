"""BatchPutRequest: one sender's batch to one queue stores exactly what the PutRequests would."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from store_helpers import StoreFactory, small_settings

from rocketq.protocol import javahash, messageproperties, messagetypes, storedrecords
from rocketq.protocol.messagetypes import MessageSysFlag
from rocketq.store.messagestore import MessageStore, PutRequest, PutStatus
from rocketq.store.results import BatchMessage, BatchPutRequest

SENDER = dict(topic="T", queue_id=2, sys_flag=MessageSysFlag.TRANSACTION_COMMIT_TYPE, born_timestamp=1234,
              born_host=("10.0.0.9", 4321), reconsume_times=1)


def _as_requests(batch: BatchPutRequest) -> list[PutRequest]:
    return [PutRequest(batch.topic, batch.queue_id, body, flag, props, batch.sys_flag, batch.born_timestamp,
                       batch.born_host, batch.reconsume_times, 0, tag, (uniq, keys))
            for body, flag, props, tag, uniq, keys in batch.messages]


def _messages(specs: list[tuple[bytes, int, dict[str, str]]]) -> list[BatchMessage]:
    out: list[BatchMessage] = []
    for body, flag, props in specs:
        out.append((body, flag, messageproperties.encode_properties(props), javahash.tag_hash(props.get("TAGS")),
                    props.get("UNIQ_KEY"), props.get("KEYS")))
    return out


def _stored(store: MessageStore) -> list[messagetypes.MessageExt]:
    got = store.get_messages("T", 2, 0, 1000)
    return [storedrecords.decode_stored_record(b) for b in got.buffers]


def _without_store_time(record: messagetypes.MessageExt) -> tuple[object, ...]:
    return (record.body, record.flag, record.properties, record.queue_offset, record.commit_log_offset,
            record.sys_flag, record.born_timestamp, record.born_host, record.reconsume_times, record.store_size)


specs = st.lists(st.tuples(st.binary(min_size=1, max_size=300), st.integers(-(1 << 31), (1 << 31) - 1),
                           st.fixed_dictionaries({}, optional={"TAGS": st.sampled_from(["a", "b"]),
                                                               "KEYS": st.sampled_from(["k1", "k1 k2"]),
                                                               "UNIQ_KEY": st.text("0123456789ABCDEF", min_size=1,
                                                                                   max_size=8)})),
                 min_size=1, max_size=8)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(specs)
async def test_batch_and_put_requests_store_the_same_records(tmp_path: Path,
                                                             spec: list[tuple[bytes, int, dict[str, str]]]) -> None:
    batch = BatchPutRequest(**SENDER, messages=_messages(spec))  # type: ignore[arg-type]
    stores = []
    for name in ("batch", "requests"):
        root = tmp_path / f"{name}-{len(list(tmp_path.iterdir()))}"
        store = MessageStore(small_settings(root), ("127.0.0.1", 10911))
        store.open()
        await store.start()
        stores.append(store)
    try:
        first = await stores[0].put_batch(batch)
        second = await stores[1].put_batch(_as_requests(batch))
        assert first.status is second.status is PutStatus.PUT_OK
        assert (first.wrote_offsets, first.wrote_sizes, first.queue_offsets) == \
               (second.wrote_offsets, second.wrote_sizes, second.queue_offsets)
        assert [_without_store_time(r) for r in _stored(stores[0])] == \
               [_without_store_time(r) for r in _stored(stores[1])]
        for key in {k for _b, _f, p in spec for k in [p.get("UNIQ_KEY"), *(p.get("KEYS") or "").split()] if k}:
            assert len(stores[0].query_message("T", key, 64, 0, 1 << 62).buffers) == \
                   len(stores[1].query_message("T", key, 64, 0, 1 << 62).buffers)
    finally:
        for store in stores:
            await store.close()


@pytest.mark.parametrize("bad, status", [
    ((b"x", 0, {"P": "v" * 40000}), PutStatus.PROPERTIES_SIZE_EXCEEDED),
    ((b"x", 1 << 31, {}), PutStatus.MESSAGE_ILLEGAL),
    ((b"x" * 70_000, 0, {}), PutStatus.MESSAGE_ILLEGAL),  # larger than a 64 KiB commitlog segment
])
async def test_a_bad_message_refuses_the_whole_batch(make_store: StoreFactory,
                                                     bad: tuple[bytes, int, dict[str, str]], status: PutStatus) -> None:
    store = await make_store()
    batch = BatchPutRequest(**SENDER, messages=_messages([(b"good", 0, {}), bad]))  # type: ignore[arg-type]
    result = await store.put_batch(batch)
    assert result.status is status and not result.appended
    assert (await store.put_batch(_as_requests(batch))).status is status
    assert store.get_max_offset("T", 2) == 0


async def test_an_empty_batch_is_illegal(make_store: StoreFactory) -> None:
    store = await make_store()
    result = await store.put_batch(BatchPutRequest(**SENDER, messages=[]))  # type: ignore[arg-type]
    assert result.status is PutStatus.MESSAGE_ILLEGAL
