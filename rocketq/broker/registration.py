"""Registration with the name servers: how clients learn that this broker and its topics exist.

The broker registers with *every* name server (they never talk to each other) at start, every
``registerNameServerPeriod`` and soon after any topic change, and unregisters at shutdown. A
registration carries the topic table narrowed by ``brokerPermission``, so a broker made
read-only drains: producers stop choosing it while consumers keep reading it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from rocketq import tasks
from rocketq.protocol import addresses
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
"""Topic changes that come in a burst (a heartbeat creating retry topics) register once."""


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
        topic_wrapper: Callable[[], dict[str, Any]],
        period_ms: int,
    ) -> None:
        self._client = client
        self._addrs = namesrv_addrs
        self._identity = identity
        self._topic_wrapper = topic_wrapper
        self._period = max(0.1, period_ms / 1000)
        self._task = OwnedTask("broker-registration", self._run)
        self._wake = asyncio.Event()
        self.master_addr: str | None = None
        """A slave's master (remoting address), from the name servers' answers; None while none is live."""
        self.ha_server_addr: str | None = None
        """A slave's master HA address (haServerAddr in the answers)."""
        self.registrations = 0

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

    async def _run(self) -> None:
        """Register every period, or soon after ``request_now``; the first one is ``start``'s caller's."""
        while True:
            if await tasks.wait_event(self._wake, self._period):  # else the period passed: register anyway
                await asyncio.sleep(CHANGE_DEBOUNCE_S)
            self._wake.clear()
            await self.register_all()

    async def register_all(self) -> None:
        body = orjson.dumps({"topicConfigSerializeWrapper": self._topic_wrapper(), "filterServerList": []})
        ext = RegisterBrokerRequestHeader(
            broker_name=self._identity.broker_name,
            broker_addr=self._identity.broker_addr,
            cluster_name=self._identity.cluster,
            ha_server_addr=self._identity.ha_server_addr,
            broker_id=self._identity.broker_id,
            compressed=False,
            body_crc32=zlib.crc32(body) & 0x7FFFFFFF,
        ).to_ext()
        results = await asyncio.gather(*(self._register_one(a, ext, body) for a in self._addrs))
        if any(results):
            self.registrations += 1

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
