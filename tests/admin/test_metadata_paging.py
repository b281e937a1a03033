"""The admin client reads a broker's topic and group tables page by page (RocketMQ 5's split
metadata) and gets exactly what one whole-table answer holds."""

from __future__ import annotations

import asyncio

import pytest
from admin_processes import Cluster

from rocketq.admin import adminbodies, client
from rocketq.admin.adminbodies import GroupConfig
from rocketq.admin.client import AdminClient
from rocketq.protocol.codes import RequestCode
from rocketq.protocol.sharedbodies import TopicConfig

PAGE = 7


async def _paged_equals_whole(cluster: Cluster) -> None:
    broker = cluster.brokers["broker-a"].addr
    async with AdminClient(cluster.namesrv_addr) as admin:
        await asyncio.gather(*(admin.create_topic(broker, TopicConfig(f"PagedTopic{i}", 2, 2)) for i in range(40)),
                             *(admin.create_group(broker, GroupConfig(f"paged-group-{i}")) for i in range(20)))
        whole_topics = adminbodies.parse_topic_config_table(
            (await admin.call(broker, RequestCode.GET_ALL_TOPIC_CONFIG)).body)
        whole_groups = adminbodies.parse_group_table(
            (await admin.call(broker, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)).body)
        calls = 0
        plain_call = admin.call

        async def counting_call(*args: object, **kwargs: object) -> object:
            nonlocal calls
            calls += 1
            return await plain_call(*args, **kwargs)  # type: ignore[arg-type]

        admin.call = counting_call  # type: ignore[method-assign]
        assert await admin.all_topic_config(broker) == whole_topics
        assert calls == -(-len(whole_topics) // PAGE)
        assert await admin.all_groups(broker) == whole_groups


def test_paged_tables_equal_the_whole_answer(cluster: Cluster, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(client, "METADATA_PAGE_SIZE", PAGE)
    asyncio.run(_paged_equals_whole(cluster))
