"""Per-topic and per-group metric families keep at most ``metricsMaxTopicSeries`` series: the
largest values, and the rest summed under ``_other_``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from rocketq.broker.metrics import OTHER, BrokerCollector, capped
from rocketq.broker.server import BrokerServer
from rocketq.broker.settings import BrokerBehaviour, BrokerIdentity
from rocketq.protocol.sharedbodies import TopicConfig
from rocketq.store.settings import StoreSettings

CAP = 5


def test_capped_keeps_the_largest_and_sums_the_rest() -> None:
    rows = [((f"t{i}",), (float(i), float(100 - i))) for i in range(10)]
    out = capped(rows, 3, (sum, max))
    assert [labels for labels, _ in out] == [("t9",), ("t8",), ("t7",), (OTHER,)]
    assert out[-1][1] == [sum(range(7)), 100.0]
    assert capped(rows[:3], 3) == rows[:3]  # under the cap: untouched


@pytest.fixture
async def broker(tmp_path: Path) -> AsyncIterator[BrokerServer]:
    identity = BrokerIdentity(listen_port=0, listen_host="127.0.0.1", broker_ip1="127.0.0.1", metrics_port=-1,
                              namesrv_addr="")
    store = StoreSettings(store_path_root_dir=str(tmp_path / "store"), mapped_file_size_commit_log=1 << 20,
                          mapped_file_size_consume_queue=20 * 1000, max_hash_slot_num=64, max_index_num=400)
    server = BrokerServer(identity, BrokerBehaviour(metrics_max_topic_series=CAP), store)
    await server.start()
    try:
        yield server
    finally:
        await server.close()


async def test_group_and_topic_families_are_capped(broker: BrokerServer) -> None:
    for i in range(20):
        broker.topics.upsert(TopicConfig(f"Capped{i}", 1, 1))
        broker.offsets.commit(f"g{i}", f"Capped{i}", 0, 0)
        broker.topics.upsert(TopicConfig(f"%DLQ%g{i}", 1, 1))
    broker.traffic.rates.put_tps.update({f"Capped{i}": float(i) for i in range(20)})
    families = {f.name: f for f in BrokerCollector(broker).collect()}
    for name in ("rocketmq_group_diff", "rocketmq_group_dlqdiff", "rocketmq_producer_tps"):
        samples = families[name].samples
        assert len(samples) == CAP + 1, name
        assert any(OTHER in s.labels.values() for s in samples), name
    tps = {s.labels["topic"]: s.value for s in families["rocketmq_producer_tps"].samples}
    assert tps[OTHER] == sum(range(20 - CAP)) and "Capped19" in tps
