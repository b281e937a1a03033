"""A recording, in-memory BrokerAdmin: the operator's boundary to the engine, for tests.

It keeps per-address topics, groups, permissions, lags, CommitLog offsets and replication lag, answers
``cluster_brokers`` from ``registered`` (which the StatefulSet emulator fills in as pods
become ready, per namespace and cluster, as each cluster's own name servers would), refuses
every call to an address in ``down``, and records every call in ``calls`` as
``(method, address, argument)``.
"""

from __future__ import annotations

from collections.abc import Mapping

from rocketq_operator import brokeradmin
from rocketq_operator.brokeradmin import BrokerAdminError, BrokerRuntime, GroupConfig, TopicConfig


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
        self.closed = False

    def _call(self, method: str, address: str, argument: object = None) -> None:
        self.calls.append((method, address, argument))
        if address in self.down:
            raise BrokerAdminError(f"{address} does not answer")

    def called(self, method: str) -> list[tuple[str, object]]:
        return [(address, argument) for name, address, argument in self.calls if name == method]

    async def create_or_update_topic(self, broker: str, topic: TopicConfig) -> None:
        self._call("create_or_update_topic", broker, topic)
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
                             ha_behind_bytes=behind, ha_in_sync=behind == 0)

    async def cluster_brokers(self, namesrv: str, cluster: str) -> Mapping[str, Mapping[int, str]]:
        self._call("cluster_brokers", namesrv, cluster)
        # <pod>.<service>.<namespace>.svc:9876: each cluster has its own name servers.
        namespace = namesrv.split(".")[2]
        return {name: dict(ids) for name, ids in self.registered.get((namespace, cluster), {}).items()}

    async def close(self) -> None:
        self.closed = True
