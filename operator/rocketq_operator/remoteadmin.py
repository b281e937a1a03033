"""``BrokerAdmin`` over RocketMQ's remoting protocol, through ``rocketq.admin.AdminClient``.

``AdminClient`` already speaks every admin request the operator needs, with typed bodies and
RocketMQ's error codes; this adapter translates between its values and the operator's
(``brokeradmin.TopicConfig`` and friends), and turns every failure (an error answer, an
unreadable body, an unreachable peer) into ``BrokerAdminError``; a topic or group write the
broker answered with an error (other than "busy") becomes ``BrokerRefusedError``.

Topic writes always carry ``+message.type=<type>`` (UPDATE_AND_CREATE_TOPIC's ``attributes``):
the operator's config declares the type, and any other attribute (``queue.type``) is kept, as a
modification without that key leaves it alone.

The operator manages many clusters, each with its own name servers, and always says which
peer it means. An ``AdminClient`` is built around one list of name servers, so this adapter
keeps one client per peer address, homed at that address: name-server calls (cluster info,
topic route deletion) go to exactly the name server asked, broker calls name their broker.
Clients are created on first use and the least recently used ones are closed once more than
``MAX_CLIENTS`` peers have been seen, so a long-running operator does not keep connections to
pods that no longer exist. ``close()`` closes them all and is idempotent.

DLedger: a member's Raft state is read from the ``dLeger*`` keys of GET_BROKER_RUNTIME_INFO
(``dledger_runtime`` parses them). Leadership transfer goes through ``AdminClient.transfer_leadership``
when the engine's client has it; until then ``_transfer`` sends DLedger's request (code 51005,
ext field ``transfereeId``) through the same client, signing and timeout included.
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Mapping
from typing import Final, cast

import orjson

from rocketq.admin import adminbodies
from rocketq.admin.client import AdminClient
from rocketq.admin.errors import AdminError, ArgumentError, BodyError, NotFoundError, UnavailableError
from rocketq.protocol import topicattributes
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.remoting.errors import RemotingError
from rocketq_operator import brokeradmin
from rocketq_operator.brokeradmin import (
    BrokerAdminError,
    BrokerRefusedError,
    BrokerRuntime,
    DLedgerMember,
    GroupConfig,
    RaftRole,
    TopicConfig,
)
from rocketq_operator.runtime import OperatorConfig

MAX_CLIENTS: Final = 256
BROKER_PERMISSION: Final = "brokerPermission"
COMMITLOG_MAX_OFFSET: Final = "commitLogMaxOffset"
HA_CONNECTIONS: Final = "haConnectionCount"
HA_BEHIND_BYTES: Final = "haBehindBytes"
HA_IN_SYNC: Final = "haInSync"
HA_EPOCH: Final = "haEpoch"
DLEDGER_GROUP: Final = "dLegerGroup"
DLEDGER_SELF_ID: Final = "dLegerSelfId"
DLEDGER_ROLE: Final = "dLegerRole"
DLEDGER_TERM: Final = "dLegerTerm"
DLEDGER_LEADER_ID: Final = "dLegerLeaderId"
DLEDGER_LEADER_ADDR: Final = "dLegerLeaderAddr"
DLEDGER_COMMIT_INDEX: Final = "dLegerCommitIndex"
DLEDGER_LAST_INDEX: Final = "dLegerLastIndex"
DLEDGER_PEER_MATCH_INDEX: Final = "dLegerPeerMatchIndex"
TRANSFER_LEADERSHIP: Final = 51005
"""DLedger's leadership transfer request; answered SUCCESS once the transferee leads."""
TRANSFEREE_ID: Final = "transfereeId"
TRANSIENT_CODES: Final = frozenset({ResponseCode.SYSTEM_BUSY})
"""Error answers to a write that say "not now" rather than "no": retried like a lost peer."""
_FAILURES: Final = (AdminError, ArgumentError, BodyError, NotFoundError, UnavailableError, RemotingError)


def _int(values: Mapping[str, str], key: str, what: str) -> int:
    raw = values.get(key)
    if raw is None:
        raise BrokerAdminError(f"{what} has no {key}")
    try:
        return int(raw.strip())
    except ValueError:
        raise BrokerAdminError(f"{what}: {key}={raw!r} is not an integer") from None


