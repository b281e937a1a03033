"""BrokerAdmin: every question and command the operator sends to brokers and name servers.

This protocol is the operator's boundary to the engine. The reconcilers decide *what* must
happen (create a topic on each master, make a draining broker read-only, find the most
caught-up slave); a ``BrokerAdmin`` carries it out over RocketMQ's remoting protocol. Tests
use a recording fake; ``rocketq_operator.remoteadmin`` speaks the wire protocol.

Addresses are ``host:port`` strings. A broker's address is what it registers with the name
servers (``<pod>.<group>.<namespace>.svc:10911``), so the answers of ``cluster_brokers`` can
be compared with the pods the operator knows. Every call may raise ``BrokerAdminError`` when
the peer is unreachable or refuses; callers treat that as "not known yet" and try again on
the next pass, never as a reason to act. A write the peer answered and refused (RocketMQ's
alter rules: ``message.type=MIXED`` on a broker without ``enableMixedMessageType``) raises
``BrokerRefusedError``: sending it again would only be refused again.

Topics carry RocketMQ 5's ``message.type`` (``TopicConfig.message_type``; a broker that stores
no attribute reports NORMAL) and groups ``consumeMessageOrderly``; both are read and written
with the rest of the config.

What each call means (RocketMQ request codes in brackets):

- ``create_or_update_topic(broker, topic)`` [UPDATE_AND_CREATE_TOPIC 17]
- ``delete_topic(broker, name)`` [DELETE_TOPIC_IN_BROKER 215]
- ``delete_topic_in_namesrv(namesrv, name)`` [DELETE_TOPIC_IN_NAMESRV 216]
- ``list_topics(broker)`` -> configs by name [GET_ALL_TOPIC_CONFIG 21]
- ``create_or_update_group(broker, group)`` [UPDATE_AND_CREATE_SUBSCRIPTIONGROUP 200]
- ``delete_group(broker, name)`` [DELETE_SUBSCRIPTIONGROUP 207]
- ``list_groups(broker)`` -> configs by name [GET_ALL_SUBSCRIPTIONGROUP_CONFIG 201]
- ``get_broker_permission(broker)`` / ``set_broker_permission(broker, perm)``: the broker-wide
  ``brokerPermission`` (6 read+write, 4 read-only) [GET_BROKER_CONFIG 26 / UPDATE_BROKER_CONFIG 25]
- ``consumer_lag(broker, group)``: messages stored on that broker that the group has not
  consumed yet, summed over its queues there [GET_CONSUME_STATS 208]
- ``broker_runtime(broker)``: the broker's CommitLog max offset, i.e. how far a slave has
  replicated, and its replication state (``haConnectionCount``, ``haBehindBytes``,
  ``haInSync``; brokers without replication report none) [GET_BROKER_RUNTIME_INFO 28]
- ``change_role(broker, role, broker_id, epoch_above)``: a runtime role change, answered once
  done (``rocketq admin electMaster`` / ``changeToSlave``): ``ASYNC_MASTER``/``SYNC_MASTER``
  promotes (brokerId 0, a new master epoch numbered past ``epoch_above``), ``SLAVE`` demotes to
  slave ``broker_id``, or gives a slave a new id; the same role and id again changes nothing.
  ``RoleChangeUnsupported`` when the broker does not know the request (an engine without
  runtime roles) [NOTIFY_BROKER_ROLE_CHANGED 1008, rocketq's header fields]
- ``cluster_brokers(namesrv, cluster)``: who is registered: brokerName -> {brokerId: address};
  brokerId 0 is the master (or the DLedger leader) [GET_BROKER_CLUSTER_INFO 106]
- ``dledger_member(broker)``: a DLedger member's Raft state (role, term, leader, commit and last
  index, and on the leader each peer's match index), from the ``dLeger*`` keys of its runtime
  info; ``BrokerAdminError`` when the broker reports none [GET_BROKER_RUNTIME_INFO 28]
- ``transfer_leadership(broker, transferee)``: ask the DLedger leader at ``broker`` to hand
  leadership to the member ``transferee`` (``n<ordinal>``); answered once the transferee leads
  [DLedger's leadership transfer, 51005, ext field ``transfereeId``]
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final, Protocol

PERM_READ_ONLY: Final = 4
PERM_READ_WRITE: Final = 6
MESSAGE_TYPE_NORMAL: Final = "NORMAL"

SYSTEM_GROUPS: Final = frozenset({
    "TOOLS_CONSUMER", "FILTERSRV_CONSUMER", "__MONITOR_CONSUMER", "CLIENT_INNER_PRODUCER",
    "SELF_TEST_P_GROUP", "SELF_TEST_C_GROUP", "CID_ONS-HTTP-PROXY", "CID_ONSAPI_PERMISSION",
    "CID_ONSAPI_OWNER", "CID_ONSAPI_PULL", "CID_RMQ_SYS_TRANS", "DEFAULT_CONSUMER",
    "DEFAULT_PRODUCER", "SCHEDULE_CONSUMER",
})
"""Groups brokers create for themselves; nobody consumes through them, so drains skip them."""


class BrokerAdminError(Exception):
    """A broker or name server did not answer, or refused the request."""


class BrokerRefusedError(BrokerAdminError):
    """The peer answered and refused the request itself (not busy, not unreachable)."""


class RoleChangeUnsupported(BrokerAdminError):
    """The broker answered that it does not know runtime role changes (REQUEST_CODE_NOT_SUPPORTED)."""


@dataclass(frozen=True)
class TopicConfig:
    name: str
    read_queue_nums: int = 8
    write_queue_nums: int = 8
    perm: int = PERM_READ_WRITE
    order: bool = False
    message_type: str = MESSAGE_TYPE_NORMAL
    """RocketMQ 5's ``message.type`` attribute (NORMAL, FIFO, DELAY, TRANSACTION, MIXED)."""


