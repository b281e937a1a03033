"""What ``rocketq admin`` shows: admin values as mqadmin-style text and as plain JSON data.

Each view has two forms. The text form follows mqadmin's output (its ``#Column`` headers, its
``key: value`` blocks) so people and scripts used to mqadmin read it the same way. The JSON form
(``--json``) is plain objects with RocketMQ's field names; maps keyed by a queue become lists of
objects that carry the queue's fields, since JSON keys are strings. Pure functions.
"""

from __future__ import annotations

import base64
import dataclasses
from typing import Any

from rocketq.admin import tables, timestamps
from rocketq.admin.adminbodies import ConsumerConnection, GroupConfig, TopicConfig, perm_name
from rocketq.admin.cluster import GroupSummary
from rocketq.admin.routes import TopicRoute
from rocketq.admin.stats import ConsumeStats, MessageQueue, TopicStats
from rocketq.protocol.messagetypes import MessageExt
from rocketq.protocol.traces import TraceRecord, TraceType


def host(value: tuple[str, int]) -> str:
    ip, port = value
    return f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"


# --- messages ---------------------------------------------------------------------------------


def body_text(record: MessageExt, charset: str = "utf-8") -> str:
    return record.body.decode(charset, errors="replace")


def message_block(record: MessageExt, charset: str = "utf-8") -> str:
    """``queryMsgById``'s block: every stored field, then the body."""
    return tables.pairs([
        ("OffsetID", record.offset_msg_id),
        ("Topic", record.topic),
        ("Tags", f"[{record.tags or ''}]"),
        ("Keys", f"[{' '.join(record.keys)}]"),
        ("Queue ID", record.queue_id),
        ("Queue Offset", record.queue_offset),
        ("CommitLog Offset", record.commit_log_offset),
        ("Reconsume Times", record.reconsume_times),
        ("Born Timestamp", timestamps.human(record.born_timestamp)),
        ("Store Timestamp", timestamps.human(record.store_timestamp)),
        ("Born Host", host(record.born_host)),
        ("Store Host", host(record.store_host)),
        ("System Flag", record.sys_flag),
        ("Properties", ", ".join(f"{k}={v}" for k, v in sorted(record.properties.items()))),
        ("Message ID", record.msg_id),
        ("Message Body", body_text(record, charset)),
    ], key_width=20)


def message_json(record: MessageExt) -> dict[str, Any]:
    out: dict[str, Any] = {
        "msgId": record.msg_id, "offsetMsgId": record.offset_msg_id, "topic": record.topic,
        "tags": record.tags, "keys": record.keys, "queueId": record.queue_id, "queueOffset": record.queue_offset,
        "commitLogOffset": record.commit_log_offset, "reconsumeTimes": record.reconsume_times,
        "bornTimestamp": record.born_timestamp, "storeTimestamp": record.store_timestamp,
        "bornHost": host(record.born_host), "storeHost": host(record.store_host), "sysFlag": record.sys_flag,
        "properties": dict(sorted(record.properties.items())), "storeSize": record.store_size,
    }
    try:
        out["body"] = record.body.decode("utf-8")
    except UnicodeDecodeError:
        out["bodyBase64"] = base64.b64encode(record.body).decode()
    return out


def message_line(queue: MessageQueue, record: MessageExt, charset: str, print_body: bool) -> str:
    """One ``printMsg`` line."""
    parts = [f"MSGID: {record.msg_id}", f"QUEUE: {queue.broker_name}/{queue.queue_id}",
             f"OFFSET: {record.queue_offset}", f"STORED: {timestamps.human(record.store_timestamp)}",
             f"TAGS: {record.tags or ''}", f"KEYS: {' '.join(record.keys)}"]
    if print_body:
        parts.append(f"BODY: {tables.cell(body_text(record, charset))}")
    return "  ".join(parts)


def key_rows(records: list[MessageExt]) -> str:
    """``queryMsgByKey``'s table."""
    return tables.table(["Message ID", "QID", "Offset", "Store Time"],
                        [[r.msg_id, r.queue_id, r.queue_offset, timestamps.human(r.store_timestamp)]
                         for r in records])


# --- topics -----------------------------------------------------------------------------------


def route_table(route: TopicRoute) -> str:
    rows = []
    for data in route.queue_datas:
        broker = route.broker(data.broker_name)
        addrs = ",".join(f"{i}:{a}" for i, a in broker.addrs) if broker else ""
        rows.append([broker.cluster if broker else "", data.broker_name, addrs, data.read_queue_nums,
                     data.write_queue_nums, perm_name(data.perm)])
    return tables.table(["ClusterName", "BrokerName", "BrokerAddrs", "ReadQueue", "WriteQueue", "Perm"], rows)


def route_json(route: TopicRoute) -> dict[str, Any]:
    """The TopicRouteData as the name server sent it."""
    return route.to_json()


def topic_status_table(table: TopicStats) -> str:
    return tables.table(["Broker Name", "QID", "Min Offset", "Max Offset", "Last Updated"],
                        [[mq.broker_name, mq.queue_id, o.min_offset, o.max_offset,
                          timestamps.human(o.last_update_timestamp)] for mq, o in table.offsets])


def topic_attributes_lines(by_broker: dict[str, dict[str, str]]) -> str:
    """Lines under topicStatus naming each broker's topic attributes (none: nothing, as mqadmin 4.x)."""
    return "".join(f"\n{name} attributes: " + ", ".join(f"{k}={v}" for k, v in sorted(attrs.items()))
                   for name, attrs in sorted(by_broker.items()))