def _peer_indexes(raw: str | None, what: str) -> dict[str, int]:
    """``dLegerPeerMatchIndex``: a JSON object ``{"n1": 42, ...}`` (leaders only)."""
    if raw is None or not raw.strip():
        return {}
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise BrokerAdminError(f"{what}: {DLEDGER_PEER_MATCH_INDEX} is not JSON") from None
    if not isinstance(value, dict) or not all(
            isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) for k, v in value.items()):
        raise BrokerAdminError(f"{what}: {DLEDGER_PEER_MATCH_INDEX} is not an object of peer ids to indexes")
    return dict(value)


def dledger_runtime(info: Mapping[str, str], what: str) -> DLedgerMember:
    """A member's Raft state from its runtime info; BrokerAdminError if it is not a member."""
    if DLEDGER_ROLE not in info:
        raise BrokerAdminError(f"{what} reports no {DLEDGER_ROLE}: not a DLedger member")
    raw_role = info[DLEDGER_ROLE].strip().upper()
    role = next((r for r in RaftRole if r.value == raw_role), None)
    if role is None:
        raise BrokerAdminError(f"{what}: {DLEDGER_ROLE}={info[DLEDGER_ROLE]!r} is not LEADER, FOLLOWER or CANDIDATE")
    leader_id = info.get(DLEDGER_LEADER_ID, "").strip() or None
    leader_address = info.get(DLEDGER_LEADER_ADDR, "").strip() or None
    return DLedgerMember(
        group=info.get(DLEDGER_GROUP, ""),
        self_id=info.get(DLEDGER_SELF_ID, ""),
        role=role,
        term=_int(info, DLEDGER_TERM, what),
        commit_index=_int(info, DLEDGER_COMMIT_INDEX, what),
        last_index=_int(info, DLEDGER_LAST_INDEX, what),
        leader_id=leader_id,
        leader_address=leader_address,
        peer_match_index=_peer_indexes(info.get(DLEDGER_PEER_MATCH_INDEX), what),
    )


async def _transfer(client: AdminClient, broker: str, transferee: str) -> None:
    """Leadership transfer through the engine's admin client, or DLedger's request sent as is."""
    method = getattr(client, "transfer_leadership", None)
    if method is not None:
        await method(broker, transferee)
        return
    # RequestCode has no member for 51005 until the engine's DLedger lands; the frame carries
    # the number either way (requests.command takes int(code)).
    await client.call(broker, cast(RequestCode, TRANSFER_LEADERSHIP), {TRANSFEREE_ID: transferee})


def _topic(config: adminbodies.TopicConfig) -> TopicConfig:
    return TopicConfig(name=config.topic_name, read_queue_nums=config.read_queue_nums,
                       write_queue_nums=config.write_queue_nums, perm=config.perm, order=config.order,
                       message_type=config.message_type.value)


def _group(config: adminbodies.GroupConfig) -> GroupConfig:
    return GroupConfig(name=config.group_name, consume_enable=config.consume_enable,
                       consume_broadcast_enable=config.consume_broadcast_enable,
                       retry_max_times=config.retry_max_times, retry_queue_nums=config.retry_queue_nums,
                       consume_message_orderly=config.consume_message_orderly)


def _write_failure(exc: Exception, message: str) -> BrokerAdminError:
    """A failed topic or group write: refused when the broker answered no, else "try again"."""
    if isinstance(exc, AdminError) and exc.code not in TRANSIENT_CODES:
        return BrokerRefusedError(message)
    return BrokerAdminError(message)


