"""RemotingBrokerAdmin against a real ``rocketq namesrv`` and ``rocketq broker`` on 127.0.0.1.

The processes come from tests/admin's launcher (free ports, temporary store, stopped by
handle). Every BrokerAdmin call the operator makes is exercised once against the engine.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from admin_processes import Process, free_port, start_broker, start_namesrv, wait_registered
from rocketq_operator import brokeradmin, remoteadmin
from rocketq_operator.brokeradmin import BrokerAdminError, BrokerRefusedError, GroupConfig, TopicConfig
from rocketq_operator.remoteadmin import RemotingBrokerAdmin
from rocketq_operator.runtime import ConfigError, OperatorConfig

from rocketq.admin import adminbodies
from rocketq.admin.client import AdminClient
from rocketq.admin.errors import AdminError, UnavailableError
from rocketq.local import processes as local_processes
from rocketq.protocol.codes import ResponseCode

pytestmark = pytest.mark.slow

BROKER_NAME = "rq-broker-0"
CLUSTER = "DefaultCluster"


@pytest.fixture(scope="module")
def processes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Process, Process]]:
    workdir: Path = tmp_path_factory.mktemp("remoteadmin")
    namesrv = start_namesrv(workdir)
    try:
        broker = start_broker(workdir, namesrv, BROKER_NAME)
        try:
            yield namesrv, broker
        finally:
            broker.stop()
    finally:
        namesrv.stop()


@pytest.fixture
async def admin() -> AsyncIterator[RemotingBrokerAdmin]:
    client = RemotingBrokerAdmin(timeout=5.0)
    try:
        yield client
    finally:
        await client.close()
        await client.close()


async def test_registrations_come_from_the_name_server(processes: tuple[Process, Process],
                                                       admin: RemotingBrokerAdmin) -> None:
    namesrv, broker = processes
    assert await admin.cluster_brokers(namesrv.addr, CLUSTER) == {BROKER_NAME: {0: broker.addr}}
    assert await admin.cluster_brokers(namesrv.addr, "NoSuchCluster") == {}


async def test_topics_round_trip(processes: tuple[Process, Process], admin: RemotingBrokerAdmin) -> None:
    namesrv, broker = processes
    topic = TopicConfig("rq-orders", read_queue_nums=4, write_queue_nums=4, perm=6, order=False)
    await admin.create_or_update_topic(broker.addr, topic)
    assert (await admin.list_topics(broker.addr))["rq-orders"] == topic
    updated = TopicConfig("rq-orders", read_queue_nums=4, write_queue_nums=2, perm=4, order=False)
    await admin.create_or_update_topic(broker.addr, updated)
    assert (await admin.list_topics(broker.addr))["rq-orders"] == updated
    await admin.delete_topic(broker.addr, "rq-orders")
    await admin.delete_topic_in_namesrv(namesrv.addr, "rq-orders")
    assert "rq-orders" not in await admin.list_topics(broker.addr)


async def test_groups_round_trip_and_lag(processes: tuple[Process, Process], admin: RemotingBrokerAdmin) -> None:
    _namesrv, broker = processes
    group = GroupConfig("rq-billing", consume_enable=True, consume_broadcast_enable=False,
                        retry_max_times=3, retry_queue_nums=1)
    await admin.create_or_update_group(broker.addr, group)
    assert (await admin.list_groups(broker.addr))["rq-billing"] == group
    await admin.create_or_update_topic(broker.addr, TopicConfig("rq-lag", 2, 2))
    assert await admin.consumer_lag(broker.addr, "rq-billing") == 0
    await admin.delete_group(broker.addr, "rq-billing")
    assert "rq-billing" not in await admin.list_groups(broker.addr)


async def test_message_types_round_trip_keep_other_attributes_and_mixed_is_refused(
        processes: tuple[Process, Process], admin: RemotingBrokerAdmin) -> None:
    _namesrv, broker = processes
    engine = AdminClient(broker.addr, timeout=5.0)
    try:
        # queue.type can only be set at creation: the operator's writes must not drop it.
        await engine.create_topic(broker.addr, adminbodies.TopicConfig("rq-typed", 2, 2), "+queue.type=BatchCQ")
        assert (await admin.list_topics(broker.addr))["rq-typed"].message_type == "NORMAL", "absent is NORMAL"
        fifo = TopicConfig("rq-typed", 2, 2, message_type="FIFO")
        await admin.create_or_update_topic(broker.addr, fifo)
        assert (await admin.list_topics(broker.addr))["rq-typed"] == fifo
        delay = TopicConfig("rq-typed", 2, 4, message_type="DELAY")
        await admin.create_or_update_topic(broker.addr, delay)
        assert (await admin.list_topics(broker.addr))["rq-typed"] == delay
        assert (await engine.all_topic_config(broker.addr))["rq-typed"].attribute_map == {
            "message.type": "DELAY", "queue.type": "BatchCQ"}
        # The broker runs without enableMixedMessageType: a "no", not a "try again".
        with pytest.raises(BrokerRefusedError, match="MIXED message type is not supported"):
            await admin.create_or_update_topic(broker.addr, TopicConfig("rq-typed", 2, 4, message_type="MIXED"))
        assert (await admin.list_topics(broker.addr))["rq-typed"] == delay
    finally:
        await engine.close()
    nobody = f"127.0.0.1:{free_port()}"
    with pytest.raises(BrokerAdminError) as lost:
        await admin.create_or_update_topic(nobody, fifo)
    assert not isinstance(lost.value, BrokerRefusedError), "an unreachable broker is tried again"


def test_a_busy_broker_is_asked_again_and_any_other_error_answer_is_a_refusal() -> None:
    busy = remoteadmin._write_failure(AdminError(ResponseCode.SYSTEM_BUSY, "too many requests"), "busy")
    assert type(busy) is BrokerAdminError
    refused = remoteadmin._write_failure(AdminError(ResponseCode.SYSTEM_ERROR, "no"), "refused")
    assert isinstance(refused, BrokerRefusedError) and str(refused) == "refused"
    assert type(remoteadmin._write_failure(UnavailableError("nobody"), "gone")) is BrokerAdminError


async def test_group_orderly_flag_round_trips(processes: tuple[Process, Process], admin: RemotingBrokerAdmin) -> None:
    _namesrv, broker = processes
    for flag in (True, False):
        group = GroupConfig("rq-fifo", retry_max_times=5, consume_message_orderly=flag)
        await admin.create_or_update_group(broker.addr, group)
        assert (await admin.list_groups(broker.addr))["rq-fifo"] == group


async def test_a_group_write_keeps_the_fields_the_operator_does_not_manage(
        processes: tuple[Process, Process], admin: RemotingBrokerAdmin) -> None:
    _namesrv, broker = processes
    async with AdminClient(broker.addr) as client:  # as `rocketq admin updateSubGroup` would set them
        await client.create_group(broker.addr, adminbodies.GroupConfig(
            "rq-tuned", consume_from_min_enable=False, broker_id=1, which_broker_when_consume_slowly=0,
            notify_consumer_ids_changed_enable=False))
        await admin.create_or_update_group(broker.addr, GroupConfig("rq-tuned", retry_max_times=3))
        assert await admin.get_group(broker.addr, "rq-tuned") == GroupConfig("rq-tuned", retry_max_times=3)
        kept = await client.group_config(broker.addr, "rq-tuned")
    assert kept is not None and kept.retry_max_times == 3
    assert (kept.consume_from_min_enable, kept.broker_id, kept.which_broker_when_consume_slowly,
            kept.notify_consumer_ids_changed_enable) == (False, 1, 0, False)
    assert await admin.get_group(broker.addr, "rq-none") is None


async def test_permission_and_runtime(processes: tuple[Process, Process], admin: RemotingBrokerAdmin) -> None:
    _namesrv, broker = processes
    assert await admin.get_broker_permission(broker.addr) == brokeradmin.PERM_READ_WRITE
    await admin.set_broker_permission(broker.addr, brokeradmin.PERM_READ_ONLY)
    try:
        assert await admin.get_broker_permission(broker.addr) == brokeradmin.PERM_READ_ONLY
    finally:
        await admin.set_broker_permission(broker.addr, brokeradmin.PERM_READ_WRITE)
    runtime = await admin.broker_runtime(broker.addr)
    assert runtime.commitlog_max_offset >= 0
    # A master without slaves: replication is reported, with nobody connected and so not in sync.
    assert (runtime.ha_connections, runtime.ha_behind_bytes, runtime.ha_in_sync) == (0, 0, False)
    assert runtime.epoch == 0, "a store never promoted is at the implicit epoch 0"


async def test_role_changes_are_runtime_calls_and_a_peer_without_them_says_so(
        processes: tuple[Process, Process], admin: RemotingBrokerAdmin) -> None:
    namesrv, broker = processes
    # The same role and id again changes nothing (the operator repeats it until answered).
    await admin.change_role(broker.addr, "ASYNC_MASTER", 0)
    assert (await admin.broker_runtime(broker.addr)).epoch == 0
    with pytest.raises(BrokerAdminError, match="cannot become SLAVE") as refused:
        await admin.change_role(broker.addr, "SLAVE", 0)  # a slave needs an id of 1 or more
    assert not isinstance(refused.value, brokeradmin.RoleChangeUnsupported)
    # A peer that does not know NOTIFY_BROKER_ROLE_CHANGED (here a name server) cannot be promoted.
    with pytest.raises(brokeradmin.RoleChangeUnsupported):
        await admin.change_role(namesrv.addr, "ASYNC_MASTER", 0)



async def test_a_promotion_numbers_its_epoch_past_the_floor_it_is_given(
        processes: tuple[Process, Process], admin: RemotingBrokerAdmin, tmp_path: Path) -> None:
    """What the operator asks after a promotion failed midway: the new master's epoch must be
    above any a failed candidate may have taken, so the name servers fence that one."""
    namesrv, _broker = processes
    slave = local_processes.start_broker(tmp_path, namesrv.addr, "rq-broker-floor", "brokerRole=SLAVE",
                                         "brokerId=1", "registerNameServerPeriod=1000")
    try:
        assert (await admin.broker_runtime(slave.addr)).epoch == 0
        await admin.change_role(slave.addr, "ASYNC_MASTER", 0, epoch_above=5)
        assert (await admin.broker_runtime(slave.addr)).epoch == 6
        await wait_registered(namesrv.addr, "rq-broker-floor")
    finally:
        slave.stop()


async def test_failures_are_broker_admin_errors(processes: tuple[Process, Process],
                                                admin: RemotingBrokerAdmin) -> None:
    _namesrv, broker = processes
    nobody = f"127.0.0.1:{free_port()}"
    with pytest.raises(BrokerAdminError, match="cannot list topics"):
        await admin.list_topics(nobody)
    with pytest.raises(BrokerAdminError, match="bad address"):
        await admin.list_topics("no-port")
    with pytest.raises(BrokerAdminError, match="cannot create topic"):
        await admin.create_or_update_topic(broker.addr, TopicConfig("has space"))
    await admin.close()
    with pytest.raises(BrokerAdminError, match="closed"):
        await admin.list_topics(broker.addr)


OPERATOR_ACL = """accounts:
  - accessKey: rocketq-operator
    secretKey: operator-secret-1
    admin: true
    defaultTopicPerm: PUB|SUB
    defaultGroupPerm: PUB|SUB
