"""Registration with the name servers: how clients learn that this broker and its topics exist.

The broker registers with *every* name server (they never talk to each other) at start and
every ``registerNameServerPeriod`` with its whole topic table, and unregisters at shutdown. A
registration carries the topic table narrowed by ``brokerPermission``, so a broker made
read-only drains: producers stop choosing it while consumers keep reading it.

A topic change does not re-send the whole table: as RocketMQ's ``registerIncrementBrokerData``,
it sends a REGISTER_BROKER whose body holds only the changed topics and the table's new
DataVersion. A name server rebuilds queue data only for the topics in the body (its stored
DataVersion moved), so the cost on both sides is the change. Changes made while one
registration is in flight share the next (``rocketq.groupcommit``), and whoever awaits
``register_changes`` is answered once the name servers have its topics. A deleted topic is not
registered (RocketMQ neither: the admin tool deletes it from every name server); nor does a name
server that missed an increment (restarted, unreachable) lose it for long: the next periodic
registration carries the whole table under the same DataVersion, which that name server has not
seen, so it rebuilds everything. Increments say so (``rocketqTopicIncrement``): a rocketq name
server that heard only increments of a broker reads its next full table whatever its
DataVersion. No increment goes out before the first full registration, which carries them.

A table of more than ``COMPRESS_ABOVE_TOPICS`` topics is registered compressed (the
``compressed`` header and RocketMQ's deflated layout, ``RegisterBrokerBody.encode(true)``), and
encoded in a worker thread. Registrations never overlap: an increment built while a full
registration is in flight goes after it, so a name server never sees an older table after a
newer increment.

A master's registrations carry its HA epoch (``rocketqMasterEpoch``, rocketq.protocol.masterepoch);
an answer that carries one back says a newer-epoch master holds the group, and is passed to
``on_newer_master`` (the broker fences itself: rocketq.ha.fencing).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Final

from rocketq import tasks
from rocketq.groupcommit import GroupCommit
from rocketq.ha.fencing import NewerMaster
from rocketq.namesrv import registerbodies
from rocketq.namesrv.registerbodies import RegisterBrokerBody
from rocketq.protocol import addresses, masterepoch
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frames import RemotingCommand
from rocketq.protocol.headers import (
    RegisterBrokerRequestHeader,
    RegisterBrokerResponseHeader,
    UnregisterBrokerRequestHeader,
)
from rocketq.remoting.client import RemotingClient
from rocketq.remoting.errors import RemotingError
from rocketq.tasks import OwnedTask

log = logging.getLogger(__name__)

REGISTER_TIMEOUT_S = 6.0
CHANGE_DEBOUNCE_S = 0.05
"""Full registrations asked for in a burst (``request_now``) go as one."""
COMPRESS_ABOVE_TOPICS: Final = 1000
"""Tables bigger than this register compressed: 8-queue topics deflate about 10 to 1, and a name
server reads a compressed body's DataVersion before its topics."""

TopicBody = Callable[[Collection[str] | None], RegisterBrokerBody]
"""The register body of every topic (None), or of only the named ones, at the current DataVersion."""
MasterEpoch = Callable[[], int | None]
"""This broker's current HA epoch while it is a master; None as a slave."""


@dataclass(frozen=True, slots=True)
class BrokerRegistration:
    cluster: str
    broker_name: str
    broker_id: int
    broker_addr: str
    ha_server_addr: str


def parse_namesrv_addrs(text: str) -> list[str]:
    return addresses.split_list(text)