class RemotingBrokerAdmin:
    def __init__(self, timeout: float, *, access_key: str = "", secret_key: str = "") -> None:
        """With ``access_key`` and ``secret_key`` every call is signed for brokers with ACL."""
        if timeout <= 0:
            raise ValueError(f"timeout {timeout} must be positive")
        self._timeout = timeout
        self._credentials = {"access_key": access_key, "secret_key": secret_key}
        self._clients: collections.OrderedDict[str, AdminClient] = collections.OrderedDict()
        self._closed = False

    @classmethod
    def from_config(cls, config: OperatorConfig) -> RemotingBrokerAdmin:
        return cls(config.admin_timeout, access_key=config.access_key, secret_key=config.secret_key)

    async def _client(self, address: str) -> AdminClient:
        if self._closed:
            raise BrokerAdminError("the broker admin is closed")
        client = self._clients.get(address)
        if client is not None:
            self._clients.move_to_end(address)
            return client
        try:
            client = AdminClient(address, timeout=self._timeout, **self._credentials)
        except ArgumentError as exc:
            raise BrokerAdminError(f"bad address {address!r}: {exc}") from None
        self._clients[address] = client
        while len(self._clients) > MAX_CLIENTS:
            _oldest, stale = self._clients.popitem(last=False)
            await stale.close()
        return client

    async def create_or_update_topic(self, broker: str, topic: TopicConfig) -> None:
        config = adminbodies.TopicConfig(topic_name=topic.name, read_queue_nums=topic.read_queue_nums,
                                    write_queue_nums=topic.write_queue_nums, perm=topic.perm, order=topic.order)
        attributes = topicattributes.modification({f"+{topicattributes.MESSAGE_TYPE}": topic.message_type})
        try:
            await (await self._client(broker)).create_topic(broker, config, attributes)
        except _FAILURES as exc:
            raise _write_failure(exc, f"{broker}: cannot create topic {topic.name}: {exc}") from exc

    async def delete_topic(self, broker: str, name: str) -> None:
        try:
            await (await self._client(broker)).delete_topic_in_broker(broker, name)
        except _FAILURES as exc:
            raise BrokerAdminError(f"{broker}: cannot delete topic {name}: {exc}") from exc

    async def delete_topic_in_namesrv(self, namesrv: str, name: str) -> None:
        try:
            await (await self._client(namesrv)).delete_topic_in_namesrv(name)
        except _FAILURES as exc:
            raise BrokerAdminError(f"{namesrv}: cannot delete the route of topic {name}: {exc}") from exc

    async def list_topics(self, broker: str) -> Mapping[str, TopicConfig]:
        try:
            table = await (await self._client(broker)).all_topic_config(broker)
        except _FAILURES as exc:
            raise BrokerAdminError(f"{broker}: cannot list topics: {exc}") from exc
        return {name: _topic(config) for name, config in table.items()}

    async def create_or_update_group(self, broker: str, group: GroupConfig) -> None:
        """The group's managed fields written over what the broker has, so the fields the operator
        does not manage (consumeFromMinEnable, brokerId, whichBrokerWhenConsumeSlowly,
        notifyConsumerIdsChangedEnable) keep the broker's values instead of going back to defaults."""
        try:
            client = await self._client(broker)
            base = await self._group_on(client, broker, group.name)
            config = dataclasses.replace(
                base, consume_enable=group.consume_enable, consume_broadcast_enable=group.consume_broadcast_enable,
                retry_queue_nums=group.retry_queue_nums, retry_max_times=group.retry_max_times,
                consume_message_orderly=group.consume_message_orderly)
            await client.create_group(broker, config)
        except _FAILURES as exc:
            raise _write_failure(exc, f"{broker}: cannot create consumer group {group.name}: {exc}") from exc

    @staticmethod
    async def _group_on(client: AdminClient, broker: str, name: str) -> adminbodies.GroupConfig:
        """The broker's config of the group, or the defaults when it has none (or predates the call)."""
        try:
            existing = await client.group_config(broker, name)
        except AdminError as exc:
            if exc.code != ResponseCode.REQUEST_CODE_NOT_SUPPORTED:
                raise
            existing = None
        return existing if existing is not None else adminbodies.GroupConfig(group_name=name)

    async def delete_group(self, broker: str, name: str) -> None:
        try:
            await (await self._client(broker)).delete_group(broker, name)
        except _FAILURES as exc:
            raise BrokerAdminError(f"{broker}: cannot delete consumer group {name}: {exc}") from exc

    async def list_groups(self, broker: str) -> Mapping[str, GroupConfig]:
        try:
            table = await (await self._client(broker)).all_groups(broker)
        except _FAILURES as exc:
            raise BrokerAdminError(f"{broker}: cannot list consumer groups: {exc}") from exc
        return {name: _group(config) for name, config in table.items()}

    async def get_group(self, broker: str, name: str) -> GroupConfig | None:
        try:
            config = await (await self._client(broker)).group_config(broker, name)
        except _FAILURES as exc:
            raise BrokerAdminError(f"{broker}: cannot read consumer group {name}: {exc}") from exc
        return _group(config) if config is not None else None

    async def get_broker_permission(self, broker: str) -> int:
        try:
            config = await (await self._client(broker)).broker_config(broker)
        except _FAILURES as exc:
            raise BrokerAdminError(f"{broker}: cannot read the broker config: {exc}") from exc
        if BROKER_PERMISSION not in config:
            return brokeradmin.PERM_READ_WRITE
        return _int(config, BROKER_PERMISSION, f"{broker} broker config")

    async def set_broker_permission(self, broker: str, perm: int) -> None:
        try:
            await (await self._client(broker)).update_broker_config(broker, {BROKER_PERMISSION: str(perm)})
        except _FAILURES as exc:
            raise BrokerAdminError(f"{broker}: cannot set brokerPermission={perm}: {exc}") from exc

    async def consumer_lag(self, broker: str, group: str) -> int:
        try:
            stats = await (await self._client(broker)).consume_stats(broker, group)
        except _FAILURES as exc:
            raise BrokerAdminError(f"{broker}: cannot read the lag of {group}: {exc}") from exc
        return max(0, stats.total_diff)

    async def broker_runtime(self, broker: str) -> BrokerRuntime:
        try:
            info = await (await self._client(broker)).runtime_info(broker)
        except _FAILURES as exc:
            raise BrokerAdminError(f"{broker}: cannot read runtime info: {exc}") from exc
        what = f"{broker} runtime info"
        return BrokerRuntime(
            commitlog_max_offset=_int(info, COMMITLOG_MAX_OFFSET, what),
            ha_connections=_int(info, HA_CONNECTIONS, what) if HA_CONNECTIONS in info else None,
            ha_behind_bytes=_int(info, HA_BEHIND_BYTES, what) if HA_BEHIND_BYTES in info else None,
            ha_in_sync=info[HA_IN_SYNC] == "true" if HA_IN_SYNC in info else None,
            epoch=_int(info, HA_EPOCH, what) if HA_EPOCH in info else None,
        )

    async def change_role(self, broker: str, role: str, broker_id: int = 0, epoch_above: int = 0) -> None:
        try:
            await (await self._client(broker)).change_broker_role(broker, role, broker_id, epoch_above=epoch_above)
        except AdminError as exc:
            if exc.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED:
                raise brokeradmin.RoleChangeUnsupported(f"{broker}: no runtime role changes: {exc}") from exc
            raise BrokerAdminError(f"{broker}: cannot become {role} (brokerId {broker_id}): {exc}") from exc
        except _FAILURES as exc:
            raise BrokerAdminError(f"{broker}: cannot become {role} (brokerId {broker_id}): {exc}") from exc

    async def cluster_brokers(self, namesrv: str, cluster: str) -> Mapping[str, Mapping[int, str]]:
        try:
            info = await (await self._client(namesrv)).cluster_info()
        except _FAILURES as exc:
            raise BrokerAdminError(f"{namesrv}: cannot read cluster info: {exc}") from exc
        return {data.broker_name: dict(data.addrs) for data in info.groups_of(cluster)}

    async def dledger_member(self, broker: str) -> DLedgerMember:
        try:
            info = await (await self._client(broker)).runtime_info(broker)
        except _FAILURES as exc:
            raise BrokerAdminError(f"{broker}: cannot read runtime info: {exc}") from exc
        return dledger_runtime(info, f"{broker} runtime info")

    async def transfer_leadership(self, broker: str, transferee: str) -> None:
        try:
            await _transfer(await self._client(broker), broker, transferee)
        except _FAILURES as exc:
            raise BrokerAdminError(f"{broker}: cannot transfer leadership to {transferee}: {exc}") from exc

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        clients, self._clients = list(self._clients.values()), collections.OrderedDict()
        for client in clients:
            await client.close()
