"""A slave's metadata sync (``rocketq.ha.metasync``) against a real master process.

* At size: a master with a few thousand topics (written into its topics.json before it starts,
  so the test does not spend its time creating them) and a slave: the slave converges, a round
  in which nothing changed asks for one topic and one group instead of the tables, and a topic
  created on the master reaches the slave.
* Under ACL: master and slave with ``aclEnable=true``; the slave signs its calls with
  ``innerClientAuthenticationCredentials``. A topic created on the master appears on the slave,
  and a consumer offset committed on the master follows.

The slave reports each round's requests and answer bytes in its runtime info; a round comes
every 10 s (first after 3 s), sooner when a replicated message names a topic the slave lacks.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final, TypeVar

import orjson
import pytest

from rocketq.admin.adminbodies import TopicConfig
from rocketq.admin.client import AdminClient
from rocketq.admin.errors import AdminError
from rocketq.client import Message, Producer
from rocketq.local import processes
from rocketq.local.processes import ServerProcess
from rocketq.protocol.codes import RequestCode
from rocketq.protocol.headers import UpdateConsumerOffsetRequestHeader
from rocketq.protocol.sharedbodies import DataVersion

TOPICS: Final = 3000
WAIT_S: Final = 60.0
"""Bounds every wait (two sync periods and more, on a loaded machine); nothing is timed."""
ADMIN: Final = ("brokerAdmin", "brokerAdminSecret1")
ACL_FILE: Final = f"""
globalWhiteRemoteAddresses:
accounts:
- accessKey: {ADMIN[0]}
  secretKey: {ADMIN[1]}
  admin: true
"""
INNER_CREDENTIALS: Final = orjson.dumps({"accessKey": ADMIN[0], "secretKey": ADMIN[1]}).decode()
SETTINGS: Final = ("registerNameServerPeriod=1000", "haSendHeartbeatInterval=1000")

T = TypeVar("T")


@dataclass
class Pair:
    namesrv: ServerProcess
    master: ServerProcess
    slave: ServerProcess


def seed_topics(store: Path, count: int) -> None:
    """A topics.json of ``count`` topics for a master that has not started yet."""
    table = {f"SyncTopic{i:05d}": TopicConfig(f"SyncTopic{i:05d}", 8, 8).to_json() for i in range(count)}
    config = store / "config"
    config.mkdir(parents=True)
    (config / "topics.json").write_bytes(orjson.dumps({"topicConfigTable": table,
                                                       "dataVersion": DataVersion(1_700_000_000_000, 1).to_json()}))


@contextlib.contextmanager
def running_pair(workdir: Path, *settings: str, seed: int = 0) -> Iterator[Pair]:
    """A name server, a master (``seed`` topics in its table) and its slave, stopped at the end."""
    started: list[ServerProcess] = []
    try:
        started.append(processes.start_namesrv(workdir))
        if seed:
            seed_topics(workdir / "master", seed)
        for name, role in (("master", ()), ("slave", ("brokerId=1", "brokerRole=SLAVE"))):
            started.append(processes.start_broker(workdir, started[0].addr, "sync-a", *SETTINGS, *settings, *role,
                                                  log_name=name))
        yield Pair(*started)
    finally:
        for proc in reversed(started):
            proc.stop()


async def eventually(check: Callable[[], Awaitable[T | None]], what: str) -> T:
    deadline = time.monotonic() + WAIT_S
    while True:
        found = await check()
        if found is not None:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"never happened: {what}")
        await asyncio.sleep(0.2)


async def after_round(admin: AdminClient, slave: str, done: int) -> dict[str, str]:
    """The slave's runtime info once it has finished more than ``done`` sync rounds."""
    async def info() -> dict[str, str] | None:
        got = await admin.runtime_info(slave)
        return got if int(got.get("metadataSyncRounds", "0")) > done else None
    return await eventually(info, f"sync round {done + 1} on {slave}")


async def has_topic(admin: AdminClient, broker: str, topic: str) -> bool | None:
    try:
        await admin.topic_stats(broker, topic)
    except AdminError:
        return None
    return True


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    with running_pair(tmp_path_factory.mktemp("slave-sync"), seed=TOPICS) as started:
        yield started


async def test_the_slave_copies_a_large_table_in_pages_and_skips_it_while_unchanged(pair: Pair) -> None:
    master, slave = pair.master.addr, pair.slave.addr
    async with AdminClient(pair.namesrv.addr, timeout=30) as admin:
        first = await after_round(admin, slave, 0)
        assert await admin.all_topic_config(slave) == await admin.all_topic_config(master)
        whole_table = int(first["metadataSyncLastTopicBytes"])
        assert whole_table > TOPICS * 50  # the first round copied every topic
        assert int(first["metadataSyncLastRequests"]) >= 2 + 3  # >1 page of topics, offsets, delay, groups

        unchanged = await after_round(admin, slave, int(first["metadataSyncRounds"]))
        assert unchanged["metadataSyncLastRequests"] == "4"  # one topic, offsets, delay offsets, one group
        assert int(unchanged["metadataSyncLastTopicBytes"]) < 1000 < whole_table

        await admin.create_topic(master, TopicConfig("SyncNewTopic", 4, 4))
        async with Producer("sync-producer", namesrv_addr=pair.namesrv.addr) as producer:
            await eventually(lambda: _send(producer, "SyncNewTopic"), "a send to the new topic")
        await eventually(lambda: has_topic(admin, slave, "SyncNewTopic"), "the new topic on the slave")
        assert await admin.all_topic_config(slave) == await admin.all_topic_config(master)


async def _send(producer: Producer, topic: str) -> bool | None:
    try:
        await producer.send(Message(topic, b"wakes the slave's sync"))
    except Exception:  # the route is not at the name server yet
        return None
    return True


@pytest.fixture(scope="module")
def acl_pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    workdir = tmp_path_factory.mktemp("slave-sync-acl")
    acl_file = workdir / "plain_acl.yml"
    acl_file.write_text(ACL_FILE)
    with running_pair(workdir, "aclEnable=true", f"rocketmq.acl.plain.file={acl_file}", "autoCreateTopicEnable=false",
                      f"innerClientAuthenticationCredentials={INNER_CREDENTIALS}") as started:
        yield started


async def test_under_acl_the_slave_signs_its_sync_and_follows_topics_and_offsets(acl_pair: Pair) -> None:
    master, slave = acl_pair.master.addr, acl_pair.slave.addr
    async with AdminClient(acl_pair.namesrv.addr, timeout=30, access_key=ADMIN[0], secret_key=ADMIN[1]) as admin:
        await admin.create_topic(master, TopicConfig("AclSyncTopic", 2, 2))
        async with Producer("acl-sync-producer", namesrv_addr=acl_pair.namesrv.addr,
                            access_key=ADMIN[0], secret_key=ADMIN[1]) as producer:
            await eventually(lambda: _send(producer, "AclSyncTopic"), "a signed send to the new topic")
        await eventually(lambda: has_topic(admin, slave, "AclSyncTopic"), "the new topic on the slave")

        await admin.call(master, RequestCode.UPDATE_CONSUMER_OFFSET, UpdateConsumerOffsetRequestHeader(
            consumer_group="acl-sync-group", topic="AclSyncTopic", queue_id=0, commit_offset=1))

        async def offset_on_slave() -> dict[int, int] | None:
            return (await admin.all_consumer_offsets(slave)).get(("AclSyncTopic", "acl-sync-group"))

        assert await eventually(offset_on_slave, "the committed offset on the slave") == {0: 1}
        assert "ACL refused" not in acl_pair.master.output()  # nothing the slave sent was unsigned
