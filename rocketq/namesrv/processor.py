"""The name server's request handlers: one async function per request code, and the table.

Each handler parses its typed header (``rocketq.protocol.headers``), asks the route registry or
the KV config, and returns the response with RocketMQ's codes, remarks and JSON bodies. A
handler gets a ``Context`` with exactly what handlers use (routes, KV config, a clock, one
flag) and nothing else. Bad input never escapes as an exception: a malformed header, body or
registration becomes SYSTEM_ERROR with the reason as remark, and state is left as it was.

What it does not do: sockets, timers or expiry (``server``), or deciding routes (``routes``).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from rocketq.namesrv import registerbodies
from rocketq.namesrv.kvconfig import NAMESPACE_ORDER_TOPIC_CONFIG, KVConfig, KVConfigError
from rocketq.namesrv.routes import RegisterResult, Registration, RouteError, RouteTable
from rocketq.protocol import headers, masterepoch
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frames import RemotingCommand
from rocketq.protocol.headers import HeaderError
from rocketq.protocol.sharedbodies import BodyError
from rocketq.ratelimit import LogLimiter
from rocketq.remoting.connection import Connection, Handler

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Context:
    routes: RouteTable
    kv: KVConfig
    clock: Callable[[], float]
    """Monotonic seconds; what broker liveness is measured in."""
    order_message_enable: bool = False
    stale_masters: LogLimiter = dataclasses.field(default_factory=lambda: LogLimiter(log))
    """Refused stale-master registrations: one line per broker address and interval."""


NamesrvHandler = Callable[[Context, Connection, RemotingCommand], Awaitable[RemotingCommand]]
Observer = Callable[[int, int], None]
"""Told (request code, response code) after every request; the server counts them."""

_INVALID_INPUT = (HeaderError, BodyError, RouteError)


def handlers(ctx: Context, observe: Observer | None = None) -> dict[int, Handler]:
    """The table given to the RemotingServer: request code -> handler bound to ``ctx``."""
    return {int(code): _bind(ctx, fn, observe) for code, fn in TABLE.items()}


def _bind(ctx: Context, fn: NamesrvHandler, observe: Observer | None) -> Handler:
    async def handle(conn: Connection, request: RemotingCommand) -> RemotingCommand | None:
        try:
            response = await fn(ctx, conn, request)
        except _INVALID_INPUT as exc:
            response = request.response(ResponseCode.SYSTEM_ERROR, str(exc))
        except KVConfigError as exc:
            response = request.response(ResponseCode.SYSTEM_ERROR, f"kvConfig not saved: {exc}")
        if observe is not None:
            observe(request.code, response.code)
        return None if request.is_oneway else response

    return handle


def _ok(request: RemotingCommand, body: Any = None, header: headers.Header | None = None) -> RemotingCommand:
    return request.response(
        ResponseCode.SUCCESS,
        ext_fields=header.to_ext() if header is not None else None,
        body=b"" if body is None else registerbodies.encode(body),
    )


# --- brokers -------------------------------------------------------------------------------------


async def register_broker(ctx: Context, conn: Connection, request: RemotingCommand) -> RemotingCommand:
    header = headers.RegisterBrokerRequestHeader.from_ext(request.ext_fields)
    registerbodies.check_crc32(request.body, header.body_crc32)
    body = registerbodies.decode_register_body(
        request.body, compressed=header.compressed,
        wants_topics=lambda version: ctx.routes.wants_topics(
            header.broker_name, header.broker_addr, header.broker_id, version))
    registration = Registration(
        header.cluster_name, header.broker_addr, header.broker_name, header.broker_id, header.ha_server_addr, body,
        increment=bool(header.topic_increment), master_epoch=masterepoch.read(request.ext_fields))
    timeout = header.heartbeat_timeout_millis
    result = ctx.routes.register_broker(
        registration, now=ctx.clock(), connection=conn,
        timeout=timeout / 1000 if timeout is not None and timeout > 0 else None)
    answer = headers.RegisterBrokerResponseHeader(
        ha_server_addr=result.ha_server_addr, master_addr=result.master_addr)
    response = _ok(request, _kv_table(ctx.kv, NAMESPACE_ORDER_TOPIC_CONFIG), answer)
    if result.stale_master_epoch is not None:
        _refused_stale_master(ctx, registration, result)
        masterepoch.write(response.ext_fields, result.stale_master_epoch)
    return response


def _refused_stale_master(ctx: Context, reg: Registration, result: RegisterResult) -> None:
    """Still SUCCESS (the broker is heard; Java-style callers see a normal answer), but the
    stale master learns who holds brokerId 0 and at which epoch (rocketq.protocol.masterepoch)."""
    ctx.stale_masters.log(
        logging.WARNING, reg.broker_addr,
        "%s registered as master of %s at epoch %s, but %s is its master at epoch %d: brokerId 0 stays with %s",
        reg.broker_addr, reg.broker_name, reg.master_epoch, result.master_addr, result.stale_master_epoch,
        result.master_addr)


async def unregister_broker(ctx: Context, conn: Connection, request: RemotingCommand) -> RemotingCommand:
    header = headers.UnregisterBrokerRequestHeader.from_ext(request.ext_fields)
    ctx.routes.unregister_broker(header.cluster_name, header.broker_addr, header.broker_name, header.broker_id)
    return _ok(request)


async def query_data_version(ctx: Context, conn: Connection, request: RemotingCommand) -> RemotingCommand:
    header = headers.QueryDataVersionRequestHeader.from_ext(request.ext_fields)
    version = registerbodies.decode_data_version(request.body)
    changed = ctx.routes.is_topic_config_changed(header.broker_addr, version)
    if not changed:
        ctx.routes.touch(header.broker_addr, ctx.clock())
    stored = ctx.routes.data_version_of(header.broker_addr)
    return _ok(request, None if stored is None else stored.to_json(),
               headers.QueryDataVersionResponseHeader(changed=changed))


async def get_broker_cluster_info(ctx: Context, conn: Connection, request: RemotingCommand) -> RemotingCommand:
    return _ok(request, ctx.routes.cluster_info())


async def wipe_write_perm_of_broker(ctx: Context, conn: Connection, request: RemotingCommand) -> RemotingCommand:
    header = headers.BrokerNameHeader.from_ext(request.ext_fields)
    count = ctx.routes.wipe_write_perm(header.broker_name)
    return _ok(request, header=headers.WipeWritePermResponseHeader(wipe_topic_count=count))


async def add_write_perm_of_broker(ctx: Context, conn: Connection, request: RemotingCommand) -> RemotingCommand:
    header = headers.BrokerNameHeader.from_ext(request.ext_fields)
    count = ctx.routes.add_write_perm(header.broker_name)
    return _ok(request, header=headers.AddWritePermResponseHeader(add_topic_count=count))


# --- topics --------------------------------------------------------------------------------------


async def get_route_info_by_topic(ctx: Context, conn: Connection, request: RemotingCommand) -> RemotingCommand:
    topic = headers.TopicHeader.from_ext(request.ext_fields).topic
    route = ctx.routes.pick_route(topic)
    if route is None:
        return request.response(ResponseCode.TOPIC_NOT_EXIST,
                                f"No topic route info in name server for the topic: {topic}")
    if ctx.order_message_enable:
        conf = ctx.kv.get(NAMESPACE_ORDER_TOPIC_CONFIG, topic)
        if conf:
            route["orderTopicConf"] = conf
    return _ok(request, route)


async def get_all_topic_list(ctx: Context, conn: Connection, request: RemotingCommand) -> RemotingCommand:
    return _ok(request, {"topicList": ctx.routes.all_topics()})


async def get_topics_by_cluster(ctx: Context, conn: Connection, request: RemotingCommand) -> RemotingCommand:
    cluster = headers.GetTopicsByClusterRequestHeader.from_ext(request.ext_fields).cluster
    return _ok(request, {"topicList": ctx.routes.topics_by_cluster(cluster)})


async def get_system_topic_list(ctx: Context, conn: Connection, request: RemotingCommand) -> RemotingCommand:
    topics, broker_addr = ctx.routes.system_topics()
    body: dict[str, Any] = {"topicList": topics}
    if broker_addr is not None:
        body["brokerAddr"] = broker_addr
    return _ok(request, body)


async def delete_topic_in_namesrv(ctx: Context, conn: Connection, request: RemotingCommand) -> RemotingCommand:
    header = headers.DeleteTopicFromNamesrvRequestHeader.from_ext(request.ext_fields)
    ctx.routes.delete_topic(header.topic, header.cluster_name)
    return _ok(request)


# --- KV config -----------------------------------------------------------------------------------


def _kv_header(request: RemotingCommand) -> headers.KVConfigHeader:
    header = headers.KVConfigHeader.from_ext(request.ext_fields)
    if not header.namespace or not header.key:
        raise HeaderError("namespace and key must not be empty")
    return header


async def put_kv_config(ctx: Context, conn: Connection, request: RemotingCommand) -> RemotingCommand:
    header = _kv_header(request)
    if header.value is None:
        raise HeaderError("the custom field <value> is null")
    await ctx.kv.put(header.namespace, header.key, header.value)
    return _ok(request)


async def get_kv_config(ctx: Context, conn: Connection, request: RemotingCommand) -> RemotingCommand:
    header = _kv_header(request)
    value = ctx.kv.get(header.namespace, header.key)
    if value is None:
        return request.response(ResponseCode.QUERY_NOT_FOUND,
                                f"No config item, Namespace: {header.namespace} Key: {header.key}")
    return _ok(request, header=headers.KVConfigResponseHeader(value=value))


async def delete_kv_config(ctx: Context, conn: Connection, request: RemotingCommand) -> RemotingCommand:
    header = _kv_header(request)
    await ctx.kv.delete(header.namespace, header.key)
    return _ok(request)


async def get_kv_list_by_namespace(ctx: Context, conn: Connection, request: RemotingCommand) -> RemotingCommand:
    namespace = headers.NamespaceHeader.from_ext(request.ext_fields).namespace
    table = _kv_table(ctx.kv, namespace)
    if table is None:
        return request.response(ResponseCode.QUERY_NOT_FOUND, f"No config item, Namespace: {namespace}")
    return _ok(request, table)


def _kv_table(kv: KVConfig, namespace: str) -> dict[str, Any] | None:
    """RocketMQ's KVTable body, ``{"table": {key: value}}``, or None for an unknown namespace."""
    values = kv.namespace(namespace)
    return None if values is None else {"table": values}


TABLE: dict[RequestCode, NamesrvHandler] = {
    RequestCode.REGISTER_BROKER: register_broker,
    RequestCode.UNREGISTER_BROKER: unregister_broker,
    RequestCode.QUERY_DATA_VERSION: query_data_version,
    RequestCode.GET_BROKER_CLUSTER_INFO: get_broker_cluster_info,
    RequestCode.WIPE_WRITE_PERM_OF_BROKER: wipe_write_perm_of_broker,
    RequestCode.ADD_WRITE_PERM_OF_BROKER: add_write_perm_of_broker,
    RequestCode.GET_ROUTEINFO_BY_TOPIC: get_route_info_by_topic,
    RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER: get_all_topic_list,
    RequestCode.GET_TOPICS_BY_CLUSTER: get_topics_by_cluster,
    RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_NS: get_system_topic_list,
    RequestCode.DELETE_TOPIC_IN_NAMESRV: delete_topic_in_namesrv,
    RequestCode.PUT_KV_CONFIG: put_kv_config,
    RequestCode.GET_KV_CONFIG: get_kv_config,
    RequestCode.DELETE_KV_CONFIG: delete_kv_config,
    RequestCode.GET_KVLIST_BY_NAMESPACE: get_kv_list_by_namespace,
}