def topic_status_json(table: TopicStats) -> list[dict[str, Any]]:
    return [{**mq.to_json(), "minOffset": o.min_offset, "maxOffset": o.max_offset,
             "lastUpdateTimestamp": o.last_update_timestamp} for mq, o in table.offsets]


def topic_config_line(config: TopicConfig, attributes: str | None = None) -> str:
    """mqadmin's TopicConfig line; ``attributes`` (the modification sent) shown when there is one."""
    shown = f", attributes={{{attributes}}}" if attributes else ""
    return (f"TopicConfig [topicName={config.topic_name}, readQueueNums={config.read_queue_nums}, "
            f"writeQueueNums={config.write_queue_nums}, perm={perm_name(config.perm)}, "
            f"topicFilterType={config.topic_filter_type}, topicSysFlag={config.topic_sys_flag}, "
            f"order={tables.cell(config.order)}{shown}]")


def group_config_line(config: GroupConfig) -> str:
    fields = ", ".join(f"{k}={tables.cell(v)}" for k, v in config.to_json().items())
    return f"SubscriptionGroupConfig [{fields}]"


# --- consumers --------------------------------------------------------------------------------


def progress_table(progress: ConsumeStats) -> str:
    rows = [[mq.topic, mq.broker_name, mq.queue_id, o.broker_offset, o.consumer_offset, o.diff,
             timestamps.human(o.last_timestamp)] for mq, o in progress.offsets]
    head = tables.table(["Topic", "Broker Name", "QID", "Broker Offset", "Consumer Offset", "Diff", "LastTime"], rows)
    return f"{head}\n\nConsume TPS: {progress.consume_tps:.2f}\nConsume Diff Total: {progress.total_diff}"


def progress_json(group: str, progress: ConsumeStats) -> dict[str, Any]:
    return {
        "group": group, "consumeTps": progress.consume_tps, "diffTotal": progress.total_diff,
        "offsets": [{**mq.to_json(), "brokerOffset": o.broker_offset, "consumerOffset": o.consumer_offset,
                     "diff": o.diff, "lastTimestamp": o.last_timestamp} for mq, o in progress.offsets],
    }


def summaries_table(rows: list[GroupSummary]) -> str:
    return tables.table(["Group", "Count", "Version", "Type", "Model", "TPS", "Diff Total"],
                        [[s.group, s.clients, "" if s.version is None else s.version, s.consume_type,
                          s.message_model, s.consume_tps, s.diff_total] for s in rows])


def summaries_json(rows: list[GroupSummary]) -> list[dict[str, Any]]:
    return [{"group": s.group, "count": s.clients, "version": s.version, "consumeType": s.consume_type,
             "messageModel": s.message_model, "consumeTps": s.consume_tps, "diffTotal": s.diff_total} for s in rows]


def connection_text(conn: ConsumerConnection) -> str:
    clients = tables.table(["ClientId", "ClientAddr", "Language", "Version"],
                           [[c.client_id, c.client_addr, c.language, c.version] for c in conn.connections])
    subs = tables.table(["Topic", "SubExpression"], [[s.topic, s.sub_string] for s in conn.subscriptions])
    tail = tables.pairs([("ConsumeType", conn.consume_type), ("MessageModel", conn.message_model),
                         ("ConsumeFromWhere", conn.consume_from_where)], key_width=17)
    return f"{clients}\n\nBelow is subscription:\n{subs}\n\n{tail}"


def connection_json(conn: ConsumerConnection) -> dict[str, Any]:
    return {
        "connectionSet": [{"clientId": c.client_id, "clientAddr": c.client_addr, "language": c.language,
                           "version": c.version} for c in conn.connections],
        "subscriptionTable": {s.topic: {"topic": s.topic, "subString": s.sub_string,
                                        "expressionType": s.expression_type} for s in conn.subscriptions},
        "consumeType": conn.consume_type, "messageModel": conn.message_model,
        "consumeFromWhere": conn.consume_from_where,
    }


def offsets_table(offsets: dict[MessageQueue, int]) -> str:
    return tables.table(["brokerName", "queueId", "offset"],
                        [[mq.broker_name, mq.queue_id, offset] for mq, offset in offsets.items()])


def offsets_json(offsets: dict[MessageQueue, int]) -> list[dict[str, Any]]:
    return [{**mq.to_json(), "offset": offset} for mq, offset in offsets.items()]


def trace_table(records: list[TraceRecord]) -> str:
    """``queryMsgTraceById``: one row per trace record, as mqadmin lists a message's trace."""
    before = {r.request_id: r for r in records if r.type is TraceType.SUB_BEFORE}
    rows = []
    for r in records:
        group = r.group or (before[r.request_id].group if r.request_id in before else "")
        when = timestamps.human(r.timestamp) if r.timestamp else ""
        status = "success" if r.success else "failed"
        if r.type is TraceType.SUB_BEFORE:
            status, cost = f"retry {r.retry_times}", ""
        else:
            cost = f"{r.cost_time}ms"
        rows.append([r.type.value, group, r.client_host or r.store_host, when, cost, status])
    return tables.table(["Type", "Group", "Host", "Time", "CostTimes", "Status"], rows)


def trace_json(records: list[TraceRecord]) -> list[dict[str, Any]]:
    return [{k: (v.value if isinstance(v, TraceType) else v) for k, v in dataclasses.asdict(r).items()}
            for r in records]