"""


async def test_with_its_account_the_operator_administers_a_broker_with_acl(tmp_path: Path) -> None:
    """A cluster with ``spec.acl`` refuses unsigned calls; the operator signs with its own account
    (ROCKETQ_OPERATOR_ACCESS_KEY / _SECRET_KEY), so topics, groups and runtime info still work."""
    acl_file = tmp_path / "plain_acl.yml"
    acl_file.write_text(OPERATOR_ACL)
    namesrv = start_namesrv(tmp_path)
    try:
        broker = await asyncio.to_thread(start_broker, tmp_path, namesrv, "acl-broker", "aclEnable=true",
                                         f"rocketmq.acl.plain.file={acl_file}")  # it runs a loop of its own
        config = OperatorConfig.from_env({"ROCKETQ_OPERATOR_ACCESS_KEY": "rocketq-operator",
                                          "ROCKETQ_OPERATOR_SECRET_KEY": "operator-secret-1"})
        signed = RemotingBrokerAdmin.from_config(config)
        unsigned = RemotingBrokerAdmin(timeout=5.0)
        try:
            with pytest.raises(BrokerAdminError):
                await unsigned.list_topics(broker.addr)
            await signed.create_or_update_topic(broker.addr, TopicConfig("AclTopic", 4, 4, 6))
            assert "AclTopic" in await signed.list_topics(broker.addr)
            assert (await signed.broker_runtime(broker.addr)).commitlog_max_offset >= 0
        finally:
            await signed.close()
            await unsigned.close()
            broker.stop()
    finally:
        namesrv.stop()


def test_the_operators_account_needs_both_keys() -> None:
    with pytest.raises(ConfigError, match="go together"):
        OperatorConfig.from_env({"ROCKETQ_OPERATOR_ACCESS_KEY": "only-the-access-key"})
    assert "operator-secret" not in repr(OperatorConfig(access_key="a", secret_key="operator-secret"))
