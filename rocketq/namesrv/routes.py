"""The route registry: which brokers are alive, and which of them hold which topic's queues.

This is RocketMQ's ``RouteInfoManager`` as pure state: no sockets, no clock, no tasks. The
caller passes ``now`` (any monotonic seconds) and the connection a registration came on (an
opaque object compared by identity), so every rule below can be tested in isolation.

Tables (RocketMQ's names):

- ``topic_queue_table``: topic -> brokerName -> QueueData (queue counts and perm per broker group)
- ``broker_addr_table``: brokerName -> BrokerData (cluster, {brokerId: addr})
- ``cluster_addr_table``: cluster -> {brokerName}
- ``broker_live_table``: brokerAddr -> BrokerLive (last registration, dataVersion, haServerAddr,
  connection, heartbeat timeout)
- ``filter_server_table``: brokerAddr -> [filter server addr]
- ``master_epoch_table``: brokerName -> the highest master epoch a master registration of the
  group carried (rocketq's ``rocketqMasterEpoch``; never set by Java brokers)

``QueueData``, ``BrokerData`` and the answers' shapes (``TopicRouteData``, ``ClusterInfo``) are
``rocketq.protocol.routedata``, the same values clients and admin tools parse; they are
immutable, so a change replaces a group's ``BrokerData`` rather than editing it.

Rules kept from RocketMQ: a registration is also the broker's heartbeat; an address registered
under another brokerId is replaced (a slave promoted to master leaves one record); queue data is
rebuilt only from the master (brokerId 0) and only on first registration or a changed
dataVersion; a slave is told its master's address and HA address. A broker that goes silent
(``expire``) or whose connection closes (``remove_by_connection``) disappears from every table,
and a topic whose last broker disappears disappears too. Name servers never talk to each other:
every broker registers with each of them, so this registry is never replicated.

One rule is rocketq's own (fencing a stale master, docs/ha.md): RocketMQ 4.x gives brokerId 0
to whoever registered it last, so an old master that is still running (not yet demoted, or
back from a partition) takes the group back from the slave promoted in its place at its next
periodic registration. A rocketq master registers its HA epoch (each promotion starts a higher
one); a brokerId-0 registration whose epoch is lower than the group's known master epoch, from
another address than the group's current master, is refused: the tables stay as they were (only a
heartbeat is counted) and the result names the current master and the group's epoch, which the stale broker fences
itself on. A registration without an epoch (Java brokers) wins as before, and with no current
master any registration may take brokerId 0, so a fence never leaves a group masterless.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from rocketq.namesrv.registerbodies import RegisterBrokerBody
from rocketq.protocol import addresses
from rocketq.protocol.codes import MASTER_ID, Perm
from rocketq.protocol.routedata import BrokerData, ClusterInfo, QueueData, TopicRouteData
from rocketq.protocol.sharedbodies import DataVersion, TopicConfig


class RouteError(ValueError):
    """A registration names something that cannot be a broker (empty name, bad id, bad address)."""


@dataclass(frozen=True, slots=True)
class BrokerLive:
    broker_addr: str
    last_update: float
    data_version: DataVersion
    ha_server_addr: str
    connection: object | None
    timeout: float | None
    """Seconds of silence before expiry as the broker asked (RocketMQ 5), or None: the default."""
    complete: bool = True
    """False while this name server holds only topic increments of the broker's table (it has
    not seen a full registration yet): the next registration is read whatever its DataVersion."""


@dataclass(frozen=True, slots=True)
class Registration:
    """What REGISTER_BROKER says, validated by the caller's header parsing."""

    cluster: str
    broker_addr: str
    broker_name: str
    broker_id: int
    ha_server_addr: str
    body: RegisterBrokerBody
    increment: bool = False
    """The body holds only the changed topics (rocketq brokers say so; Java brokers never do)."""
    master_epoch: int | None = None
    """The HA epoch of a rocketq master (``rocketqMasterEpoch``); None from Java brokers and slaves."""


@dataclass(frozen=True, slots=True)
class RegisterResult:
    """For a slave: where its master is and where to replicate from; empty otherwise.

    For a refused stale master (``stale_master_epoch`` set): the group's current master and the
    epoch it holds brokerId 0 at; nothing was recorded."""

    master_addr: str | None = None
    ha_server_addr: str | None = None
    stale_master_epoch: int | None = None


