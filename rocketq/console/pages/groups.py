"""Consumer groups: the list with lag and TPS; one group's queues (lag per queue and the client
that owns each), clients and subscriptions, retry and DLQ depth, and its subscription group
config on each master; reset offsets by time, skip the backlog, update the group config, delete.

Lag is ``rocketq.admin.cluster.consumer_progress``: brokerOffset - consumerOffset per queue,
asked of every master. Which client owns a queue is what each online client reports in its
running info (GET_CONSUMER_RUNNING_INFO, relayed by a broker); a client that does not answer
leaves its queues without an owner rather than failing the page. Skipping the backlog is a reset
to now: every queue's consumer offset jumps to the first message stored after this moment.

The group config (consume enabled, consume from min, broadcast, retry queues, max retries, the
broker to consume from and the one to switch to when slow, notify on client changes) is what
``rocketq admin updateSubGroup`` writes: UPDATE_AND_CREATE_SUBSCRIPTIONGROUP to every master of
the chosen cluster (``rocketq.admin.cluster.create_group``). RocketMQ 4.9's group config has no
"orderly" field (orderly consumption is the client's choice, with queue locks on the broker).
"""

from __future__ import annotations

import asyncio
from typing import Any, Final

import aiohttp_jinja2
from aiohttp import web

from rocketq.admin import clientstatus, timestamps
from rocketq.admin import cluster as cluster_ops
from rocketq.admin.adminbodies import ConsumerConnection, GroupConfig
from rocketq.admin.client import AdminClient
from rocketq.admin.errors import AdminError, BodyError
from rocketq.admin.stats import MessageQueue
from rocketq.console import forms, keys
from rocketq.console.pages.common import audited, done, unless_missing
from rocketq.protocol import codes
from rocketq.protocol.codes import ResponseCode
from rocketq.protocol.sharedbodies import MAX_RETRY_QUEUE_NUMS, MAX_RETRY_TIMES
from rocketq.remoting.errors import RemotingError

routes = web.RouteTableDef()

MAX_CLIENTS_ASKED: Final = 32
"""Clients asked for their queues on one page view; a bigger group shows the rest without owner."""
MAX_BROKER_ID: Final = 2**31 - 1
"""brokerId and whichBrokerWhenConsumeSlowly are Java longs; ids past an int are nobody's."""


@routes.get("/groups")
@aiohttp_jinja2.template("groups.html")
async def group_list(request: web.Request) -> dict[str, Any]:
    summaries = await cluster_ops.group_summaries(request.app[keys.ADMIN])
    needle = request.query.get("q", "").strip()
    return {"groups": [s for s in summaries if needle.lower() in s.group.lower()], "q": needle}


async def connection_or_none(admin: AdminClient, group: str, masters: list[str]) -> ConsumerConnection | None:
    try:
        return await cluster_ops.consumer_connection(admin, group, masters=masters)
    except AdminError as exc:
        if exc.code != ResponseCode.CONSUMER_NOT_ONLINE:
            raise
        return None


async def queue_owners(admin: AdminClient, group: str, conn: ConsumerConnection | None) -> dict[MessageQueue, str]:
    if conn is None:
        return {}
    clients = [c.client_id for c in conn.connections[:MAX_CLIENTS_ASKED]]
    infos = await asyncio.gather(*(clientstatus.consumer_running_info(admin, group, c) for c in clients),
                                 return_exceptions=True)
    owners = {}
    for info in infos:
        if isinstance(info, (AdminError, BodyError, RemotingError)):
            continue  # a client that cannot say leaves its queues unowned on the page
        if isinstance(info, BaseException):
            raise info
        for q in info.queues:
            owners[MessageQueue(q.topic, q.broker_name, q.queue_id)] = info.client_id
    return owners


async def depth(admin: AdminClient, topic: str) -> int | None:
    """Messages held by a retry or DLQ topic; None when the topic does not exist (yet)."""
    status = await unless_missing(cluster_ops.topic_status(admin, topic))
    return status.total_messages if status else None


