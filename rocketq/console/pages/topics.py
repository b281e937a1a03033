"""Topics: the list (filtered by kind), create/update, delete, one topic's route, queues, consumers,
and sending a test message.

A topic's kind follows RocketMQ's naming: ``%RETRY%group`` and ``%DLQ%group`` are a group's retry
and dead-letter topics, system topics are ``namerules.SYSTEM_TOPICS`` and the ``rmq_sys_`` ones;
the rest are normal. Creating and updating send UPDATE_AND_CREATE_TOPIC to every master of the
chosen cluster (``rocketq.admin.cluster.create_topic``); an ordered topic also gets its
ORDER_TOPIC_CONFIG entry in the name servers (``brokerName:queues;...``, as ``rocketq admin
updateTopic -o true`` writes it), and unticking "ordered" on an update removes that entry (which
mqadmin leaves to ``deleteKvConfig``). Deleting removes the topic from every member of each
cluster holding it, then from the name servers.
"""

from __future__ import annotations

import asyncio
from typing import Any, Final

import aiohttp_jinja2
from aiohttp import web

from rocketq.admin import cluster as cluster_ops
from rocketq.admin import messages
from rocketq.admin.adminbodies import TopicConfig
from rocketq.admin.client import AdminClient
from rocketq.admin.errors import ArgumentError
from rocketq.console import forms, keys
from rocketq.console.pages.common import audited, done
from rocketq.protocol import codes, namerules
from rocketq.protocol.messagetypes import Message

routes = web.RouteTableDef()

KINDS: Final = ("normal", "retry", "dlq", "system", "all")
MAX_QUEUES: Final = 1024
"""Queue counts the form accepts (mqadmin has no limit; a broker refuses what it cannot hold)."""
MAX_TEST_BODY: Final = 64 * 1024


def kind_of(topic: str) -> str:
    if topic.startswith(codes.RETRY_GROUP_TOPIC_PREFIX):
        return "retry"
    if topic.startswith(codes.DLQ_GROUP_TOPIC_PREFIX):
        return "dlq"
    if namerules.is_system_topic(topic):
        return "system"
    return "normal"


@routes.get("/topics")
@aiohttp_jinja2.template("topics.html")
async def topic_list(request: web.Request) -> dict[str, Any]:
    admin = request.app[keys.ADMIN]
    kind = request.query.get("kind", "normal")
    if kind not in KINDS:
        kind = "normal"
    needle = request.query.get("q", "").strip()
    topics, info = await asyncio.gather(admin.all_topics(), admin.cluster_info())
    shown = sorted(t for t in topics if (kind == "all" or kind_of(t) == kind) and needle.lower() in t.lower())
    return {"topics": [(t, kind_of(t)) for t in shown], "kind": kind, "kinds": KINDS, "q": needle,
            "clusters": info.cluster_names()}


def topic_config(form: forms.Form) -> TopicConfig:
    return TopicConfig(
        topic_name=forms.topic(form),
        read_queue_nums=forms.integer(form, "read_queues", low=1, high=MAX_QUEUES, default=8),
        write_queue_nums=forms.integer(form, "write_queues", low=1, high=MAX_QUEUES, default=8),
        perm=forms.integer(form, "perm", low=0, high=7, default=6),
        order=forms.flag(form, "order"),
    )


@routes.post("/topics")
async def create_topic(request: web.Request) -> web.StreamResponse:
    form = await request.post()
    config = topic_config(form)
    cluster = forms.text(form, "cluster")
    if namerules.is_system_topic(config.topic_name):
        raise ArgumentError(f"{config.topic_name} is a system topic: the console does not change it")
    admin = request.app[keys.ADMIN]
    brokers = await audited(request, "create/update topic" + (" (ordered)" if config.order else ""),
                            config.topic_name, write_topic(admin, config, cluster))
    return done(request, f"Topic {config.topic_name} written to {len(brokers)} broker(s) of {cluster}.",
                f"/topics/view?topic={config.topic_name}")


async def write_topic(admin: AdminClient, config: TopicConfig, cluster: str) -> list[str]:
    """Create or update the topic on the cluster's masters, then its ordered-topic entry."""
    brokers = await cluster_ops.create_topic(admin, config, cluster=cluster)
    if config.order:
        await cluster_ops.set_topic_order(admin, config.topic_name, brokers, config.write_queue_nums)
    elif await cluster_ops.topic_order_conf(admin, config.topic_name) is not None:
        await cluster_ops.clear_topic_order(admin, config.topic_name)
    return brokers


@routes.post("/topics/delete")
async def delete_topic(request: web.Request) -> web.StreamResponse:
    form = await request.post()
    topic = forms.topic(form)
    if namerules.is_system_topic(topic):
        raise ArgumentError(f"{topic} is a system topic: the console does not delete it")
    admin = request.app[keys.ADMIN]
    info = await admin.cluster_info()
    clusters = await cluster_ops.topic_clusters(admin, topic, info)

    async def delete_everywhere() -> None:
        for cluster in clusters:
            await cluster_ops.delete_topic(admin, topic, cluster)

    await audited(request, "delete topic", topic, delete_everywhere())
    return done(request, f"Topic {topic} deleted from {', '.join(clusters)}.", "/topics")


@routes.post("/topics/send")
async def send_test_message(request: web.Request) -> web.StreamResponse:
    form = await request.post()
    topic = forms.topic(form)
    msg = Message(topic, forms.text(form, "body", max_length=MAX_TEST_BODY).encode())
    msg.tags = forms.text(form, "tag", required=False, max_length=255) or None
    msg.keys = forms.text(form, "keys", required=False, max_length=255).split()
    result = await audited(request, "send test message", topic, messages.send(request.app[keys.ADMIN], msg))
    queue = result.message_queue
    return done(request, f"Sent {result.msg_id} to {queue.broker_name} queue {queue.queue_id} "
                f"({result.status.name}).", f"/topics/view?topic={topic}")


async def consuming_groups(admin: AdminClient, topic: str, masters: list[tuple[str, str]]) -> list[str]:
    answers = await asyncio.gather(*(admin.consumed_by(addr, topic) for _, addr in masters))
    return sorted({group for answer in answers for group in answer})


@routes.get("/topics/view")
@aiohttp_jinja2.template("topic.html")
async def topic_page(request: web.Request) -> dict[str, Any]:
    topic = forms.topic(request.query)
    admin = request.app[keys.ADMIN]
    route, masters = await cluster_ops.route_masters(admin, topic)
    status, groups, info, order = await asyncio.gather(
        cluster_ops.topic_status(admin, topic), consuming_groups(admin, topic, masters), admin.cluster_info(),
        cluster_ops.topic_order_conf(admin, topic))
    first = route.queue_datas[0] if route.queue_datas else None
    return {"topic": topic, "kind": kind_of(topic), "route": route, "status": status, "groups": groups,
            "clusters": await cluster_ops.topic_clusters(admin, topic, info), "first": first, "order": order}
