"""A slave refuses topic and group changes (RocketMQ's ``validateSlave``): its tables are its
master's copy, so a change made on it would be undone by the next metadata sync."""

from __future__ import annotations

import pytest
from clusterprocs import Processes
from haprocs import start_pair

from rocketq.admin.adminbodies import GroupConfig, TopicConfig
from rocketq.admin.client import AdminClient
from rocketq.admin.errors import AdminError
from rocketq.broker.adminops import SLAVE_REFUSAL


async def test_topic_and_group_changes_on_a_slave_are_refused(procs: Processes) -> None:
    ns = procs.namesrv()
    master, slave = start_pair(procs, ns.address)
    async with AdminClient(ns.address) as admin:
        changes = [admin.delete_group(slave.address, "any-cg", clean_offset=True),
                   admin.create_group(slave.address, GroupConfig("any-cg")),
                   admin.create_topic(slave.address, TopicConfig("AnyTopic", 1, 1)),
                   admin.delete_topic_in_broker(slave.address, "AnyTopic")]
        for change in changes:
            with pytest.raises(AdminError) as refused:
                await change
            assert (refused.value.name, refused.value.remark) == ("SYSTEM_ERROR", SLAVE_REFUSAL)
        await admin.delete_group(master.address, "any-cg")  # the master takes it
        assert "AnyTopic" not in await admin.all_topic_config(slave.address)
