"""A recording, in-memory BrokerAdmin: the operator's boundary to the engine, for tests.

It keeps per-address topics, groups, permissions, lags, CommitLog offsets and replication lag, answers
``cluster_brokers`` from ``registered`` (which the StatefulSet emulator fills in as pods
become ready, per namespace and cluster, as each cluster's own name servers would), refuses
every call to an address in ``down``, refuses a MIXED topic on an address in ``mixed_refused``
(a broker without ``enableMixedMessageType``, as ``BrokerRefusedError``), and records every call in ``calls`` as
``(method, address, argument)``.

Runtime role changes (``change_role``) are recorded in ``roles`` (address -> (role, brokerId));
a promotion starts a master epoch in ``epochs`` past the broker's own and ``epoch_above``, as
the broker does. An address in ``no_role_changes`` answers as an engine without runtime roles
(``RoleChangeUnsupported``); one in ``refuse_roles`` refuses the change (a failed promotion).

DLedger groups are played by ``play_raft`` (the StatefulSet emulator calls it for every
DLedger group on each tick): with a majority of members serving, the leader stays where it
is (``leaders``) or, when it is gone, the lowest serving ordinal wins a new term; without a
majority every serving member is a CANDIDATE and nobody leads. Each member answers
``dledger_member`` with that state; a follower lacks ``commit_behind[address]`` of the
leader's ``COMMIT_INDEX`` entries. ``transfer_leadership`` to a serving follower moves the
leader at once, in a new term, as DLedger answers once the transferee leads.
"""

from __future__ import annotations

from collections.abc import Mapping

from rocketq_operator import brokeradmin
from rocketq_operator.brokeradmin import (
    BrokerAdminError,
    BrokerRefusedError,
    BrokerRuntime,
    DLedgerMember,
    GroupConfig,
    RaftRole,
    RoleChangeUnsupported,
    TopicConfig,
)

COMMIT_INDEX = 1000
"""The commit index of every DLedger leader the fake plays."""


