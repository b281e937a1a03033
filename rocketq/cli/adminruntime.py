"""``rocketq admin`` commands about a running cluster: write permissions, one message by its
queue offset, producer and consumer clients, statistics. mqadmin's names and flags.

Registered on ``rocketq.cli.admin``'s group when that module is imported (it imports this one
last); the shared options (``-n``, ``--json``, ``--timeout``) come from its ``mqadmin_command``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import click

from rocketq.admin import adminbodies, clientstatus, dledger, perms, statsall, tables, views
from rocketq.admin import cluster as cluster_ops
from rocketq.admin.client import AdminClient
from rocketq.admin.errors import NotFoundError, UnavailableError
from rocketq.admin.stats import MessageQueue
from rocketq.cli.admin import ADDRESS, GROUP, TOPIC, Output, Session, _need_target, mqadmin_command, opt

# --- write permissions ------------------------------------------------------------------------


def _write_perm_command(name: str, verb: str, count_field: str, doc: str,
                        change: Callable[[AdminClient, str], Awaitable[dict[str, int]]]) -> None:
    """wipeWritePerm and addWritePerm: one request to every name server, a count per name server."""

    def run(s: Session, broker_name: str) -> None:
        async def work(admin: AdminClient) -> Output:
            counts = await change(admin, broker_name)
            lines = [f"{verb} write perm of broker[{broker_name}] in name server[{ns}] OK, {n}"
                     for ns, n in counts.items()]
            return Output("\n".join(lines), {"brokerName": broker_name, count_field: counts})

        s.run(work)

    run.__doc__ = doc  # before registering: the command's help is taken from it
    option = opt("-b", "--brokerName", "broker_name", required=True, help="broker group name, e.g. broker-a")
    mqadmin_command(name)(option(run))


_write_perm_command("wipeWritePerm", "wipe", "wipeTopicCount",
                    "Make a broker group read-only in every name server's routes (before taking it down).",
                    AdminClient.wipe_write_perm)
_write_perm_command("addWritePerm", "add", "addTopicCount",
                    "Make a broker group writable again in every name server's routes (undoes wipeWritePerm).",
                    AdminClient.add_write_perm)


@mqadmin_command("updateTopicPerm")
@opt("-b", "--brokerAddr", "broker_addr", type=ADDRESS, help="one master, host:port (wins over -c)")
@opt("-c", "--clusterName", "cluster", help="every master of this cluster")
@opt("-t", "--topic", type=TOPIC, required=True)
@opt("-p", "--perm", type=click.IntRange(0, 7), required=True, help="2 write only, 4 read only, 6 read-write")
def update_topic_perm(s: Session, broker_addr: str | None, cluster: str | None, topic: str, perm: int) -> None:
    """Change a topic's permission on one master or on every master of a cluster."""
    _need_target(broker_addr, cluster)

    async def work(admin: AdminClient) -> Output:
        changes = await perms.update_topic_perm(admin, topic, perm, broker_addr=broker_addr, cluster_name=cluster)
        lines = [f"update topic perm from {c.old_perm} to {c.new_perm} in {c.addr} success." if c.changed
                 else "new perm equals to the old one!" for c in changes]
        return Output("\n".join(lines), [{"brokerAddr": c.addr, "oldPerm": c.old_perm, "newPerm": c.new_perm,
                                          "changed": c.changed} for c in changes])

    s.run(work)


# --- messages ---------------------------------------------------------------------------------


@mqadmin_command("queryMsgByOffset")
@opt("-t", "--topic", type=TOPIC, required=True)
@opt("-b", "--brokerName", "broker_name", required=True)
@opt("-i", "--queueId", "queue_id", type=click.IntRange(0), required=True)
@opt("-o", "--offset", type=click.IntRange(0), required=True, help="the message's ConsumeQueue offset")
def query_msg_by_offset(s: Session, topic: str, broker_name: str, queue_id: int, offset: int) -> None:
    """Show the message at one queue offset (read from the group's master, nothing committed)."""
    adminbodies.check_topic(topic)

    async def work(admin: AdminClient) -> Output:
        route = await admin.topic_route(topic)
        addr = dict(route.master_addrs()).get(broker_name)
        if addr is None:
            raise UnavailableError(f"broker group {broker_name!r} of topic {topic!r} has no master online")
        pulled = await admin.pull(addr, MessageQueue(topic, broker_name, queue_id), offset, 1)
        if not pulled.messages:
            raise NotFoundError(f"no message at offset {offset} of {topic}/{broker_name}/{queue_id} "
                                f"({pulled.status}; the queue holds {pulled.min_offset}..{pulled.max_offset})")
        record = pulled.messages[0]
        return Output(views.message_block(record), views.message_json(record))

    s.run(work)


# --- clients ----------------------------------------------------------------------------------


@mqadmin_command("producerConnection")
@opt("-g", "--producerGroup", "group", type=GROUP, required=True)
@opt("-t", "--topic", type=TOPIC, required=True, help="a topic the group sends to (finds a broker to ask)")
def producer_connection(s: Session, group: str, topic: str) -> None:
    """Show the online producers of a group: client id, address, language, version."""

    async def work(admin: AdminClient) -> Output:
        conns = await clientstatus.producer_connection(admin, group, topic)
        rows = [[f"{i:04d}", c.client_id, c.client_addr, c.language, c.version] for i, c in enumerate(conns, 1)]
        return Output(tables.table(["No", "ClientId", "ClientAddr", "Language", "Version"], rows),
                      {"connectionSet": [{"clientId": c.client_id, "clientAddr": c.client_addr,
                                          "language": c.language, "version": c.version} for c in conns]})

    s.run(work)