@routes.get("/groups/view")
@aiohttp_jinja2.template("group.html")
async def group_page(request: web.Request) -> dict[str, Any]:
    group = forms.group(request.query)
    admin = request.app[keys.ADMIN]
    masters = await cluster_ops.all_masters(admin)
    progress, conn, retry, dlq, info, configs = await asyncio.gather(
        cluster_ops.consumer_progress(admin, group, masters=masters), connection_or_none(admin, group, masters),
        depth(admin, codes.retry_topic(group)), depth(admin, codes.dlq_topic(group)), admin.cluster_info(),
        cluster_ops.group_configs(admin, group, masters))
    owners = await queue_owners(admin, group, conn)
    shown = next((c for c in configs.values() if c is not None), None) or GroupConfig(group)
    return {"group": group, "progress": progress, "conn": conn, "owners": owners, "retry": retry, "dlq": dlq,
            "topics": progress.topics() or [s.topic for s in (conn.subscriptions if conn else ())],
            "clusters": info.cluster_names(), "now": timestamps.now_ms(), "configs": configs, "shown": shown,
            "max_retry_queues": MAX_RETRY_QUEUE_NUMS, "max_retries": MAX_RETRY_TIMES}


async def reset(request: web.Request, group: str, topic: str, when: int, action: str) -> int:
    changed = await audited(request, action, f"{group} on {topic}",
                            cluster_ops.reset_offset_by_time(request.app[keys.ADMIN], topic, group, when))
    return len(changed)


@routes.post("/groups/reset")
async def reset_offset(request: web.Request) -> web.StreamResponse:
    form = await request.post()
    group, topic, when = forms.group(form), forms.topic(form), forms.moment(form, "time")
    count = await reset(request, group, topic, when, f"reset offset to {timestamps.human(when)}")
    return done(request, f"Reset {count} queue(s) of {topic} for {group} to {timestamps.human(when)}.",
                f"/groups/view?group={group}")


@routes.post("/groups/skip")
async def skip_backlog(request: web.Request) -> web.StreamResponse:
    form = await request.post()
    group, topic = forms.group(form), forms.topic(form)
    count = await reset(request, group, topic, timestamps.now_ms(), "skip backlog")
    return done(request, f"Skipped the backlog of {count} queue(s) of {topic} for {group}.",
                f"/groups/view?group={group}")


def group_config(form: forms.Form) -> GroupConfig:
    """The config the form asks for; an unticked checkbox is absent from a form, so it is False."""
    return GroupConfig(
        group_name=forms.group(form),
        consume_enable=forms.flag(form, "consume_enable"),
        consume_from_min_enable=forms.flag(form, "from_min"),
        consume_broadcast_enable=forms.flag(form, "broadcast"),
        retry_queue_nums=forms.integer(form, "retry_queues", low=0, high=MAX_RETRY_QUEUE_NUMS),
        retry_max_times=forms.integer(form, "retry_max", low=-1, high=MAX_RETRY_TIMES),
        broker_id=forms.integer(form, "broker_id", low=0, high=MAX_BROKER_ID),
        which_broker_when_consume_slowly=forms.integer(form, "slow_broker", low=0, high=MAX_BROKER_ID),
        notify_consumer_ids_changed_enable=forms.flag(form, "notify"),
    )


@routes.post("/groups/config")
async def update_group_config(request: web.Request) -> web.StreamResponse:
    form = await request.post()
    config, cluster = group_config(form), forms.text(form, "cluster")
    brokers = await audited(request, "update group config", config.group_name,
                            cluster_ops.create_group(request.app[keys.ADMIN], config, cluster=cluster))
    return done(request, f"Group config of {config.group_name} written to {len(brokers)} broker(s) of {cluster}.",
                f"/groups/view?group={config.group_name}")


@routes.post("/groups/delete")
async def delete_group(request: web.Request) -> web.StreamResponse:
    form = await request.post()
    group, cluster = forms.group(form), forms.text(form, "cluster")
    await audited(request, "delete group", group,
                  cluster_ops.delete_group(request.app[keys.ADMIN], group, cluster=cluster, clean_offset=True))
    return done(request, f"Group {group} deleted from {cluster}.", "/groups")
