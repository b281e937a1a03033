"""``AdminClient``: one typed async method per admin request to a name server or a broker.

Each method builds one request (typed header -> extFields, body), sends it, and turns the
answer into values from ``adminbodies``, ``routes`` and ``stats``. A non-SUCCESS answer raises
``AdminError`` with RocketMQ's code name; an unreadable SUCCESS answer raises ``BodyError``;
arguments that cannot be valid raise ``ArgumentError`` before anything is sent; transport
failures stay ``RemotingError``. Methods that read a lookup which may legitimately be empty
(messages by key, a KV entry) return an empty value for QUERY_NOT_FOUND instead of raising.

Name-server calls go to the configured name servers in turn until one answers (a transport
failure moves to the next); calls that change name-server state (delete a topic, wipe write
permission, KV config) go to every name server, since name servers do not share state.
Broker calls take the broker's address: choosing brokers (every master of a cluster, every
group of a route) is ``rocketq.admin.cluster``'s work, not this class's.

The client owns one ``RemotingClient`` (one pooled connection per address) and no background
task; ``close`` is idempotent. Timeouts are in seconds.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import Final, Self, TypeVar

from rocketq.acl import signing
from rocketq.admin import adminbodies, dledger, routes, stats, tablepages
from rocketq.admin.adminbodies import GroupConfig, TopicConfig
from rocketq.admin.errors import AdminError, ArgumentError, BodyError
from rocketq.admin.routes import ClusterInfo, TopicRoute
from rocketq.admin.stats import ConsumeStats, MessageQueue, TopicStats
from rocketq.protocol import (
    aclbodies,
    aclheaders,
    addresses,
    headers,
    messageproperties,
    msgid,
    pullsysflag,
    requests,
    storedrecords,
    topicattributes,
)
from rocketq.protocol.codes import NO_GROUP_REMARK, RequestCode, ResponseCode
from rocketq.protocol.frames import RemotingCommand
from rocketq.protocol.headers import Header, HeaderError
from rocketq.protocol.messageerrors import MessageFormatError
from rocketq.protocol.messagetypes import Message, MessageExt
from rocketq.protocol.requests import (
    PULL_CODES,
    PULL_STATUS_BY_CODE,
    SEND_OK_CODES,
    SEND_STATUS_BY_CODE,
    PullResult,
    SendResult,
)
from rocketq.protocol.sharedbodies import DataVersion
from rocketq.remoting.client import RemotingClient
from rocketq.remoting.errors import RemotingError

DEFAULT_TIMEOUT: Final = 5.0
"""Seconds to wait for one answer (mqadmin waits 5 s for most calls)."""
UNIQUE_KEY_QUERY: Final = "_UNIQUE_KEY_QUERY"
"""extField telling QUERY_MESSAGE that the key is a UNIQ_KEY (``MixAll.UNIQUE_MSG_QUERY_FLAG``)."""
TOOLS_CONSUMER_GROUP: Final = "TOOLS_CONSUMER"
"""The group admin pulls run under (``MixAll.TOOLS_CONSUMER_GROUP``); it never commits offsets."""
TOOLS_PRODUCER_GROUP: Final = "TOOLS_PRODUCER"
TRANSFER_TIMEOUT: Final = 15.0
"""A leadership transfer is answered once the transferee leads (the broker gives it 10 s)."""
MAX_PULL_NUMS: Final = 1024
MAX_QUERY_NUMS: Final = 64
METADATA_PAGE_SIZE: Final = 2000
"""Topics or groups asked for per GET_ALL_TOPIC_CONFIG / GET_ALL_SUBSCRIPTIONGROUP_CONFIG page
(RocketMQ 5's ``maxPageSizeInGetMetadata``): a 50 000-topic table in 25 answers of ~300 KB
instead of one 8 MB frame."""

H = TypeVar("H", bound=Header)
E = TypeVar("E")


def parse_namesrv_addrs(namesrv_addr: str) -> tuple[str, ...]:
    """``host:port;host:port`` (mqadmin's ``-n``) as a tuple; ArgumentError if any is malformed."""
    addrs = tuple(addresses.split_list(namesrv_addr))
    if not addrs:
        raise ArgumentError("no name server address given (use -n host:port or NAMESRV_ADDR)")
    for addr in addrs:
        try:
            addresses.parse_host_port(addr)
        except ValueError as exc:
            raise ArgumentError(str(exc)) from None
    return addrs


class AdminClient:
    def __init__(self, namesrv_addr: str, *, timeout: float = DEFAULT_TIMEOUT, access_key: str = "",
                 secret_key: str = "", security_token: str = "") -> None:
        """With ``access_key`` and ``secret_key`` every request is signed for a broker with ACL."""
        self.namesrv_addrs = parse_namesrv_addrs(namesrv_addr)
        if timeout <= 0:
            raise ArgumentError(f"timeout {timeout} must be positive")
        self.timeout = timeout
        if bool(access_key) != bool(secret_key):
            raise ArgumentError("access_key and secret_key go together: give both or neither")
        self._remoting = RemotingClient(name="admin", rpc_hook=signing.signer(access_key, secret_key, security_token))
        self._preferred = 0
        self._uniq_ids: msgid.UniqIdGenerator | None = None
        self._closed = False

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.close()

    async def close(self) -> None:
        """Close every connection. Idempotent."""
        if not self._closed:
            self._closed = True
            await self._remoting.close()

    # --- plumbing -------------------------------------------------------------------------

    async def call(self, addr: str, code: RequestCode, header: Header | Mapping[str, str] | None = None,
                   body: bytes = b"", ok: frozenset[int] = frozenset({ResponseCode.SUCCESS})) -> RemotingCommand:
        """Send one request; an answer whose code is not in ``ok`` raises AdminError."""
        response = await self._remoting.invoke(addr, requests.command(code, header, body), self.timeout)
        if response.code not in ok:
            raise AdminError(response.code, response.remark)
        return response

    async def call_namesrv(self, code: RequestCode, header: Header | None = None, body: bytes = b"",
                           ok: frozenset[int] = frozenset({ResponseCode.SUCCESS})) -> RemotingCommand:
        """Ask the name servers in turn, starting with the last one that answered."""
        failure: RemotingError | None = None
        count = len(self.namesrv_addrs)
        for step in range(count):
            index = (self._preferred + step) % count
            try:
                response = await self.call(self.namesrv_addrs[index], code, header, body, ok)
            except RemotingError as exc:
                failure = exc
                continue
            self._preferred = index
            return response
        assert failure is not None
        raise failure

    async def call_every_namesrv(self, code: RequestCode, header: Header) -> dict[str, RemotingCommand]:
        return {addr: await self.call(addr, code, header) for addr in self.namesrv_addrs}

    # --- name server ----------------------------------------------------------------------

    async def topic_route(self, topic: str) -> TopicRoute:
        adminbodies.check_topic(topic)
        response = await self.call_namesrv(RequestCode.GET_ROUTEINFO_BY_TOPIC, headers.TopicHeader(topic=topic))
        return routes.parse_topic_route(topic, response.body)

    async def cluster_info(self) -> ClusterInfo:
        response = await self.call_namesrv(RequestCode.GET_BROKER_CLUSTER_INFO)
        return routes.parse_cluster_info(response.body)

    async def all_topics(self) -> tuple[str, ...]:
        response = await self.call_namesrv(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)
        return adminbodies.parse_topic_list(response.body)

    async def topics_by_cluster(self, cluster: str) -> tuple[str, ...]:
        response = await self.call_namesrv(RequestCode.GET_TOPICS_BY_CLUSTER,
                                           headers.GetTopicsByClusterRequestHeader(cluster=cluster))
        return adminbodies.parse_topic_list(response.body)

    async def delete_topic_in_namesrv(self, topic: str, cluster: str | None = None) -> None:
        adminbodies.check_topic(topic)
        await self.call_every_namesrv(RequestCode.DELETE_TOPIC_IN_NAMESRV,
                                      headers.DeleteTopicFromNamesrvRequestHeader(topic=topic, cluster_name=cluster))

    async def wipe_write_perm(self, broker_name: str) -> dict[str, int]:
        """Make a broker group read-only in every name server's routes; topics wiped per name server."""
        answers = await self.call_every_namesrv(RequestCode.WIPE_WRITE_PERM_OF_BROKER,
                                                headers.BrokerNameHeader(broker_name=broker_name))
        return {addr: _header(headers.WipeWritePermResponseHeader, r).wipe_topic_count for addr, r in answers.items()}

    async def add_write_perm(self, broker_name: str) -> dict[str, int]:
        """Make a broker group writable again in every name server's routes; topics per name server."""
        answers = await self.call_every_namesrv(RequestCode.ADD_WRITE_PERM_OF_BROKER,
                                                headers.BrokerNameHeader(broker_name=broker_name))
        return {addr: _header(headers.AddWritePermResponseHeader, r).add_topic_count for addr, r in answers.items()}

    async def put_kv_config(self, namespace: str, key: str, value: str) -> None:
        await self.call_every_namesrv(RequestCode.PUT_KV_CONFIG,
                                      headers.KVConfigHeader(namespace=namespace, key=key, value=value))

    async def get_kv_config(self, namespace: str, key: str) -> str | None:
        response = await self.call_namesrv(RequestCode.GET_KV_CONFIG,
                                           headers.KVConfigHeader(namespace=namespace, key=key),
                                           ok=frozenset({ResponseCode.SUCCESS, ResponseCode.QUERY_NOT_FOUND}))
        if response.code == ResponseCode.QUERY_NOT_FOUND:
            return None
        return _header(headers.KVConfigResponseHeader, response).value

    async def delete_kv_config(self, namespace: str, key: str) -> None:
        await self.call_every_namesrv(RequestCode.DELETE_KV_CONFIG,
                                      headers.KVConfigHeader(namespace=namespace, key=key))

    async def kv_list(self, namespace: str) -> dict[str, str]:
        response = await self.call_namesrv(RequestCode.GET_KVLIST_BY_NAMESPACE,
                                           headers.NamespaceHeader(namespace=namespace),
                                           ok=frozenset({ResponseCode.SUCCESS, ResponseCode.QUERY_NOT_FOUND}))
        if response.code == ResponseCode.QUERY_NOT_FOUND:
            return {}
        return adminbodies.parse_kv_table(response.body, "kv list")

    # --- broker: topics and groups --------------------------------------------------------

    async def create_topic(self, addr: str, config: TopicConfig, attributes: str | None = None) -> None:
        """``attributes``: a modification (``+message.type=FIFO,-key``, RocketMQ 5's ``-a``); without
        one, the config's own attributes are set (``+key=value`` each) and the others left as they are."""
        config.validate()
        if attributes is None and config.attributes:
            attributes = topicattributes.modification({f"+{k}": v for k, v in config.attributes})
        await self.call(addr, RequestCode.UPDATE_AND_CREATE_TOPIC, headers.CreateTopicRequestHeader(
            topic=config.topic_name, read_queue_nums=config.read_queue_nums,
            write_queue_nums=config.write_queue_nums, perm=config.perm,
            topic_filter_type=config.topic_filter_type, topic_sys_flag=config.topic_sys_flag, order=config.order,
            attributes=attributes))

    async def delete_topic_in_broker(self, addr: str, topic: str) -> None:
        adminbodies.check_topic(topic)
        await self.call(addr, RequestCode.DELETE_TOPIC_IN_BROKER, headers.TopicHeader(topic=topic))

    async def all_topic_config(self, addr: str) -> dict[str, TopicConfig]:
        def page(seq: int, version: str, max_num: int) -> Header:
            return headers.GetAllTopicConfigRequestHeader(topic_seq=seq, data_version=version, max_topic_num=max_num)

        return await self._all_pages(addr, RequestCode.GET_ALL_TOPIC_CONFIG, page, "totalTopicNum",
                                     adminbodies.parse_topic_config_table)

    async def topic_stats(self, addr: str, topic: str) -> TopicStats:
        adminbodies.check_topic(topic)
        response = await self.call(addr, RequestCode.GET_TOPIC_STATS_INFO, headers.TopicHeader(topic=topic))
        return stats.parse_topic_stats(response.body)

    async def topic_config(self, addr: str, topic: str) -> TopicConfig | None:
        """GET_TOPIC_CONFIG (RocketMQ 5): the topic on that broker with its attributes; None when the
        broker does not hold it or predates the request."""
        adminbodies.check_topic(topic)
        response = await self.call(addr, RequestCode.GET_TOPIC_CONFIG, headers.GetTopicConfigRequestHeader(topic=topic),
                                   ok=frozenset({ResponseCode.SUCCESS, ResponseCode.TOPIC_NOT_EXIST,
                                                 ResponseCode.REQUEST_CODE_NOT_SUPPORTED}))
        if response.code != ResponseCode.SUCCESS:
            return None
        return TopicConfig.from_json(adminbodies.load(response.body, "topic config"), name=topic)

    async def group_config(self, addr: str, group: str) -> GroupConfig | None:
        """GET_SUBSCRIPTIONGROUP_CONFIG (RocketMQ 5): one group's config on that broker; None when the
        broker does not hold it (RocketMQ answers SYSTEM_ERROR "No group in this broker"). A broker
        that predates the request raises AdminError (REQUEST_CODE_NOT_SUPPORTED)."""
        adminbodies.check_group(group)
        response = await self.call(addr, RequestCode.GET_SUBSCRIPTIONGROUP_CONFIG,
                                   headers.GetSubscriptionGroupConfigRequestHeader(group=group),
                                   ok=frozenset({ResponseCode.SUCCESS, ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                                                 ResponseCode.SYSTEM_ERROR}))
        if response.code == ResponseCode.SYSTEM_ERROR and response.remark != NO_GROUP_REMARK:
            raise AdminError(response.code, response.remark)
        if response.code != ResponseCode.SUCCESS:
            return None
        return GroupConfig.from_json(adminbodies.load(response.body, "group config"), "group config")

    async def create_group(self, addr: str, config: GroupConfig) -> None:
        config.validate()
        await self.call(addr, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=config.body())

    async def all_groups(self, addr: str) -> dict[str, GroupConfig]:
        def page(seq: int, version: str, max_num: int) -> Header:
            return headers.GetAllSubscriptionGroupRequestHeader(group_seq=seq, data_version=version,
                                                                max_group_num=max_num)

        return await self._all_pages(addr, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG, page, "totalGroupNum",
                                     adminbodies.parse_group_table)

    async def _all_pages(self, addr: str, code: RequestCode, page: Callable[[int, str, int], Header],
                         total_field: str, parse: Callable[[bytes], dict[str, E]]) -> dict[str, E]:
        """A broker table page by page, as RocketMQ 5's MQClientAPIImpl reads it (``tablepages``)."""
        async def fetch(seq: int, version: DataVersion | None, max_num: int) -> tablepages.Page[E]:
            response = await self.call(addr, code, page(seq, tablepages.version_text(version), max_num))
            return tablepages.Page(parse(response.body), adminbodies.parse_data_version(response.body),
                                   tablepages.total_of(response.ext_fields.get(total_field)))

        table = await tablepages.read(fetch, METADATA_PAGE_SIZE)
        assert table is not None  # read without a held version always reads
        return table.entries

    async def delete_group(self, addr: str, group: str, *, clean_offset: bool = False) -> None:
        adminbodies.check_group(group)
        await self.call(addr, RequestCode.DELETE_SUBSCRIPTIONGROUP,
                        headers.DeleteSubscriptionGroupRequestHeader(group_name=group, clean_offset=clean_offset))

    # --- broker: runtime and config -------------------------------------------------------

    async def runtime_info(self, addr: str) -> dict[str, str]:
        response = await self.call(addr, RequestCode.GET_BROKER_RUNTIME_INFO)
        return adminbodies.parse_kv_table(response.body, "broker runtime info")

    async def change_broker_role(self, addr: str, role: str, broker_id: int = 0, master_address: str = "",
                                 epoch_above: int = 0) -> None:
        """NOTIFY_BROKER_ROLE_CHANGED (rocketq/ha/role.py): answered once the broker has switched;
        ``epoch_above``: a promoted broker's new epoch is numbered past it."""
        ext = {"brokerRole": role, "brokerId": str(broker_id)}
        if master_address:
            ext["masterAddress"] = master_address
        if epoch_above:
            ext["masterEpochAbove"] = str(epoch_above)
        await self.call(addr, RequestCode.NOTIFY_BROKER_ROLE_CHANGED, ext)

    # --- broker: ACL (codes 50-54) ----------------------------------------------------------

    async def update_acl_account(self, addr: str, header: aclheaders.CreateAccessConfigRequestHeader) -> None:
        """Create or update an account in the broker's ACL files (mqadmin updateAclConfig)."""
        await self.call(addr, RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, header)

    async def delete_acl_account(self, addr: str, access_key: str) -> None:
        await self.call(addr, RequestCode.DELETE_ACL_CONFIG,
                        aclheaders.DeleteAccessConfigRequestHeader(access_key=access_key))

    async def update_global_white_addrs(self, addr: str, patterns: Sequence[str], acl_file: str | None = None) -> None:
        await self.call(addr, RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG,
                        aclheaders.UpdateGlobalWhiteAddrsConfigRequestHeader(
                            global_white_addrs=",".join(patterns), acl_file_full_path=acl_file))

    async def acl_version(self, addr: str) -> aclheaders.GetBrokerAclConfigResponseHeader:
        response = await self.call(addr, RequestCode.GET_BROKER_CLUSTER_ACL_INFO)
        return _header(aclheaders.GetBrokerAclConfigResponseHeader, response)

    async def acl_config(self, addr: str) -> aclbodies.ClusterAclConfig:
        """Every account in force on the broker, secret keys included (mqadmin getAclConfig)."""
        response = await self.call(addr, RequestCode.GET_BROKER_CLUSTER_ACL_CONFIG)
        return aclbodies.ClusterAclConfig.decode(response.body)  # BodyError if unreadable

    async def dledger_status(self, addr: str) -> dledger.DLedgerStatus:
        """A DLedger member's role, term, leader, indexes (its runtime info's dLeger* keys);
        BodyError for a broker that is not a DLedger member."""
        return dledger.DLedgerStatus.from_runtime(addr, await self.runtime_info(addr))

    async def transfer_leadership(self, addr: str, transferee_id: str) -> None:
        """Ask the leader at ``addr`` to hand leadership to ``transferee_id`` (code 51005);
        returns once it has, AdminError (SYSTEM_ERROR and why) when it did not."""
        if not transferee_id:
            raise ArgumentError("no transferee member id given (e.g. n1)")
        request = requests.command(RequestCode.DLEDGER_LEADERSHIP_TRANSFER, {"transfereeId": transferee_id})
        response = await self._remoting.invoke(addr, request, max(self.timeout, TRANSFER_TIMEOUT))
        if response.code != ResponseCode.SUCCESS:
            raise AdminError(response.code, response.remark)

    async def broker_config(self, addr: str) -> dict[str, str]:
        response = await self.call(addr, RequestCode.GET_BROKER_CONFIG)
        return adminbodies.parse_properties_text(response.body)

    async def update_broker_config(self, addr: str, updates: Mapping[str, str]) -> None:
        await self.call(addr, RequestCode.UPDATE_BROKER_CONFIG, body=adminbodies.properties_text(updates))

    # --- broker: consumption --------------------------------------------------------------

    async def consume_stats(self, addr: str, group: str, topic: str | None = None) -> ConsumeStats:
        adminbodies.check_group(group)
        response = await self.call(addr, RequestCode.GET_CONSUME_STATS,
                                   headers.GetConsumeStatsRequestHeader(consumer_group=group, topic=topic))
        return stats.parse_consume_stats(response.body)

    async def consumer_connection(self, addr: str, group: str) -> adminbodies.ConsumerConnection:
        adminbodies.check_group(group)
        response = await self.call(addr, RequestCode.GET_CONSUMER_CONNECTION_LIST,
                                   headers.ConsumerGroupHeader(consumer_group=group))
        return adminbodies.parse_consumer_connection(response.body)

    async def consumed_by(self, addr: str, topic: str) -> tuple[str, ...]:
        """QUERY_TOPIC_CONSUME_BY_WHO: groups online on, or with offsets for, a topic."""
        adminbodies.check_topic(topic)
        response = await self.call(addr, RequestCode.QUERY_TOPIC_CONSUME_BY_WHO, headers.TopicHeader(topic=topic))
        return adminbodies.parse_group_list(response.body)

    async def all_consumer_offsets(self, addr: str) -> dict[tuple[str, str], dict[int, int]]:
        """Every committed offset on a broker: (topic, group) -> queue id -> offset."""
        response = await self.call(addr, RequestCode.GET_ALL_CONSUMER_OFFSET)
        return adminbodies.parse_consumer_offsets(response.body)

    async def reset_offset_by_time(self, addr: str, topic: str, group: str, timestamp: int,
                                   *, force: bool = True) -> dict[MessageQueue, int]:
        """Move a group's offsets on this broker to the first message stored at or after ``timestamp``
        (ms; negative means the end of each queue). Returns each queue's new offset."""
        adminbodies.check_topic(topic)
        adminbodies.check_group(group)
        response = await self.call(addr, RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, headers.ResetOffsetRequestHeader(
            topic=topic, group=group, timestamp=timestamp, is_force=force))
        return stats.parse_reset_offsets(response.body)

    async def clone_group_offset(self, addr: str, src_group: str, dest_group: str, topic: str | None,
                                 *, offline: bool = False) -> None:
        adminbodies.check_group(src_group)
        adminbodies.check_group(dest_group)
        if topic is not None:
            adminbodies.check_topic(topic)
        await self.call(addr, RequestCode.CLONE_GROUP_OFFSET, headers.CloneGroupOffsetRequestHeader(
            src_group=src_group, dest_group=dest_group, topic=topic, offline=offline))

    # --- broker: offsets ------------------------------------------------------------------

    async def max_offset(self, addr: str, topic: str, queue_id: int) -> int:
        """The next logical offset to be written in a queue."""
        return await self._offset(addr, RequestCode.GET_MAX_OFFSET, topic, queue_id)

    async def min_offset(self, addr: str, topic: str, queue_id: int) -> int:
        return await self._offset(addr, RequestCode.GET_MIN_OFFSET, topic, queue_id)

    async def _offset(self, addr: str, code: RequestCode, topic: str, queue_id: int) -> int:
        adminbodies.check_topic(topic)
        response = await self.call(addr, code, headers.TopicQueueRequestHeader(topic=topic, queue_id=queue_id))
        return _header(headers.OffsetResponseHeader, response).offset

    async def search_offset(self, addr: str, topic: str, queue_id: int, timestamp: int) -> int:
        """The offset of the first message stored at or after ``timestamp`` (ms) in a queue."""
        adminbodies.check_topic(topic)
        response = await self.call(addr, RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, headers.SearchOffsetRequestHeader(
            topic=topic, queue_id=queue_id, timestamp=timestamp))
        return _header(headers.OffsetResponseHeader, response).offset

    # --- broker: messages -----------------------------------------------------------------

    async def query_message(self, addr: str, topic: str, key: str, *, max_num: int = MAX_QUERY_NUMS,
                            begin: int = 0, end: int | None = None, unique: bool = False) -> list[MessageExt]:
        """Messages of a topic indexed under ``key`` (a KEYS entry, or the UNIQ_KEY when ``unique``)."""
        adminbodies.check_topic(topic)
        if not key:
            raise ArgumentError("the message key is empty")
        if not 1 <= max_num <= MAX_QUERY_NUMS:
            raise ArgumentError(f"max number of messages {max_num} outside [1, {MAX_QUERY_NUMS}]")
        ext = headers.QueryMessageRequestHeader(
            topic=topic, key=key, max_num=max_num, begin_timestamp=begin,
            end_timestamp=end if end is not None else _now_ms()).to_ext()
        ext[UNIQUE_KEY_QUERY] = "true" if unique else "false"
        response = await self.call(addr, RequestCode.QUERY_MESSAGE, ext,
                                   ok=frozenset({ResponseCode.SUCCESS, ResponseCode.QUERY_NOT_FOUND}))
        if response.code == ResponseCode.QUERY_NOT_FOUND:
            return []
        return _records(response.body, "query message answer")

    async def view_message(self, addr: str, commit_log_offset: int, topic: str | None = None) -> MessageExt:
        """The message stored at a CommitLog offset of one broker (VIEW_MESSAGE_BY_ID)."""
        if commit_log_offset < 0:
            raise ArgumentError(f"commit log offset {commit_log_offset} is negative")
        response = await self.call(addr, RequestCode.VIEW_MESSAGE_BY_ID,
                                   headers.ViewMessageRequestHeader(offset=commit_log_offset, topic=topic))
        records = _records(response.body, "view message answer")
        if len(records) != 1:
            raise BodyError(f"view message answer holds {len(records)} messages, expected 1")
        return records[0]

    async def pull(self, addr: str, queue: MessageQueue, offset: int, max_nums: int = 32,
                   *, subscription: str = "*", group: str = TOOLS_CONSUMER_GROUP) -> PullResult:
        """Read raw messages from one queue without holding, committing or needing a heartbeat."""
        adminbodies.check_topic(queue.topic)
        adminbodies.check_group(group)
        if offset < 0 or not 1 <= max_nums <= MAX_PULL_NUMS:
            raise ArgumentError(f"pull offset {offset} / count {max_nums} out of range")
        request = requests.pull_header(group, queue, offset, max_nums, sys_flag=pullsysflag.SUBSCRIPTION,
                                       subscription=subscription)
        response = await self.call(addr, RequestCode.PULL_MESSAGE, request, ok=PULL_CODES)
        header = _header(headers.PullMessageResponseHeader, response)
        found = response.code == ResponseCode.SUCCESS
        return PullResult(PULL_STATUS_BY_CODE[ResponseCode(response.code)], header.next_begin_offset,
                          header.min_offset, header.max_offset, _records(response.body, "pull answer") if found else [])

    async def send_message(self, addr: str, queue: MessageQueue, msg: Message,
                           *, producer_group: str = TOOLS_PRODUCER_GROUP) -> SendResult:
        """Store one message in one queue (SEND_MESSAGE_V2), stamping a UNIQ_KEY as producers do."""
        adminbodies.check_topic(msg.topic)
        adminbodies.check_group(producer_group)
        if msg.topic != queue.topic:
            raise ArgumentError(f"message topic {msg.topic} differs from queue topic {queue.topic}")
        if len(msg.body) > storedrecords.DEFAULT_MAX_MESSAGE_SIZE:
            raise ArgumentError(
                f"message body of {len(msg.body)} bytes exceeds {storedrecords.DEFAULT_MAX_MESSAGE_SIZE}")
        if msg.uniq_key is None:
            msg.uniq_key = self._uniq_id_generator().next_id()
        msg.properties.setdefault(messageproperties.WAIT, "true")
        header = headers.SendMessageRequestHeader(
            producer_group=producer_group, topic=msg.topic, queue_id=queue.queue_id, sys_flag=0,
            born_timestamp=_now_ms(), flag=msg.flag, properties=messageproperties.encode_properties(msg.properties),
            reconsume_times=0, max_reconsume_times=None)
        response = await self.call(addr, RequestCode.SEND_MESSAGE_V2, headers.send_header_to_v2(header), msg.body,
                                   ok=SEND_OK_CODES)
        answer = _header(headers.SendMessageResponseHeader, response)
        return SendResult(SEND_STATUS_BY_CODE[ResponseCode(response.code)], msg.uniq_key or answer.msg_id,
                          answer.msg_id, MessageQueue(queue.topic, queue.broker_name, answer.queue_id),
                          answer.queue_offset)

    def _uniq_id_generator(self) -> msgid.UniqIdGenerator:
        if self._uniq_ids is None:
            self._uniq_ids = msgid.UniqIdGenerator()
        return self._uniq_ids


def _header(cls: type[H], response: RemotingCommand) -> H:
    try:
        return cls.from_ext(response.ext_fields)
    except HeaderError as exc:
        raise BodyError(f"answer header: {exc}") from None


def _records(body: bytes, what: str) -> list[MessageExt]:
    try:
        return requests.decode_records(body)
    except MessageFormatError as exc:
        raise BodyError(f"{what}: {exc}") from None


def _now_ms() -> int:
    return time.time_ns() // 1_000_000