class RouteTable:
    def __init__(self, *, delete_topic_with_registration: bool = False) -> None:
        self.delete_topic_with_registration = delete_topic_with_registration
        self.topic_queue_table: dict[str, dict[str, QueueData]] = {}
        self.broker_addr_table: dict[str, BrokerData] = {}
        self.cluster_addr_table: dict[str, set[str]] = {}
        self.broker_live_table: dict[str, BrokerLive] = {}
        self.filter_server_table: dict[str, list[str]] = {}
        self.master_epoch_table: dict[str, int] = {}

    # --- registration ---------------------------------------------------------------------------

    def register_broker(
        self, reg: Registration, *, now: float, connection: object | None = None, timeout: float | None = None
    ) -> RegisterResult:
        _validate(reg)
        stale = self._stale_master(reg)
        if stale is not None:  # record nothing, but it is alive: not to be reported silent later
            self.touch(reg.broker_addr, now)
            return stale
        self.cluster_addr_table.setdefault(reg.cluster, set()).add(reg.broker_name)
        first = self._put_broker_addr(reg)
        if reg.broker_id == MASTER_ID:
            self._note_master_epoch(reg)
            version = reg.body.data_version
            if first or self.is_topic_config_changed(reg.broker_addr, version):
                self._rebuild_queues(reg.broker_name, reg.body.topic_configs)
        previous = self.broker_live_table.get(reg.broker_addr)
        complete = not reg.increment or (previous is not None and previous.complete)
        self.broker_live_table[reg.broker_addr] = BrokerLive(
            reg.broker_addr, now, reg.body.data_version, reg.ha_server_addr, connection, timeout, complete
        )
        if reg.body.filter_servers:
            self.filter_server_table[reg.broker_addr] = list(reg.body.filter_servers)
        else:
            self.filter_server_table.pop(reg.broker_addr, None)
        return self._master_of(reg) if reg.broker_id != MASTER_ID else RegisterResult()

    def _stale_master(self, reg: Registration) -> RegisterResult | None:
        """The refusal of a brokerId-0 registration older than the group's live master, or None."""
        known = self.master_epoch_table.get(reg.broker_name)
        if reg.broker_id != MASTER_ID or reg.master_epoch is None or known is None or reg.master_epoch >= known:
            return None
        data = self.broker_addr_table.get(reg.broker_name)
        holder = None if data is None else data.master_addr
        if holder is None or holder == reg.broker_addr:
            return None
        live = self.broker_live_table.get(holder)
        return RegisterResult(master_addr=holder, ha_server_addr=None if live is None else live.ha_server_addr,
                              stale_master_epoch=known)

    def _note_master_epoch(self, reg: Registration) -> None:
        if reg.master_epoch is not None:
            known = self.master_epoch_table.get(reg.broker_name, reg.master_epoch)
            self.master_epoch_table[reg.broker_name] = max(known, reg.master_epoch)

    def master_epoch(self, broker_name: str) -> int | None:
        """The highest master epoch the group registered with, None without one."""
        return self.master_epoch_table.get(broker_name)

    def _put_broker_addr(self, reg: Registration) -> bool:
        """Record the address under its id; True when this id (or the group) is new."""
        data = self.broker_addr_table.get(reg.broker_name)
        cluster = reg.cluster if data is None else data.cluster
        # One record per address: a slave promoted to master re-registers as id 0.
        addrs = {} if data is None else {i: a for i, a in data.addrs if a != reg.broker_addr or i == reg.broker_id}
        previous = addrs.get(reg.broker_id)
        addrs[reg.broker_id] = reg.broker_addr
        self.broker_addr_table[reg.broker_name] = BrokerData.of(cluster, reg.broker_name, addrs)
        return data is None or previous is None

    def _rebuild_queues(self, broker_name: str, configs: Iterable[TopicConfig]) -> None:
        reported = set()
        for tc in configs:
            reported.add(tc.topic_name)
            self.topic_queue_table.setdefault(tc.topic_name, {})[broker_name] = QueueData.of(broker_name, tc)
        if self.delete_topic_with_registration:
            for topic in list(self.topic_queue_table):
                if topic not in reported:
                    self._drop_queue(topic, broker_name)

    def _master_of(self, reg: Registration) -> RegisterResult:
        master_addr = self.broker_addr_table[reg.broker_name].master_addr
        master = self.broker_live_table.get(master_addr) if master_addr else None
        if master is None:
            return RegisterResult()
        return RegisterResult(master_addr=master_addr, ha_server_addr=master.ha_server_addr)

    def wants_topics(self, broker_name: str, broker_addr: str, broker_id: int, version: DataVersion) -> bool:
        """Would ``register_broker`` read this registration's topics? Only a master's, and only
        when it is new here or its DataVersion moved (a superset of when ``_rebuild_queues`` runs,
        so a body decoded without topics is never applied as an empty table)."""
        if broker_id != MASTER_ID:
            return False
        data = self.broker_addr_table.get(broker_name)
        if data is None or all(i != broker_id for i, _ in data.addrs):
            return True
        return self.is_topic_config_changed(broker_addr, version)

    def is_topic_config_changed(self, broker_addr: str, version: DataVersion) -> bool:
        live = self.broker_live_table.get(broker_addr)
        return live is None or not live.complete or live.data_version != version

    def data_version_of(self, broker_addr: str) -> DataVersion | None:
        live = self.broker_live_table.get(broker_addr)
        return None if live is None else live.data_version

    def touch(self, broker_addr: str, now: float) -> None:
        """Count a QUERY_DATA_VERSION with an unchanged version as a heartbeat."""
        live = self.broker_live_table.get(broker_addr)
        if live is not None:
            self.broker_live_table[broker_addr] = dataclasses.replace(live, last_update=now)

    # --- removal --------------------------------------------------------------------------------

    def unregister_broker(self, cluster: str, broker_addr: str, broker_name: str, broker_id: int) -> None:
        """A clean shutdown: forget this member; the group goes when its last member goes."""
        self.broker_live_table.pop(broker_addr, None)
        self.filter_server_table.pop(broker_addr, None)
        data = self.broker_addr_table.get(broker_name)
        if data is None:
            return
        remaining = {i: addr for i, addr in data.addrs if i != broker_id}
        if remaining:
            self.broker_addr_table[broker_name] = BrokerData.of(data.cluster, broker_name, remaining)
            return
        del self.broker_addr_table[broker_name]
        self.master_epoch_table.pop(broker_name, None)
        names = self.cluster_addr_table.get(cluster)
        if names is not None:
            names.discard(broker_name)
            if not names:
                del self.cluster_addr_table[cluster]
        self._drop_broker_queues(broker_name)

    def expire(self, now: float, timeout: float) -> list[BrokerLive]:
        """Remove every broker silent for longer than its timeout; return what was removed."""
        expired = [
            live for live in self.broker_live_table.values()
            if now - live.last_update > (live.timeout if live.timeout is not None else timeout)
        ]
        for live in expired:
            self._remove_addr(live.broker_addr)
        return expired

    def remove_by_connection(self, connection: object) -> list[str]:
        """The connection a broker registered on closed: remove it now, not after the timeout."""
        addrs = [addr for addr, live in self.broker_live_table.items() if live.connection is connection]
        for addr in addrs:
            self._remove_addr(addr)
        return addrs

    def _remove_addr(self, broker_addr: str) -> None:
        self.broker_live_table.pop(broker_addr, None)
        self.filter_server_table.pop(broker_addr, None)
        for name, data in list(self.broker_addr_table.items()):
            remaining = {i: addr for i, addr in data.addrs if addr != broker_addr}
            if not remaining:
                del self.broker_addr_table[name]
                self._forget_group(name)
            elif len(remaining) != len(data.addrs):
                self.broker_addr_table[name] = BrokerData.of(data.cluster, name, remaining)

    def _forget_group(self, broker_name: str) -> None:
        self.master_epoch_table.pop(broker_name, None)
        for cluster, names in list(self.cluster_addr_table.items()):
            names.discard(broker_name)
            if not names:
                del self.cluster_addr_table[cluster]
        self._drop_broker_queues(broker_name)

    def _drop_broker_queues(self, broker_name: str) -> None:
        for topic in list(self.topic_queue_table):
            self._drop_queue(topic, broker_name)

    def _drop_queue(self, topic: str, broker_name: str) -> None:
        queues = self.topic_queue_table.get(topic)
        if queues is not None and queues.pop(broker_name, None) is not None and not queues:
            del self.topic_queue_table[topic]

    # --- admin changes --------------------------------------------------------------------------

    def delete_topic(self, topic: str, cluster: str | None = None) -> bool:
        """Forget a topic everywhere, or only on the broker groups of ``cluster``."""
        if topic not in self.topic_queue_table:
            return False
        if not cluster:
            del self.topic_queue_table[topic]
            return True
        names = self.cluster_addr_table.get(cluster, set())
        hit = names & self.topic_queue_table[topic].keys()
        for name in hit:
            self._drop_queue(topic, name)
        return bool(hit)

    def wipe_write_perm(self, broker_name: str) -> int:
        """Make a broker group read-only in every route (before taking it offline)."""
        return self._set_perms(broker_name, lambda perm: perm & ~int(Perm.WRITE))

    def add_write_perm(self, broker_name: str) -> int:
        """Undo a wipe: every route of the broker group gets read-write (6), RocketMQ's
        ``operateWritePermOfBroker``, whatever the topic's perm was before."""
        return self._set_perms(broker_name, lambda _perm: int(Perm.READ | Perm.WRITE))

    def _set_perms(self, broker_name: str, change: Callable[[int], int]) -> int:
        """Rewrite the perm of the broker group's queue data in every route; the count changed.

        Only the name server's view changes, until the broker's next registration with a new
        topic DataVersion rewrites it (as in RocketMQ)."""
        count = 0
        for queues in self.topic_queue_table.values():
            qd = queues.get(broker_name)
            if qd is not None:
                queues[broker_name] = dataclasses.replace(qd, perm=change(qd.perm))
                count += 1
        return count

    # --- queries --------------------------------------------------------------------------------

    def pick_route(self, topic: str) -> dict[str, Any] | None:
        """TopicRouteData's JSON for a topic, or None when no live broker group holds it."""
        queues = self.topic_queue_table.get(topic)
        if not queues:
            return None
        brokers = [self.broker_addr_table[name] for name in sorted(queues) if name in self.broker_addr_table]
        if not brokers:
            return None
        filter_servers = sorted(
            (addr, tuple(self.filter_server_table[addr]))
            for data in brokers for _, addr in data.addrs if addr in self.filter_server_table
        )
        route = TopicRouteData(tuple(queues[name] for name in sorted(queues)), tuple(brokers),
                               filter_servers=tuple(filter_servers))
        return route.to_json()

    def cluster_info(self) -> dict[str, Any]:
        """ClusterInfo's JSON: every broker group, and each cluster's group names."""
        info = ClusterInfo(
            brokers=tuple(data for _, data in sorted(self.broker_addr_table.items())),
            clusters=tuple((c, tuple(sorted(names))) for c, names in sorted(self.cluster_addr_table.items())),
        )
        return info.to_json()

    def all_topics(self) -> list[str]:
        return sorted(self.topic_queue_table)

    def topics_by_cluster(self, cluster: str) -> list[str]:
        names = self.cluster_addr_table.get(cluster, set())
        return sorted(t for t, queues in self.topic_queue_table.items() if names & queues.keys())

    def system_topics(self) -> tuple[list[str], str | None]:
        """RocketMQ's system topics as the name server sees them: every cluster name and broker
        name (brokers create topics named after both), plus one broker address to ask for more."""
        topics: set[str] = set()
        for cluster, names in self.cluster_addr_table.items():
            topics.add(cluster)
            topics |= names
        addr = next((a for d in self.broker_addr_table.values() for _, a in d.addrs), None)
        return sorted(topics), addr


def _validate(reg: Registration) -> None:
    for what, value in (("clusterName", reg.cluster), ("brokerName", reg.broker_name)):
        if not value.strip():
            raise RouteError(f"{what} must not be empty")
    if reg.broker_id < 0:
        raise RouteError(f"brokerId {reg.broker_id} must not be negative")
    if reg.master_epoch is not None and reg.master_epoch < 0:
        raise RouteError(f"master epoch {reg.master_epoch} must not be negative")
    if not addresses.is_host_port(reg.broker_addr):
        raise RouteError(f"brokerAddr {reg.broker_addr!r} is not host:port")
