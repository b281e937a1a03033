"""The store's second filter stage: a predicate over each candidate's stored record (SQL92)."""

from __future__ import annotations

from store_helpers import StoreFactory, request

from rocketq.broker.filters import ConsumerFilters
from rocketq.protocol import subscription


async def test_the_store_applies_the_record_filter(make_store: StoreFactory) -> None:
    store = await make_store()
    for i in range(10):
        await store.put(request(body=b"x", properties={"n": str(i)}))
    filters = ConsumerFilters(enabled=True)
    record_filter = filters.pull_filter("g", subscription.build("T", "n >= 7", "SQL92"), in_request=True)
    got = store.get_messages("T", 0, 0, 32, record_filter=record_filter)
    assert got.queue_offsets == [7, 8, 9]
    # an uncompilable expression in the pull itself: RocketMQ's null filter data passes all
    everything = filters.pull_filter("g", subscription.build("T", "n >", "SQL92"), in_request=True)
    assert store.get_messages("T", 0, 0, 32, record_filter=everything).message_count == 10