class Registrar:
    """Owns the periodic registration task."""

    def __init__(
        self,
        client: RemotingClient,
        namesrv_addrs: list[str],
        identity: BrokerRegistration,
        topic_body: TopicBody,
        period_ms: int,
        *,
        master_epoch: MasterEpoch = lambda: None,
        on_newer_master: Callable[[NewerMaster], None] = lambda _told: None,
    ) -> None:
        self._client = client
        self._addrs = namesrv_addrs
        self._identity = identity
        self._topic_body = topic_body
        self._period = max(0.1, period_ms / 1000)
        self._master_epoch = master_epoch
        self._on_newer_master = on_newer_master
        self._task = OwnedTask("broker-registration", self._run)
        self._wake = asyncio.Event()
        self._lock = asyncio.Lock()
        """One registration at a time, full or increment, in the order they were built."""
        self._changed: set[str] = set()
        self._all_changed = False
        self._increments = GroupCommit("registering changed topics", self._register_changed)
        self.last_body_size = 0
        """Bytes of the last full registration's body as sent (the benchmark reports it)."""
        self.master_addr: str | None = None
        """A slave's master (remoting address), from the name servers' answers; None while none is live."""
        self.ha_server_addr: str | None = None
        """A slave's master HA address (haServerAddr in the answers)."""
        self.registrations = 0
        self._full_begun = False
        """Set when the first full registration builds its body: changes before it are in it."""

    def reidentify(self, broker_id: int, ha_server_addr: str) -> None:
        """A role change: the next registrations carry the new brokerId (the name servers replace
        this address's old record). A new master forgets the master it had as a slave."""
        self._identity = dataclasses.replace(self._identity, broker_id=broker_id, ha_server_addr=ha_server_addr)
        self.master_addr = None
        self.ha_server_addr = None

    def start(self) -> None:
        if self._addrs:
            self._task.start()

    def request_now(self) -> None:
        self._wake.set()

    def topics_changed(self, names: Collection[str] | None) -> None:
        """Register these topics soon (None: the whole table, e.g. brokerPermission changed)."""
        if names is None:
            self._all_changed = True
        else:
            self._changed.update(names)
        if self._addrs:
            self._increments.commit_soon()

    async def register_changes(self) -> None:
        """Return once every topic change noted before the call is registered (or failed to be,
        which is logged; the periodic registration repairs it)."""
        if self._addrs and (self._changed or self._all_changed or not self._increments.idle):
            await self._increments.commit()

    async def _register_changed(self) -> None:
        names, self._changed = self._changed, set()
        everything, self._all_changed = self._all_changed, False
        if not self._full_begun:
            # No name server has this broker's table yet; the first full registration carries
            # these changes. An increment first would leave a name server holding only the
            # changed topics at the table's current DataVersion, and then skip the full table.
            return
        if everything:
            await self.register_all()
        elif names:
            body = self._topic_body(names)
            if body.topic_configs:  # only deletions: nothing to register (see the module docstring)
                await self._send(body, compress=False, increment=True)

    async def _run(self) -> None:
        """Register every period, or soon after ``request_now``; the first one is ``start``'s caller's."""
        while True:
            if await tasks.wait_event(self._wake, self._period):  # else the period passed: register anyway
                await asyncio.sleep(CHANGE_DEBOUNCE_S)
            self._wake.clear()
            await self.register_all()

    async def register_all(self) -> None:
        """Register the whole topic table with every name server."""
        self._full_begun = True
        body = self._topic_body(None)
        size = await self._send(body, compress=len(body.topic_configs) > COMPRESS_ABOVE_TOPICS)
        self.last_body_size = size

    async def _send(self, body: RegisterBrokerBody, *, compress: bool, increment: bool = False) -> int:
        """Encode ``body`` (off the loop when big) and register it with every name server; the
        bytes sent. The body is an immutable snapshot, so the table may change meanwhile."""
        async with self._lock:
            if len(body.topic_configs) > COMPRESS_ABOVE_TOPICS:
                data = await asyncio.to_thread(registerbodies.encode_register_body, body, compress=compress)
            else:
                data = registerbodies.encode_register_body(body, compress=compress)
            ext = RegisterBrokerRequestHeader(
                broker_name=self._identity.broker_name,
                broker_addr=self._identity.broker_addr,
                cluster_name=self._identity.cluster,
                ha_server_addr=self._identity.ha_server_addr,
                broker_id=self._identity.broker_id,
                compressed=compress,
                body_crc32=registerbodies.java_crc32(data),
                topic_increment=increment or None,
            ).to_ext()
            masterepoch.write(ext, self._master_epoch())
            results = await asyncio.gather(*(self._register_one(a, ext, data) for a in self._addrs))
            if any(results):
                self.registrations += 1
            return len(data)

    async def _register_one(self, addr: str, ext: dict[str, str], body: bytes) -> bool:
        try:
            response = await self._client.invoke(
                addr,
                RemotingCommand(code=RequestCode.REGISTER_BROKER, ext_fields=dict(ext), body=body),
                REGISTER_TIMEOUT_S,
            )
        except RemotingError as exc:
            log.warning("register to name server %s failed: %s", addr, exc)
            return False
        if response.code != ResponseCode.SUCCESS:
            log.warning("name server %s refused registration: %s %s", addr, response.code, response.remark)
            return False
        answer = RegisterBrokerResponseHeader.from_ext(response.ext_fields)
        # as RocketMQ: every answer sets masterAddr (None when the master is not live); a
        # missing haServerAddr keeps the last one, so a restarted master is found again
        self.master_addr = answer.master_addr or None
        if answer.ha_server_addr:
            self.ha_server_addr = answer.ha_server_addr
        newer = masterepoch.read(response.ext_fields)
        if newer is not None:
            self._on_newer_master(NewerMaster(addr, answer.master_addr or "", newer))
        return True

    async def unregister_all(self) -> None:
        ext = UnregisterBrokerRequestHeader(
            broker_name=self._identity.broker_name,
            broker_addr=self._identity.broker_addr,
            cluster_name=self._identity.cluster,
            broker_id=self._identity.broker_id,
        ).to_ext()
        for addr in self._addrs:
            try:
                await self._client.invoke(
                    addr, RemotingCommand(code=RequestCode.UNREGISTER_BROKER, ext_fields=dict(ext)), REGISTER_TIMEOUT_S
                )
            except RemotingError as exc:
                log.info("unregister from %s failed: %s", addr, exc)

    async def close(self) -> None:
        await self._task.stop()
        await self._increments.close()
