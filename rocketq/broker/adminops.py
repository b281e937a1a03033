"""Admin requests: topics, subscription groups, broker config, runtime info and consume stats.

These back `rocketq admin` (mqadmin's command names) and the Kubernetes operator: creating a
topic on every master, draining a broker by making it read-only (brokerPermission), reading a
group's lag. Bodies are RocketMQ's JSON shapes. Where RocketMQ keys a map by a MessageQueue
object (fastjson writes an object as a map key), ``mq_keyed_json`` writes that same form so Java
admin tools can read it; ``rocketq.admin`` parses it back.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, Final

import orjson

from rocketq.broker import metadatapages, runtimeconfig
from rocketq.broker.clienttable import ClientManager
from rocketq.broker.groups import GroupError, SubscriptionGroupManager
from rocketq.broker.offsets import ConsumerOffsetManager
from rocketq.broker.topics import TopicConfigManager, TopicError, validate_topic_name
from rocketq.protocol import namerules, sharedbodies, topicattributes
from rocketq.protocol.codes import NO_GROUP_REMARK, RequestCode, ResponseCode
from rocketq.protocol.frames import RemotingCommand
from rocketq.protocol.headers import (
    CloneGroupOffsetRequestHeader,
    ConsumerGroupHeader,
    CreateTopicRequestHeader,
    DeleteSubscriptionGroupRequestHeader,
    GetAllSubscriptionGroupRequestHeader,
    GetAllSubscriptionGroupResponseHeader,
    GetAllTopicConfigRequestHeader,
    GetAllTopicConfigResponseHeader,
    GetConsumeStatsRequestHeader,
    GetSubscriptionGroupConfigRequestHeader,
    GetTopicConfigRequestHeader,
    ResetOffsetRequestHeader,
    TopicHeader,
)
from rocketq.ratelimit import LogLimiter
from rocketq.remoting.connection import Connection, Handler
from rocketq.store.messagestore import MessageStore

log = logging.getLogger(__name__)

_SHOWN: Final = 200
"""Characters of a refused topic name quoted in a log line."""


SLAVE_REFUSAL: Final = ("Can't modify topic or subscription group from slave broker, "
                        "please execute it from master broker.")
SLAVE_GUARDED: Final = frozenset({
    RequestCode.UPDATE_AND_CREATE_TOPIC, RequestCode.DELETE_TOPIC_IN_BROKER,
    RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, RequestCode.DELETE_SUBSCRIPTIONGROUP,
})
"""Topic and group changes a slave refuses (RocketMQ's ``validateSlave``): its tables are the
master's, copied by the metadata sync, which would silently undo a change made here."""


def slave_guarded(handlers: dict[int, Handler]) -> dict[int, Handler]:
    """A slave's admin handlers: SLAVE_GUARDED requests answer SYSTEM_ERROR ``SLAVE_REFUSAL``."""
    async def refuse(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        return request.response(ResponseCode.SYSTEM_ERROR, SLAVE_REFUSAL)

    return {code: refuse if code in SLAVE_GUARDED else handler for code, handler in handlers.items()}


def mq_keyed_json(entries: list[tuple[dict[str, Any], Any]], field: str, extra: dict[str, Any]) -> bytes:
    """JSON with MessageQueue objects as map keys, the way fastjson writes RocketMQ's tables."""
    pairs = ",".join(f"{orjson.dumps(k).decode()}:{orjson.dumps(v).decode()}" for k, v in entries)
    rest = "".join(f",{orjson.dumps(k).decode()}:{orjson.dumps(v).decode()}" for k, v in extra.items())
    return f'{{"{field}":{{{pairs}}}{rest}}}'.encode()


class AdminHandlers:
    def __init__(
        self,
        store: MessageStore,
        topics: TopicConfigManager,
        groups: SubscriptionGroupManager,
        offsets: ConsumerOffsetManager,
        clients: ClientManager,
        broker_name: str,
        cluster: str,
        config_view: Callable[[], dict[str, str]],
        update_config: Callable[[dict[str, str]], None],
        runtime_info: Callable[[], dict[str, str]],
        register_now: Callable[[], Awaitable[None]],
        mixed_allowed: Callable[[], bool] = lambda: False,
    ) -> None:
        self._store = store
        self._topics = topics
        self._groups = groups
        self._offsets = offsets
        self._clients = clients
        self._broker_name = broker_name
        self._cluster = cluster
        self._config_view = config_view
        self._update_config = update_config
        self._runtime_info = runtime_info
        self._register_now = register_now
        self._mixed_allowed = mixed_allowed
        """``enableMixedMessageType``: may a topic be made message.type=MIXED."""
        self._refusals = LogLimiter(log)
        self._topic_names = metadatapages.SortedNames()
        self._group_names = metadatapages.SortedNames()

    def handlers(self) -> dict[int, Handler]:
        return {
            RequestCode.UPDATE_AND_CREATE_TOPIC: self.create_topic,
            RequestCode.DELETE_TOPIC_IN_BROKER: self.delete_topic,
            RequestCode.GET_ALL_TOPIC_CONFIG: self.all_topic_config,
            RequestCode.GET_TOPIC_CONFIG: self.topic_config,
            RequestCode.GET_SUBSCRIPTIONGROUP_CONFIG: self.group_config,
            RequestCode.GET_TOPIC_STATS_INFO: self.topic_stats,
            RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP: self.create_group,
            RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG: self.all_groups,
            RequestCode.DELETE_SUBSCRIPTIONGROUP: self.delete_group,
            RequestCode.GET_BROKER_RUNTIME_INFO: self.runtime,
            RequestCode.GET_BROKER_CONFIG: self.get_config,
            RequestCode.UPDATE_BROKER_CONFIG: self.update_config,
            RequestCode.GET_CONSUME_STATS: self.consume_stats,
            RequestCode.GET_CONSUMER_CONNECTION_LIST: self.consumer_connections,
            RequestCode.QUERY_TOPIC_CONSUME_BY_WHO: self.consumed_by,
            RequestCode.GET_ALL_CONSUMER_OFFSET: self.all_offsets,
            RequestCode.INVOKE_BROKER_TO_RESET_OFFSET: self.reset_offset,
            RequestCode.CLONE_GROUP_OFFSET: self.clone_offset,
        }

    # --- topics ---------------------------------------------------------------------------

    async def create_topic(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        header = CreateTopicRequestHeader.from_ext(request.ext_fields)
        refusal = self._system_topic_refusal(conn, request, header.topic, "create")
        if refusal is not None:
            return refusal
        current = self._topics.get(header.topic)
        try:
            attributes = topicattributes.alter(
                current.attribute_map if current else {}, topicattributes.parse_modification(header.attributes),
                create=current is None)
        except topicattributes.TopicAttributeError as exc:
            return request.response(ResponseCode.SYSTEM_ERROR, str(exc))
        if topicattributes.message_type(attributes) is topicattributes.MessageType.MIXED and not self._mixed_allowed():
            return request.response(ResponseCode.SYSTEM_ERROR, "MIXED message type is not supported.")
        config = sharedbodies.TopicConfig(
            header.topic,
            header.read_queue_nums,
            header.write_queue_nums,
            header.perm,
            header.topic_filter_type,
            header.topic_sys_flag or 0,
            header.order,
            tuple(sorted(attributes.items())),
        )
        try:
            self._topics.upsert(config)
        except TopicError as exc:
            return request.response(ResponseCode.SYSTEM_ERROR, str(exc))
        await self._register_now()
        return request.response(ResponseCode.SUCCESS)

    async def topic_config(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        """GET_TOPIC_CONFIG: one topic's config as topics.json holds it (RocketMQ 5's
        TopicConfigAndQueueMapping without a mapping: rocketq has no static topics)."""
        header = GetTopicConfigRequestHeader.from_ext(request.ext_fields)
        config = self._topics.get(header.topic)
        if config is None:
            return request.response(ResponseCode.TOPIC_NOT_EXIST, f"No topic in this broker. topic: {header.topic}")
        return request.response(ResponseCode.SUCCESS, body=orjson.dumps(config.to_json()))

    async def delete_topic(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        header = TopicHeader.from_ext(request.ext_fields)
        refusal = self._system_topic_refusal(conn, request, header.topic, "delete")
        if refusal is not None:
            return refusal
        self._topics.delete([header.topic])
        self._offsets.delete_topic(header.topic)
        self._store.delete_topics([header.topic])
        await self._register_now()
        return request.response(ResponseCode.SUCCESS)

    def _system_topic_refusal(self, conn: Connection, request: RemotingCommand, topic: str,
                              action: str) -> RemotingCommand | None:
        """SYSTEM_ERROR, as RocketMQ 4.9, for a topic this broker owns: the system topics, its
        cluster name and its broker name (they carry the INHERIT bit auto-creation relies on and
        the routes clients find brokers by)."""
        try:
            validate_topic_name(topic)
            namerules.check_not_system_topic(topic, TopicError)
            if topic in (self._cluster, self._broker_name):
                raise TopicError(f"The topic[{topic}] is conflict with system topic.")
        except TopicError as exc:
            self._refusals.warning(conn.remote_addr, "%s topic %s from %s refused: %s",
                                   action, topic[:_SHOWN], conn.remote_addr, exc)
            return request.response(ResponseCode.SYSTEM_ERROR, str(exc))
        return None

    async def all_topic_config(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        """The whole table, or one page of it (rocketq.broker.metadatapages)."""
        header = GetAllTopicConfigRequestHeader.from_ext(request.ext_fields)
        page = metadatapages.requested(header.topic_seq, header.data_version, header.max_topic_num)
        body = self._listing(self._topics, self._topic_names, page, "topicConfigTable")
        total = GetAllTopicConfigResponseHeader(total_topic_num=len(self._topics.table))
        return request.response(ResponseCode.SUCCESS, ext_fields=total.to_ext(), body=body)

    @staticmethod
    def _listing(manager: TopicConfigManager | SubscriptionGroupManager, names: metadatapages.SortedNames,
                 page: metadatapages.PageRequest | None, table_key: str) -> bytes:
        """The whole table's JSON (as its file holds it), or the page asked for."""
        if page is None:
            return orjson.dumps(manager.to_json())
        table, version = manager.table, manager.data_version
        on_page = metadatapages.page_names(names.of(table, version), version, page)
        return orjson.dumps(metadatapages.page_document(table, version, on_page, table_key))

    async def topic_stats(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        header = TopicHeader.from_ext(request.ext_fields)
        config = self._topics.get(header.topic)
        if config is None:
            return request.response(ResponseCode.TOPIC_NOT_EXIST, f"topic[{header.topic}] not exist")
        entries = []
        for qid in range(config.write_queue_nums):
            max_offset = self._store.get_max_offset(header.topic, qid)
            last = self._store.get_store_time(header.topic, qid, max_offset - 1) if max_offset > 0 else 0
            entries.append(
                (
                    self._mq(header.topic, qid),
                    {
                        "minOffset": self._store.get_min_offset(header.topic, qid),
                        "maxOffset": max_offset,
                        "lastUpdateTimestamp": last,
                    },
                )
            )
        return request.response(ResponseCode.SUCCESS, body=mq_keyed_json(entries, "offsetTable", {}))

    # --- groups ---------------------------------------------------------------------------

    async def create_group(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        try:
            config = sharedbodies.SubscriptionGroupConfig.from_json(sharedbodies.load_json(request.body, "body"))
            self._groups.upsert(config)
        except (sharedbodies.BodyError, GroupError) as exc:
            return request.response(ResponseCode.SYSTEM_ERROR, f"bad subscription group config: {exc}")
        await self._groups.flush()  # answered once durable; concurrent creates share the write
        return request.response(ResponseCode.SUCCESS)

    async def group_config(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        """GET_SUBSCRIPTIONGROUP_CONFIG: one group's config; SYSTEM_ERROR when absent, as RocketMQ 5."""
        header = GetSubscriptionGroupConfigRequestHeader.from_ext(request.ext_fields)
        config = self._groups.get(header.group)
        if config is None:
            return request.response(ResponseCode.SYSTEM_ERROR, NO_GROUP_REMARK)
        return request.response(ResponseCode.SUCCESS, body=orjson.dumps(config.to_json()))

    async def all_groups(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        """The whole table, or one page of it (rocketq.broker.metadatapages)."""
        header = GetAllSubscriptionGroupRequestHeader.from_ext(request.ext_fields)
        page = metadatapages.requested(header.group_seq, header.data_version, header.max_group_num)
        body = self._listing(self._groups, self._group_names, page, "subscriptionGroupTable")
        total = GetAllSubscriptionGroupResponseHeader(total_group_num=len(self._groups.table))
        return request.response(ResponseCode.SUCCESS, ext_fields=total.to_ext(), body=body)

    async def delete_group(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        header = DeleteSubscriptionGroupRequestHeader.from_ext(request.ext_fields)
        self._groups.delete(header.group_name)
        if header.clean_offset:
            self._offsets.delete_group(header.group_name)
        await self._groups.flush()
        return request.response(ResponseCode.SUCCESS)

    # --- broker ---------------------------------------------------------------------------

    async def runtime(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        return request.response(ResponseCode.SUCCESS, body=orjson.dumps({"table": self._runtime_info()}))

    async def get_config(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        text = "\n".join(f"{k}={v}" for k, v in sorted(self._config_view().items())) + "\n"
        return request.response(ResponseCode.SUCCESS, body=text.encode())

    async def update_config(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        try:
            updates = _parse_properties_text(request.body.decode())
        except (UnicodeDecodeError, ValueError) as exc:
            return request.response(ResponseCode.SYSTEM_ERROR, f"bad config body: {exc}")
        try:
            self._update_config(updates)  # which keys and values are accepted: broker.runtimeconfig
        except runtimeconfig.ConfigUpdateError as exc:
            code = ResponseCode.NO_PERMISSION if exc.blacklisted else ResponseCode.SYSTEM_ERROR
            return request.response(code, str(exc))
        await self._register_now()
        return request.response(ResponseCode.SUCCESS)

    # --- consumption ----------------------------------------------------------------------

    def _mq(self, topic: str, queue_id: int) -> dict[str, Any]:
        return {"brokerName": self._broker_name, "queueId": queue_id, "topic": topic}

    async def consume_stats(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        header = GetConsumeStatsRequestHeader.from_ext(request.ext_fields)
        topics = [header.topic] if header.topic else sorted(self._offsets.topics_of_group(header.consumer_group))
        entries = []
        for topic in topics:
            config = self._topics.get(topic)
            if config is None:
                continue
            for qid in range(config.read_queue_nums):
                broker_offset = self._store.get_max_offset(topic, qid)
                consumer_offset = max(self._offsets.query(header.consumer_group, topic, qid), 0)
                last = self._store.get_store_time(topic, qid, consumer_offset - 1) if consumer_offset > 0 else 0
                entries.append(
                    (
                        self._mq(topic, qid),
                        {"brokerOffset": broker_offset, "consumerOffset": consumer_offset, "lastTimestamp": last},
                    )
                )
        return request.response(ResponseCode.SUCCESS, body=mq_keyed_json(entries, "offsetTable", {"consumeTps": 0.0}))

    async def consumer_connections(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        header = ConsumerGroupHeader.from_ext(request.ext_fields)
        info = self._clients.consumer_group(header.consumer_group)
        if info is None:
            return request.response(
                ResponseCode.CONSUMER_NOT_ONLINE, f"the consumer group[{header.consumer_group}] not online"
            )
        body = {
            "connectionSet": [
                {"clientId": ch.client_id, "clientAddr": c.remote_addr, "language": ch.language, "version": ch.version}
                for c, ch in info.channels.items()
            ],
            "subscriptionTable": {t: s.to_json() for t, s in info.subscriptions.items()},
            "consumeType": info.consume_type,
            "messageModel": info.message_model,
            "consumeFromWhere": info.consume_from_where,
        }
        return request.response(ResponseCode.SUCCESS, body=orjson.dumps(body))

    async def consumed_by(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        header = TopicHeader.from_ext(request.ext_fields)
        groups = set(self._clients.groups_consuming(header.topic)) | self._offsets.groups_of_topic(header.topic)
        return request.response(ResponseCode.SUCCESS, body=orjson.dumps({"groupList": sorted(groups)}))

    async def all_offsets(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        return request.response(ResponseCode.SUCCESS, body=orjson.dumps(self._offsets.to_json()))

    async def reset_offset(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        """Move a group's committed offsets on a topic to the first message at or after a time.

        Offline groups simply resume from there. Online consumers are told with
        RESET_CONSUMER_CLIENT_OFFSET carrying the new offsets, as RocketMQ does.
        """
        header = ResetOffsetRequestHeader.from_ext(request.ext_fields)
        config = self._topics.get(header.topic)
        if config is None:
            return request.response(ResponseCode.TOPIC_NOT_EXIST, f"topic[{header.topic}] not exist")
        entries: list[tuple[dict[str, Any], Any]] = []
        for qid in range(config.read_queue_nums):
            if header.timestamp < 0:
                offset = self._store.get_max_offset(header.topic, qid)
            else:
                offset = self._store.get_offset_by_time(header.topic, qid, header.timestamp)
            current = self._offsets.query(header.group, header.topic, qid)
            if header.is_force or current < 0 or offset < current:
                self._offsets.commit(header.group, header.topic, qid, offset)
            entries.append((self._mq(header.topic, qid), offset))
        body = mq_keyed_json(entries, "offsetTable", {})
        info = self._clients.consumer_group(header.group)
        if info is not None:
            ext = {"topic": header.topic, "group": header.group, "timestamp": str(header.timestamp)}
            for member in list(info.channels):
                try:
                    await member.invoke_oneway(
                        RemotingCommand(code=RequestCode.RESET_CONSUMER_CLIENT_OFFSET, ext_fields=dict(ext), body=body)
                    )
                except Exception as exc:  # one dead member must not block the reset of the others
                    log.info("reset offset notify to %s failed: %s", member.remote_addr, exc)
        return request.response(ResponseCode.SUCCESS, body=body)

    async def clone_offset(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        header = CloneGroupOffsetRequestHeader.from_ext(request.ext_fields)
        topics = [header.topic] if header.topic else sorted(self._offsets.topics_of_group(header.src_group))
        for topic in topics:
            self._offsets.clone(header.src_group, header.dest_group, topic)
        return request.response(ResponseCode.SUCCESS)


def _parse_properties_text(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"line {raw!r} is not key=value")
        out[key.strip()] = value.strip()
    return out