class FakeBrokerAdmin:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str, object]] = []
        self.topics: dict[str, dict[str, TopicConfig]] = {}
        self.groups: dict[str, dict[str, GroupConfig]] = {}
        self.perms: dict[str, int] = {}
        self.lags: dict[tuple[str, str], int] = {}
        self.offsets: dict[str, int] = {}
        self.behind: dict[str, int] = {}
        """Replication lag a slave reports (haBehindBytes): its master's end minus its own."""
        self.registered: dict[tuple[str, str], dict[str, dict[int, str]]] = {}
        """(namespace, cluster) -> brokerName -> {brokerId: address}: what the name servers know."""
        self.down: set[str] = set()
        self.mixed_refused: set[str] = set()
        self.roles: dict[str, tuple[str, int]] = {}
        self.epochs: dict[str, int] = {}
        self.no_role_changes: set[str] = set()
        self.refuse_roles: set[str] = set()
        self.closed = False
        self.raft: dict[str, DLedgerMember] = {}
        """address -> the Raft state a DLedger member reports (``play_raft``)."""
        self.leaders: dict[str, int] = {}
        """DLedger group -> its leader's ordinal."""
        self.terms: dict[str, int] = {}
        self.commit_behind: dict[str, int] = {}
        self._groups: dict[str, tuple[dict[int, str], frozenset[int]]] = {}

    def play_raft(self, group: str, addresses: Mapping[int, str], serving: frozenset[int]) -> None:
        """Elect (or keep) a leader of ``group`` among its ``serving`` ordinals; set every
        member's answer. ``addresses``: every member's address by ordinal."""
        self._groups[group] = (dict(addresses), serving)
        for address in addresses.values():
            self.raft.pop(address, None)
        term = self.terms.get(group, 0)
        if len(serving) < len(addresses) // 2 + 1:
            self.leaders.pop(group, None)
            for ordinal in serving:
                self.raft[addresses[ordinal]] = DLedgerMember(group, f"n{ordinal}", RaftRole.CANDIDATE, term,
                                                              COMMIT_INDEX, COMMIT_INDEX)
            return
        leader = self.leaders.get(group)
        if leader not in serving:
            leader = min(serving)
            self.leaders[group], self.terms[group] = leader, term + 1
        term = self.terms[group]
        commits = {o: COMMIT_INDEX - (0 if o == leader else self.commit_behind.get(addresses[o], 0)) for o in serving}
        leader_address = addresses[leader]
        for ordinal in serving:
            role = RaftRole.LEADER if ordinal == leader else RaftRole.FOLLOWER
            matched = {f"n{o}": commits[o] for o in serving if o != leader} if ordinal == leader else {}
            self.raft[addresses[ordinal]] = DLedgerMember(group, f"n{ordinal}", role, term, commits[ordinal],
                                                          commits[ordinal], f"n{leader}", leader_address, matched)

    def _call(self, method: str, address: str, argument: object = None) -> None:
        self.calls.append((method, address, argument))
        if address in self.down:
            raise BrokerAdminError(f"{address} does not answer")

    def called(self, method: str) -> list[tuple[str, object]]:
        return [(address, argument) for name, address, argument in self.calls if name == method]

    async def create_or_update_topic(self, broker: str, topic: TopicConfig) -> None:
        self._call("create_or_update_topic", broker, topic)
        if topic.message_type == "MIXED" and broker in self.mixed_refused:
            raise BrokerRefusedError(f"{broker}: cannot create topic {topic.name}: SYSTEM_ERROR (1): "
                                     "MIXED message type is not supported.")
        self.topics.setdefault(broker, {})[topic.name] = topic

    async def delete_topic(self, broker: str, name: str) -> None:
        self._call("delete_topic", broker, name)
        self.topics.get(broker, {}).pop(name, None)

    async def delete_topic_in_namesrv(self, namesrv: str, name: str) -> None:
        self._call("delete_topic_in_namesrv", namesrv, name)

    async def list_topics(self, broker: str) -> Mapping[str, TopicConfig]:
        self._call("list_topics", broker)
        return dict(self.topics.get(broker, {}))

    async def create_or_update_group(self, broker: str, group: GroupConfig) -> None:
        self._call("create_or_update_group", broker, group)
        self.groups.setdefault(broker, {})[group.name] = group

    async def delete_group(self, broker: str, name: str) -> None:
        self._call("delete_group", broker, name)
        self.groups.get(broker, {}).pop(name, None)

    async def list_groups(self, broker: str) -> Mapping[str, GroupConfig]:
        self._call("list_groups", broker)
        return dict(self.groups.get(broker, {}))

    async def get_group(self, broker: str, name: str) -> GroupConfig | None:
        self._call("get_group", broker)
        return self.groups.get(broker, {}).get(name)

    async def get_broker_permission(self, broker: str) -> int:
        self._call("get_broker_permission", broker)
        return self.perms.get(broker, brokeradmin.PERM_READ_WRITE)

    async def set_broker_permission(self, broker: str, perm: int) -> None:
        self._call("set_broker_permission", broker, perm)
        self.perms[broker] = perm

    async def consumer_lag(self, broker: str, group: str) -> int:
        self._call("consumer_lag", broker, group)
        return self.lags.get((broker, group), 0)

    async def broker_runtime(self, broker: str) -> BrokerRuntime:
        self._call("broker_runtime", broker)
        behind = self.behind.get(broker, 0)
        return BrokerRuntime(commitlog_max_offset=self.offsets.get(broker, 0), ha_connections=1,
                             ha_behind_bytes=behind, ha_in_sync=behind == 0, epoch=self.epochs.get(broker, 0))

    async def change_role(self, broker: str, role: str, broker_id: int = 0, epoch_above: int = 0) -> None:
        self._call("change_role", broker, (role, broker_id, epoch_above))
        if broker in self.no_role_changes:
            raise RoleChangeUnsupported(f"{broker}: REQUEST_CODE_NOT_SUPPORTED")
        if broker in self.refuse_roles:
            raise BrokerAdminError(f"{broker} refuses to become {role}")
        if role != "SLAVE" and self.roles.get(broker, ("SLAVE", 0))[0] == "SLAVE":
            self.epochs[broker] = max(self.epochs.get(broker, 0), epoch_above) + 1
        self.roles[broker] = (role, broker_id)

    async def cluster_brokers(self, namesrv: str, cluster: str) -> Mapping[str, Mapping[int, str]]:
        self._call("cluster_brokers", namesrv, cluster)
        # <pod>.<service>.<namespace>.svc:9876: each cluster has its own name servers.
        namespace = namesrv.split(".")[2]
        return {name: dict(ids) for name, ids in self.registered.get((namespace, cluster), {}).items()}

    async def dledger_member(self, broker: str) -> DLedgerMember:
        self._call("dledger_member", broker)
        if broker not in self.raft:
            raise BrokerAdminError(f"{broker} reports no dLegerRole")
        return self.raft[broker]

    async def transfer_leadership(self, broker: str, transferee: str) -> None:
        self._call("transfer_leadership", broker, transferee)
        state = self.raft.get(broker)
        if state is None or state.role is not RaftRole.LEADER:
            raise BrokerAdminError(f"{broker} is not a DLedger leader")
        addresses, serving = self._groups[state.group]
        ordinal = int(transferee.removeprefix("n"))
        if ordinal not in serving or ordinal == self.leaders[state.group]:
            raise BrokerAdminError(f"{transferee} cannot take over leadership of {state.group}")
        self.leaders[state.group] = ordinal
        self.terms[state.group] += 1
        self.play_raft(state.group, addresses, serving)

    async def close(self) -> None:
        self.closed = True