@dataclass(frozen=True)
class GroupConfig:
    name: str
    consume_enable: bool = True
    consume_broadcast_enable: bool = False
    retry_max_times: int = 16
    retry_queue_nums: int = 1
    consume_message_orderly: bool = False


@dataclass(frozen=True)
class BrokerRuntime:
    commitlog_max_offset: int
    ha_connections: int | None = None
    """Master: slaves connected. Slave: 1 while connected to its master. None: not reported."""
    ha_behind_bytes: int | None = None
    """Slave: bytes its master had (as last heard) that it has not. Master: its best slave's lag."""
    ha_in_sync: bool | None = None
    """Master: a slave is connected and within haMaxGapNotInSync. Slave: connected."""
    epoch: int | None = None
    """Master: its master epoch (docs/ha.md, epochs). Slave: its master's, as last replicated."""


class RaftRole(enum.Enum):
    LEADER = "LEADER"
    FOLLOWER = "FOLLOWER"
    CANDIDATE = "CANDIDATE"


@dataclass(frozen=True)
class DLedgerMember:
    """What one DLedger member says about itself and, if it leads, about its peers."""

    group: str
    self_id: str
    role: RaftRole
    term: int
    commit_index: int
    last_index: int
    leader_id: str | None = None
    """The leader this member follows (itself when it leads); None while there is none."""
    leader_address: str | None = None
    peer_match_index: Mapping[str, int] = field(default_factory=dict)
    """Leader only: the last index each peer (``n<ordinal>``) is known to store."""


class BrokerAdmin(Protocol):
    async def create_or_update_topic(self, broker: str, topic: TopicConfig) -> None: ...

    async def delete_topic(self, broker: str, name: str) -> None: ...

    async def delete_topic_in_namesrv(self, namesrv: str, name: str) -> None: ...

    async def list_topics(self, broker: str) -> Mapping[str, TopicConfig]: ...

    async def create_or_update_group(self, broker: str, group: GroupConfig) -> None: ...

    async def delete_group(self, broker: str, name: str) -> None: ...

    async def list_groups(self, broker: str) -> Mapping[str, GroupConfig]: ...

    async def get_group(self, broker: str, name: str) -> GroupConfig | None:
        """One group as the broker has it now (never from a cache); None when it has none."""
        ...

    async def get_broker_permission(self, broker: str) -> int: ...

    async def set_broker_permission(self, broker: str, perm: int) -> None: ...

    async def consumer_lag(self, broker: str, group: str) -> int: ...

    async def broker_runtime(self, broker: str) -> BrokerRuntime: ...

    async def change_role(self, broker: str, role: str, broker_id: int = 0, epoch_above: int = 0) -> None: ...

    async def cluster_brokers(self, namesrv: str, cluster: str) -> Mapping[str, Mapping[int, str]]: ...

    async def dledger_member(self, broker: str) -> DLedgerMember: ...

    async def transfer_leadership(self, broker: str, transferee: str) -> None: ...

    async def close(self) -> None: ...