@mqadmin_command("consumerStatus")
@opt("-g", "--consumerGroup", "group", type=GROUP, required=True)
@opt("-i", "--clientId", "client_id", help="one client's full running info")
@opt("-s", "--jstackEnable", "jstack", is_flag=True, help="with -i: the client's thread stacks too")
@opt("-b", "--brokerAddr", "broker_addr", type=ADDRESS, help="the broker to ask (default: a master of %RETRY%group)")
def consumer_status(s: Session, group: str, client_id: str | None, jstack: bool, broker_addr: str | None) -> None:
    """Ask a group's consumers (through a broker) for their running info."""

    async def work(admin: AdminClient) -> Output:
        if client_id is not None:
            one = await clientstatus.consumer_running_info(admin, group, client_id, broker_addr=broker_addr,
                                                           jstack=jstack)
            return Output(_running_info_text(one), one.to_json())
        conn = await cluster_ops.consumer_connection(admin, group)
        infos = [await clientstatus.consumer_running_info(admin, group, c.client_id, broker_addr=broker_addr)
                 for c in conn.connections]
        rows = [[f"{i:03d}", info.client_id, c.version, info.properties.get("PROP_CONSUMEORDERLY", ""),
                 len(info.queues)] for i, (c, info) in enumerate(zip(conn.connections, infos, strict=True), 1)]
        same = clientstatus.same_subscriptions(infos)
        verdict = ("Same subscription in the same group of consumer" if same
                   else "WARN: Different subscription in the same group of consumer!!!")
        text = tables.table(["Index", "ClientId", "Version", "Orderly", "Queues"], rows) + "\n\n" + verdict
        return Output(text, {"sameSubscription": same, "clients": [info.to_json() for info in infos]})

    s.run(work)


def _running_info_text(info: clientstatus.RunningInfo) -> str:
    props = "\n".join(f"{k:<40}: {v}" for k, v in sorted(info.properties.items()))
    subs = "\n".join(f"{topic:<40}: {expression}" for topic, expression in info.subscriptions)
    rows = [[q.topic, q.broker_name, q.queue_id, q.info.get("commitOffset"), q.info.get("cachedMsgCount"),
             q.info.get("locked")] for q in info.queues]
    queues = tables.table(["Topic", "Broker Name", "QID", "Commit Offset", "Cached", "Locked"], rows)
    text = f"#Consumer Properties#\n{props}\n\n#Consumer Subscription#\n{subs}\n\n#Consumer MQ Detail#\n{queues}"
    return text if info.jstack is None else f"{text}\n\n#Consumer jstack#\n{info.jstack}"


# --- statistics -------------------------------------------------------------------------------


@mqadmin_command("statsAll")
@opt("-t", "--topic", type=TOPIC, help="only this topic")
@opt("-a", "--activeTopic", "active", is_flag=True, help="only topics (and groups) with messages in the last day")
def stats_all(s: Session, topic: str | None, active: bool) -> None:
    """Per topic and consumer group: backlog, in/out TPS (last minute) and messages in the last day."""

    async def work(admin: AdminClient) -> Output:
        rows = await statsall.stats_all(admin, topic=topic, active_only=active)
        table = tables.table(
            ["Topic", "Consumer Group", "Accumulation", "InTPS", "OutTPS", "InMsg24Hour", "OutMsg24Hour"],
            [[r.topic, r.group, r.accumulation, f"{r.in_tps:.2f}", f"{r.out_tps:.2f}", r.in_msg_24h, r.out_msg_24h]
             for r in rows])
        return Output(table, [r.to_json() for r in rows])

    s.run(work)


# --- DLedger groups ---------------------------------------------------------------------------


@mqadmin_command("getDLedgerStatus")
@opt("-b", "--brokerAddr", "broker_addr", type=ADDRESS, help="one member, host:port (wins over -c)")
@opt("-c", "--clusterName", "cluster", help="every member of this cluster (default: of every cluster)")
def get_dledger_status(s: Session, broker_addr: str | None, cluster: str | None) -> None:
    """Show DLedger members: role, term, leader, commit index, each follower's match index."""

    async def work(admin: AdminClient) -> Output:
        if broker_addr:
            addrs = [broker_addr]
        else:
            info = await admin.cluster_info()
            addrs = info.all_addrs(cluster)
            if not addrs:
                raise NotFoundError(f"no broker registered{f' in cluster {cluster}' if cluster else ''}")
        members = [await admin.dledger_status(addr) for addr in addrs]
        return Output(tables.table(dledger.HEADERS, [dledger.row(m) for m in members]),
                      [m.to_json() for m in members])

    s.run(work)


@mqadmin_command("transferLeadership")
@opt("-b", "--brokerAddr", "broker_addr", type=ADDRESS, required=True, help="the group's leader, host:port")
@opt("-t", "--transfereeId", "transferee", required=True, help="the member to lead next (dLegerSelfId, e.g. n1)")
def transfer_leadership(s: Session, broker_addr: str, transferee: str) -> None:
    """Hand a DLedger group's leadership to another member (answered once it leads)."""

    async def work(admin: AdminClient) -> Output:
        await admin.transfer_leadership(broker_addr, transferee)
        return Output(f"leadership transferred from {broker_addr} to {transferee}",
                      {"from": broker_addr, "transfereeId": transferee})

    s.run(work)
