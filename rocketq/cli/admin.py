"""``rocketq admin <command>``: mqadmin's commands, names and flags, over ``rocketq.admin``.

Every command takes ``-n host:port[;host:port]`` (or the NAMESRV_ADDR environment variable),
``--json`` for machine-readable output instead of mqadmin's tables, and ``--timeout`` seconds per
request. Flags keep mqadmin's letters (``-t`` topic, ``-c`` cluster, ``-b`` broker address,
``-g`` group, ``-r``/``-w`` queue counts, ``-p`` perm, ``-o`` order, ``-s`` time, ``-i`` message
id, ``-k`` key, ...). Times take ``now``, milliseconds, or mqadmin's ``yyyy-MM-dd#HH:mm:ss:SSS``.

Exit codes: 0 done; 2 bad arguments (click's usage error, or a cluster nobody knows); 1 the
servers refused (the RocketMQ code name is printed), could not be reached, or answered nonsense;
130 interrupted.
Never a traceback.
"""

from __future__ import annotations

import asyncio
import codecs
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Final, NoReturn

import click
import orjson

from rocketq.admin import adminbodies, clientstatus, deadletters, messages, replication, tables, timestamps, views
from rocketq.admin import cluster as cluster_ops
from rocketq.admin.adminbodies import GroupConfig, TopicConfig
from rocketq.admin.client import DEFAULT_TIMEOUT, AdminClient
from rocketq.admin.errors import AdminError, ArgumentError, BodyError, NotFoundError, UnavailableError
from rocketq.protocol import codes, topicattributes, traces
from rocketq.protocol.messagetypes import Message
from rocketq.remoting.client import split_addr
from rocketq.remoting.errors import RemotingError

EXIT_FAILED: Final = 1
EXIT_INTERRUPTED: Final = 130


@dataclass(frozen=True, slots=True)
class Output:
    text: str
    data: Any


Work = Callable[[AdminClient], Awaitable[Output | None]]


@dataclass(frozen=True, slots=True)
class Credentials:
    """An ACL account for signing (rocketq/acl/signing.py); empty: requests are not signed."""

    access_key: str = ""
    secret_key: str = field(default="", repr=False)
    security_token: str = field(default="", repr=False)


CREDENTIAL_OPTIONS = (
    # long names only: mqadmin's -a and -s already mean other things in some commands; the
    # environment keeps the secret out of the process list
    click.Option(["--accessKey", "access_key"], envvar="ROCKETQ_ACCESS_KEY", default="",
                 help="ACL access key: sign every request (or ROCKETQ_ACCESS_KEY)"),
    click.Option(["--secretKey", "secret_key"], envvar="ROCKETQ_SECRET_KEY", default="",
                 help="ACL secret key (or ROCKETQ_SECRET_KEY)"),
    click.Option(["--securityToken", "security_token"], envvar="ROCKETQ_SECURITY_TOKEN", default="",
                 help="optional ACL security token (or ROCKETQ_SECURITY_TOKEN)"),
)


@dataclass(frozen=True, slots=True)
class Session:
    """The options every command shares, and how a command runs."""

    namesrv_addr: str
    as_json: bool
    timeout: float
    credentials: Credentials = field(default_factory=Credentials)

    def run(self, work: Work) -> None:
        try:
            output = asyncio.run(self._run(work))
        except ArgumentError as exc:
            raise click.UsageError(str(exc)) from None
        except AdminError as exc:
            _fail(f"the server refused: {exc}")
        except (UnavailableError, NotFoundError, BodyError) as exc:
            _fail(str(exc))
        except RemotingError as exc:
            _fail(f"{type(exc).__name__}: {exc}")
        except KeyboardInterrupt:
            _fail("interrupted", EXIT_INTERRUPTED)
        except Exception as exc:  # a bug here must still read as one line, not a traceback
            _fail(f"internal error, please report: {type(exc).__name__}: {exc}")
        if output is not None:
            self.emit(output)

    async def _run(self, work: Work) -> Output | None:
        async with AdminClient(self.namesrv_addr, timeout=self.timeout, access_key=self.credentials.access_key,
                               secret_key=self.credentials.secret_key,
                               security_token=self.credentials.security_token) as admin:
            return await work(admin)

    def emit(self, output: Output) -> None:
        if self.as_json:
            click.echo(orjson.dumps(output.data, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode())
        else:
            click.echo(output.text)


def _fail(message: str, code: int = EXIT_FAILED) -> NoReturn:
    click.echo(f"error: {message}", err=True)
    sys.exit(code)


# --- option types -----------------------------------------------------------------------------


class Timestamp(click.ParamType):
    name = "time"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            return value
        try:
            return timestamps.parse(str(value))
        except timestamps.TimestampError as exc:
            self.fail(str(exc), param, ctx)


class Address(click.ParamType):
    name = "host:port"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        try:
            split_addr(str(value))
        except RemotingError as exc:
            self.fail(str(exc), param, ctx)
        return str(value).strip()


class Name(click.ParamType):
    """A topic or group name, checked as RocketMQ checks it."""

    def __init__(self, kind: str) -> None:
        self.name = kind
        self._check = adminbodies.check_topic if kind == "topic" else adminbodies.check_group

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        try:
            return self._check(str(value))
        except ArgumentError as exc:
            self.fail(str(exc), param, ctx)


class Charset(click.ParamType):
    name = "charset"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        try:
            return codecs.lookup(str(value)).name
        except LookupError:
            self.fail(f"unknown charset {value!r}", param, ctx)


class Attributes(click.ParamType):
    """A topic attribute modification (``+message.type=FIFO,-key``), its form checked before sending."""

    name = "attributes"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        try:
            topicattributes.parse_modification(str(value))
        except topicattributes.TopicAttributeError as exc:
            self.fail(str(exc), param, ctx)
        return str(value)


TOPIC = Name("topic")
GROUP = Name("group")
ATTRIBUTES = Attributes()
ADDRESS = Address()
TIME = Timestamp()
QUEUE_NUMS = click.IntRange(1, adminbodies.MAX_QUEUE_NUMS)


def mqadmin_command(name: str) -> Callable[[Callable[..., None]], click.Command]:
    """Register a command with the shared options, handing it a ``Session`` first."""

    def decorate(fn: Callable[..., None]) -> click.Command:
        def wrapper(namesrv_addr: str, as_json: bool, timeout: float, access_key: str, secret_key: str,
                    security_token: str, **kwargs: Any) -> None:
            if bool(access_key) != bool(secret_key):
                raise click.UsageError("--accessKey and --secretKey go together")
            credentials = Credentials(access_key, secret_key, security_token)
            try:
                fn(Session(namesrv_addr, as_json, timeout, credentials), **kwargs)
            except ArgumentError as exc:
                raise click.UsageError(str(exc)) from None

        wrapper.__doc__ = fn.__doc__
        params = [
            click.Option(["-n", "--namesrvAddr", "namesrv_addr"], envvar="NAMESRV_ADDR", required=True,
                         help="name servers, host:port[;host:port] (or NAMESRV_ADDR)"),
            click.Option(["--json", "as_json"], is_flag=True, help="machine-readable JSON output"),
            click.Option(["--timeout"], type=click.FloatRange(0.1, 600), default=DEFAULT_TIMEOUT, show_default=True,
                         help="seconds to wait for each answer"),
            *CREDENTIAL_OPTIONS,
        ]
        cmd = click.command(name)(wrapper)
        cmd.params = params + list(getattr(fn, "__click_params__", []))[::-1]
        command.add_command(cmd)
        return cmd

    return decorate


@click.group("admin", context_settings={"help_option_names": ["-h", "--help"]})
def command() -> None:
    """mqadmin's commands: topics, groups, brokers, offsets and messages of a cluster."""


def opt(*decls: str, **attrs: Any) -> Callable[[Callable[..., None]], Callable[..., None]]:
    return click.option(*decls, **attrs)


def broker_or_cluster(fn: Callable[..., None]) -> Callable[..., None]:
    fn = opt("-c", "--clusterName", "cluster", help="every master of this cluster")(fn)
    return opt("-b", "--brokerAddr", "broker_addr", type=ADDRESS, help="one broker, host:port (wins over -c)")(fn)


def _need_target(broker_addr: str | None, cluster_name: str | None) -> None:
    if not broker_addr and not cluster_name:
        raise click.UsageError("give a broker address (-b) or a cluster name (-c)")


# --- topics -----------------------------------------------------------------------------------


@mqadmin_command("updateTopic")
@broker_or_cluster
@opt("-t", "--topic", type=TOPIC, required=True)
@opt("-r", "--readQueueNums", "read_queue_nums", type=QUEUE_NUMS, default=8, show_default=True)
@opt("-w", "--writeQueueNums", "write_queue_nums", type=QUEUE_NUMS, default=8, show_default=True)
@opt("-p", "--perm", type=click.IntRange(0, 7), default=codes.PERM_READ_WRITE, show_default=True,
     help="2 write, 4 read, 6 read+write")
@opt("-o", "--order", type=click.BOOL, default=False, show_default=True, help="ordered topic (true|false)")
@opt("-a", "--attributes", type=ATTRIBUTES, help="RocketMQ 5 topic attributes: +message.type=FIFO, -key, ...")
def update_topic(s: Session, broker_addr: str | None, cluster: str | None, topic: str, read_queue_nums: int,
                 write_queue_nums: int, perm: int, order: bool, attributes: str | None) -> None:
    """Create or update a topic on one broker or on every master of a cluster."""
    _need_target(broker_addr, cluster)
    config = TopicConfig(topic, read_queue_nums, write_queue_nums, perm, order=order).validate()

    async def work(admin: AdminClient) -> Output:
        addrs = await cluster_ops.create_topic(admin, config, broker_addr=broker_addr, cluster=cluster,
                                               attributes=attributes)
        lines = [f"create topic to {addr} success." for addr in addrs]
        if order:
            conf = await cluster_ops.set_topic_order(admin, topic, addrs, write_queue_nums)
            lines.append(f"set cluster orderConf. isOrder={tables.cell(order)}, orderConf=[{conf}]")
        lines.append(views.topic_config_line(config, attributes))
        return Output("\n".join(lines), {"brokers": addrs, "topicConfig": config.to_json(),
                                         **({"attributes": attributes} if attributes else {})})

    s.run(work)



@mqadmin_command("deleteTopic")
@opt("-t", "--topic", type=TOPIC, required=True)
@opt("-c", "--clusterName", "cluster", required=True)
def delete_topic(s: Session, topic: str, cluster: str) -> None:
    """Delete a topic from every broker of a cluster and from the name servers."""

    async def work(admin: AdminClient) -> Output:
        addrs = await cluster_ops.delete_topic(admin, topic, cluster)
        return Output(f"delete topic [{topic}] from cluster [{cluster}] success.\n"
                      f"delete topic [{topic}] from NameServer success.", {"topic": topic, "brokers": addrs})

    s.run(work)


@mqadmin_command("topicList")
@opt("-c", "--clusterModel", "cluster_model", is_flag=True, help="also show each topic's cluster and groups")
def topic_list(s: Session, cluster_model: bool) -> None:
    """List every topic the name servers know."""

    async def work(admin: AdminClient) -> Output:
        topics = await admin.all_topics()
        if not cluster_model:
            return Output("\n".join(topics), list(topics))
        info = await admin.cluster_info()
        rows: list[list[str]] = []
        for topic in topics:
            if topic.startswith((codes.RETRY_GROUP_TOPIC_PREFIX, codes.DLQ_GROUP_TOPIC_PREFIX)):
                continue
            groups = await _consumers_of(admin, topic)
            for name in await cluster_ops.topic_clusters(admin, topic, info) or [""]:
                rows.extend([name, topic, group] for group in groups or [""])
        data = [{"cluster": c, "topic": t, "group": g} for c, t, g in rows]
        return Output(tables.table(["Cluster Name", "Topic", "Consumer Group"], rows), data)

    s.run(work)


async def _consumers_of(admin: AdminClient, topic: str) -> list[str]:
    route = await admin.topic_route(topic)
    groups: set[str] = set()
    for _, addr in route.master_addrs():
        groups.update(await admin.consumed_by(addr, topic))
    return sorted(groups)


@mqadmin_command("topicRoute")
@opt("-t", "--topic", type=TOPIC, required=True)
def topic_route(s: Session, topic: str) -> None:
    """Show which broker groups hold a topic, with their addresses and queues."""

    async def work(admin: AdminClient) -> Output:
        route = await admin.topic_route(topic)
        return Output(views.route_table(route), views.route_json(route))

    s.run(work)


@mqadmin_command("topicStatus")
@opt("-t", "--topic", type=TOPIC, required=True)
def topic_status(s: Session, topic: str) -> None:
    """Show min/max offset and last store time of every queue of a topic."""

    async def work(admin: AdminClient) -> Output:
        table = await cluster_ops.topic_status(admin, topic)
        attributes = await cluster_ops.topic_attributes(admin, topic)  # RocketMQ 5's message.type, ...
        return Output(views.topic_status_table(table) + views.topic_attributes_lines(attributes),
                      views.topic_status_json(table))

    s.run(work)


# --- cluster and brokers ----------------------------------------------------------------------


@mqadmin_command("clusterList")
@opt("-c", "--clusterName", "cluster", help="only this cluster")
def cluster_list(s: Session, cluster: str | None) -> None:
    """List every broker of every cluster with its role, version and message totals."""

    async def work(admin: AdminClient) -> Output:
        info = await admin.cluster_info()
        if cluster is not None and cluster not in info.cluster_names():
            raise ArgumentError(f"cluster {cluster!r} is not known to the name server")
        rows, data = [], []
        for name, groups in info.clusters:
            if cluster is not None and name != cluster:
                continue
            for group in groups:
                broker = info.broker(group)
                for broker_id, addr in broker.addrs if broker else ():
                    runtime = await _runtime_or_none(admin, addr)
                    row = _cluster_row(name, group, broker_id, addr, runtime)
                    rows.append(row)
                    data.append({"cluster": name, "brokerName": group, "brokerId": broker_id, "addr": addr,
                                 "online": runtime is not None, "runtime": runtime or {}})
        headers = ["Cluster Name", "Broker Name", "BID", "Addr", "Version", "Role", "Perm",
                   "InTotalToday", "OutTotalToday", "Replication"]
        return Output(tables.table(headers, rows), data)

    s.run(work)


async def _runtime_or_none(admin: AdminClient, addr: str) -> dict[str, str] | None:
    """A broker the name server still lists may be gone; show that instead of failing the list."""
    try:
        return await admin.runtime_info(addr)
    except (RemotingError, AdminError, BodyError):
        return None


def _cluster_row(cluster: str, group: str, broker_id: int, addr: str, runtime: dict[str, str] | None) -> list[Any]:
    if runtime is None:
        return [cluster, group, broker_id, addr, "unreachable", "", "", "", "", ""]
    perm = runtime.get("brokerPermission", "")
    return [cluster, group, broker_id, addr, runtime.get("brokerVersionDesc", ""), runtime.get("brokerRole", ""),
            adminbodies.perm_name(int(perm)) if perm.isdigit() else perm,
            runtime.get("msgPutTotalTodayNow", ""), runtime.get("msgGetTotalTodayNow", ""),
            replication.replication_text(runtime)]


@mqadmin_command("brokerStatus")
@broker_or_cluster
def broker_status(s: Session, broker_addr: str | None, cluster: str | None) -> None:
    """Show a broker's runtime information (every member of a cluster with -c)."""
    _need_target(broker_addr, cluster)

    async def work(admin: AdminClient) -> Output:
        addrs = await cluster_ops.targets(admin, broker_addr, cluster, with_slaves=True)
        infos = {addr: await admin.runtime_info(addr) for addr in addrs}
        if len(infos) == 1:
            text = tables.pairs(next(iter(infos.values())).items())
        else:
            text = "\n".join(f"============{addr}============\n{tables.pairs(info.items())}"
                             for addr, info in infos.items())
        return Output(text, infos)

    s.run(work)


@mqadmin_command("updateBrokerConfig")
@broker_or_cluster
@opt("-k", "--key", required=True, help="broker.conf key, e.g. brokerPermission")
@opt("-v", "--value", required=True)
def update_broker_config(s: Session, broker_addr: str | None, cluster: str | None, key: str, value: str) -> None:
    """Change a broker setting at runtime on one broker or every master of a cluster."""
    _need_target(broker_addr, cluster)
    try:
        adminbodies.properties_text({key: value})
    except ArgumentError as exc:
        raise click.BadParameter(str(exc), param_hint="-k/-v") from None

    async def work(admin: AdminClient) -> Output:
        addrs = await cluster_ops.update_broker_config(admin, {key: value}, broker_addr=broker_addr, cluster=cluster)
        return Output("\n".join(f"update broker config success, {addr}" for addr in addrs),
                      {"brokers": addrs, "key": key, "value": value})

    s.run(work)


@mqadmin_command("electMaster")
@opt("-b", "--brokerAddr", "broker_addr", type=ADDRESS, required=True, help="the slave to promote, host:port")
@opt("--role", type=click.Choice(["ASYNC_MASTER", "SYNC_MASTER"]), default="ASYNC_MASTER", show_default=True)
@opt("--epoch-above", "epoch_above", type=click.IntRange(min=0), default=0, show_default=True,
     help="number the new master epoch past this one (retrying a promotion that failed midway)")
def elect_master(s: Session, broker_addr: str, role: str, epoch_above: int) -> None:
    """Make a slave the master of its group (brokerId 0) at runtime (docs/ha.md, Promotion)."""

    async def work(admin: AdminClient) -> Output:
        await admin.change_broker_role(broker_addr, role, epoch_above=epoch_above)
        epoch = (await admin.runtime_info(broker_addr)).get("haEpoch", "")
        number = int(epoch) if epoch.isdigit() else None
        return Output(f"{broker_addr} is now {role} (brokerId 0, master epoch {epoch or '?'})",
                      {"broker": broker_addr, "brokerRole": role, "masterEpoch": number})

    s.run(work)


@mqadmin_command("changeToSlave")
@opt("-b", "--brokerAddr", "broker_addr", type=ADDRESS, required=True, help="the broker to demote, host:port")
@opt("-i", "--brokerId", "broker_id", type=click.IntRange(min=1), required=True, help="its slave id")
@opt("--master", "master", type=ADDRESS, help="the new master's HA host:port (default: from the name server)")
def change_to_slave(s: Session, broker_addr: str, broker_id: int, master: str | None) -> None:
    """Make a (fenced) master a slave of its group's new master at runtime (docs/ha.md, Promotion)."""

    async def work(admin: AdminClient) -> Output:
        await admin.change_broker_role(broker_addr, "SLAVE", broker_id, master or "")
        return Output(f"{broker_addr} is now SLAVE (brokerId {broker_id})",
                      {"broker": broker_addr, "brokerRole": "SLAVE", "brokerId": broker_id})

    s.run(work)


@mqadmin_command("getBrokerConfig")
@broker_or_cluster
def get_broker_config(s: Session, broker_addr: str | None, cluster: str | None) -> None:
    """Show a broker's configuration (every member of a cluster with -c)."""
    _need_target(broker_addr, cluster)

    async def work(admin: AdminClient) -> Output:
        configs = await cluster_ops.broker_configs(admin, broker_addr=broker_addr, cluster=cluster)
        blocks = [f"============{addr}============\n" + "\n".join(f"{k:<50}=  {v}" for k, v in config.items())
                  for addr, config in configs.items()]
        return Output("\n".join(blocks), configs)

    s.run(work)


# --- subscription groups ----------------------------------------------------------------------


@mqadmin_command("updateSubGroup")
@broker_or_cluster
@opt("-g", "--groupName", "group", type=GROUP, required=True)
@opt("-s", "--consumeEnable", "consume_enable", type=click.BOOL, default=True, show_default=True)
@opt("-m", "--consumeFromMinEnable", "from_min", type=click.BOOL, default=False, show_default=True)
@opt("-d", "--consumeBroadcastEnable", "broadcast", type=click.BOOL, default=False, show_default=True)
@opt("-q", "--retryQueueNums", "retry_queues", type=click.IntRange(0, 64), default=1, show_default=True)
@opt("-r", "--retryMaxTimes", "retry_max", type=click.IntRange(-1, 64), default=16, show_default=True)
@opt("-i", "--brokerId", "broker_id", type=click.IntRange(0), default=codes.MASTER_ID, show_default=True,
     help="broker to consume from")
@opt("-w", "--whichBrokerWhenConsumeSlowly", "slow_broker", type=click.IntRange(0), default=1, show_default=True)
@opt("-a", "--notifyConsumerIdsChanged", "notify", type=click.BOOL, default=True, show_default=True)
@opt("-o", "--consumeMessageOrderly", "orderly", type=click.BOOL, default=False, show_default=True,
     help="RocketMQ 5: the group consumes FIFO (gRPC clients pop in order)")
def update_sub_group(s: Session, broker_addr: str | None, cluster: str | None, group: str, consume_enable: bool,
                     from_min: bool, broadcast: bool, retry_queues: int, retry_max: int, broker_id: int,
                     slow_broker: int, notify: bool, orderly: bool) -> None:
    """Create or update a subscription group on one broker or every master of a cluster."""
    _need_target(broker_addr, cluster)
    config = GroupConfig(group, consume_enable, from_min, broadcast, retry_queues, retry_max, broker_id,
                         slow_broker, notify, orderly).validate()

    async def work(admin: AdminClient) -> Output:
        addrs = await cluster_ops.create_group(admin, config, broker_addr=broker_addr, cluster=cluster)
        lines = [f"create subscription group to {addr} success." for addr in addrs]
        return Output("\n".join([*lines, views.group_config_line(config)]),
                      {"brokers": addrs, "subscriptionGroupConfig": config.to_json()})

    s.run(work)


@mqadmin_command("deleteSubGroup")
@broker_or_cluster
@opt("-g", "--groupName", "group", type=GROUP, required=True)
@opt("-r", "--removeOffset", "remove_offset", is_flag=True, help="also drop the group's committed offsets")
def delete_sub_group(s: Session, broker_addr: str | None, cluster: str | None, group: str,
                     remove_offset: bool) -> None:
    """Delete a subscription group (with -c also its %RETRY% and %DLQ% topics)."""
    _need_target(broker_addr, cluster)

    async def work(admin: AdminClient) -> Output:
        addrs = await cluster_ops.delete_group(admin, group, broker_addr=broker_addr, cluster=cluster,
                                               clean_offset=remove_offset)
        lines = [f"delete subscription group [{group}] from broker [{addr}] success." for addr in addrs]
        if cluster and not broker_addr:
            for topic in (codes.retry_topic(group), codes.dlq_topic(group)):
                await cluster_ops.delete_topic(admin, topic, cluster)
                lines.append(f"delete topic [{topic}] from cluster [{cluster}] success.")
        return Output("\n".join(lines), {"group": group, "brokers": addrs})

    s.run(work)


@mqadmin_command("consumerProgress")
@opt("-g", "--groupName", "group", type=GROUP, help="one group's queues; without it, a line per group")
@opt("-t", "--topicName", "topic", type=TOPIC, help="only this topic of the group")
def consumer_progress(s: Session, group: str | None, topic: str | None) -> None:
    """Show how far consumer groups are behind (brokerOffset - consumerOffset)."""
    if topic is not None and group is None:
        raise click.UsageError("-t needs -g")

    async def work(admin: AdminClient) -> Output:
        if group is None:
            rows = await cluster_ops.group_summaries(admin)
            return Output(views.summaries_table(rows), views.summaries_json(rows))
        progress = await cluster_ops.consumer_progress(admin, group, topic)
        if not progress.offsets:
            raise NotFoundError(f"no broker has consume stats of group {group}: "
                                   "it has not consumed (or committed) anything yet")
        return Output(views.progress_table(progress), views.progress_json(group, progress))

    s.run(work)


@mqadmin_command("consumerConnection")
@opt("-g", "--consumerGroup", "group", type=GROUP, required=True)
def consumer_connection(s: Session, group: str) -> None:
    """Show the online clients of a consumer group and what they subscribe to."""

    async def work(admin: AdminClient) -> Output:
        conn = await cluster_ops.consumer_connection(admin, group)
        return Output(views.connection_text(conn), views.connection_json(conn))

    s.run(work)


# --- offsets ----------------------------------------------------------------------------------


@mqadmin_command("resetOffsetByTime")
@opt("-g", "--group", type=GROUP, required=True)
@opt("-t", "--topic", type=TOPIC, required=True)
@opt("-s", "--timestamp", type=TIME, required=True, help="now, ms, or yyyy-MM-dd#HH:mm:ss:SSS; -1 = the end")
@opt("-f", "--force", type=click.BOOL, default=True, show_default=True,
     help="also move offsets forward past unconsumed messages")
def reset_offset_by_time(s: Session, group: str, topic: str, timestamp: int, force: bool) -> None:
    """Move a group's offsets on a topic to the first message stored at or after a time."""

    async def work(admin: AdminClient) -> Output:
        offsets = await cluster_ops.reset_offset_by_time(admin, topic, group, timestamp, force=force)
        head = (f"rollback consumer offset by specified group[{group}], topic[{topic}], "
                f"force[{tables.cell(force)}], timestamp(string)[{timestamps.human(timestamp)}], "
                f"timestamp(long)[{timestamp}]")
        return Output(f"{head}\n{views.offsets_table(offsets)}", views.offsets_json(offsets))

    s.run(work)


@mqadmin_command("cloneGroupOffset")
@opt("-s", "--srcGroup", "src_group", type=GROUP, required=True)
@opt("-d", "--destGroup", "dest_group", type=GROUP, required=True)
@opt("-t", "--topic", type=TOPIC, required=True)
def clone_group_offset(s: Session, src_group: str, dest_group: str, topic: str) -> None:
    """Copy one group's committed offsets on a topic to another group."""

    async def work(admin: AdminClient) -> Output:
        addrs = await cluster_ops.clone_group_offset(admin, src_group, dest_group, topic)
        return Output(f"clone group offset success. srcGroup[{src_group}], destGroup=[{dest_group}], topic[{topic}]",
                      {"srcGroup": src_group, "destGroup": dest_group, "topic": topic, "brokers": addrs})

    s.run(work)


# --- messages ---------------------------------------------------------------------------------


@mqadmin_command("queryMsgById")
@opt("-i", "--msgId", "msg_ids", required=True, help="offset message id(s), comma-separated")
@opt("-g", "--consumerGroup", "group", type=GROUP, help="with -d: have that consumer consume the message now")
@opt("-d", "--clientId", "client_id", help="with -g: the consumer (CONSUME_MESSAGE_DIRECTLY)")
def query_msg_by_id(s: Session, msg_ids: str, group: str | None, client_id: str | None) -> None:
    """Show a message by its offset message id (the broker's id), or have a consumer consume it (-g, -d)."""
    ids = [i.strip() for i in msg_ids.split(",") if i.strip()]
    if not ids:
        raise click.BadParameter("no message id given", param_hint="-i")
    if (group is None) != (client_id is None):
        raise click.BadParameter("-g and -d go together", param_hint="-g/-d")

    async def work(admin: AdminClient) -> Output:
        if group is not None and client_id is not None:
            results = [await clientstatus.consume_message_directly(admin, group, client_id, i) for i in ids]
            rows = [[i, r.consume_result, r.remark, r.spent_time_mills] for i, r in zip(ids, results, strict=True)]
            return Output(tables.table(["MsgId", "ConsumeResult", "Remark", "SpentTimeMills"], rows),
                          [r.to_json() for r in results])
        records = [await messages.view_by_offset_id(admin, i) for i in ids]
        return Output("\n\n".join(views.message_block(r) for r in records), [views.message_json(r) for r in records])

    s.run(work)


@mqadmin_command("queryMsgByKey")
@opt("-t", "--topic", type=TOPIC, required=True)
@opt("-k", "--msgKey", "key", required=True)
@opt("-b", "--beginTimestamp", "begin", type=TIME, default=0, help="stored at or after (default: any time)")
@opt("-e", "--endTimestamp", "end", type=TIME, help="stored at or before (default: now)")
@opt("-c", "--maxNum", "max_num", type=click.IntRange(1, 64), default=64, show_default=True)
def query_msg_by_key(s: Session, topic: str, key: str, begin: int, end: int | None, max_num: int) -> None:
    """Find messages of a topic by one of their keys."""

    async def work(admin: AdminClient) -> Output:
        records = await messages.query_by_key(admin, topic, key, max_num=max_num, begin=begin, end=end)
        return Output(views.key_rows(records), [views.message_json(r) for r in records])

    s.run(work)


@mqadmin_command("queryMsgByUniqueKey")
@opt("-i", "--msgId", "msg_id", required=True, help="the producer's message id (UNIQ_KEY)")
@opt("-t", "--topic", type=TOPIC, required=True)
def query_msg_by_unique_key(s: Session, msg_id: str, topic: str) -> None:
    """Show a message by the id its producer gave it."""

    async def work(admin: AdminClient) -> Output:
        records = await messages.query_by_unique_key(admin, topic, msg_id.strip())
        if not records:
            raise NotFoundError(f"no message of topic {topic} has the unique key {msg_id}")
        return Output("\n\n".join(views.message_block(r) for r in records), [views.message_json(r) for r in records])

    s.run(work)


@mqadmin_command("queryMsgTraceById")
@opt("-i", "--msgId", "msg_id", required=True, help="the traced message's id (UNIQ_KEY)")
@opt("-t", "--traceTopic", "trace_topic", type=TOPIC, default=traces.DEFAULT_TRACE_TOPIC, show_default=True)
def query_msg_trace_by_id(s: Session, msg_id: str, trace_topic: str) -> None:
    """Show a message's trace: its Pub, SubBefore and SubAfter records."""

    async def work(admin: AdminClient) -> Output:
        records = await messages.query_trace(admin, msg_id.strip(), trace_topic)
        if not records:
            raise NotFoundError(f"no trace of message {msg_id} in {trace_topic}")
        return Output(views.trace_table(records), views.trace_json(records))

    s.run(work)


@mqadmin_command("sendMessage")
@opt("-t", "--topic", type=TOPIC, required=True)
@opt("-p", "--body", required=True, help="message body (text)")
@opt("-k", "--key", "keys", help="keys, space-separated")
@opt("-c", "--tags", help="tag")
@opt("-b", "--broker", "broker_name", help="broker name to send to")
@opt("-i", "--qid", "queue_id", type=click.IntRange(0), help="queue id to send to")
def send_message(s: Session, topic: str, body: str, keys: str | None, tags: str | None, broker_name: str | None,
                 queue_id: int | None) -> None:
    """Send one message and show where it was stored."""
    msg = Message(topic, body.encode())
    if keys:
        msg.keys = keys.split()
    if tags:
        msg.tags = tags

    async def work(admin: AdminClient) -> Output:
        result = await messages.send(admin, msg, broker_name=broker_name, queue_id=queue_id)
        row = [result.message_queue.broker_name, result.message_queue.queue_id, result.status.value, result.msg_id]
        data = {"brokerName": result.message_queue.broker_name, "queueId": result.message_queue.queue_id,
                "queueOffset": result.queue_offset, "sendStatus": result.status.value, "msgId": result.msg_id,
                "offsetMsgId": result.offset_msg_id}
        return Output(tables.table(["Broker Name", "QID", "Send Result", "MsgId"], [row]), data)

    s.run(work)


@mqadmin_command("printMsg")
@opt("-t", "--topic", type=TOPIC, required=True)
@opt("-c", "--charsetName", "charset", type=Charset(), default="utf-8", show_default=True)
@opt("-s", "--subExpression", "sub_expression", default="*", show_default=True, help="tags, e.g. 'a || b'")
@opt("-b", "--beginTimestamp", "begin", type=TIME, help="from the first message stored at or after")
@opt("-e", "--endTimestamp", "end", type=TIME, help="up to messages stored at or before")
@opt("-d", "--printBody", "print_body", type=click.BOOL, default=True, show_default=True)
def print_msg(s: Session, topic: str, charset: str, sub_expression: str, begin: int | None, end: int | None,
              print_body: bool) -> None:
    """Print every message of a topic (or of a time range); --json prints one object per line."""
    if begin is not None and end is not None and begin > end:
        raise click.BadParameter("the begin time is after the end time", param_hint="-b/-e")

    async def work(admin: AdminClient) -> None:
        ranges = await messages.scan_ranges(admin, topic, begin, end)
        for r in ranges:
            if not s.as_json:
                click.echo(f"MessageQueue [topic={topic}, brokerName={r.queue.broker_name}, "
                           f"queueId={r.queue.queue_id}] offsets [{r.begin}, {r.end})")
        async for queue, record in messages.scan(admin, ranges, subscription=sub_expression, end_ms=end):
            if s.as_json:
                click.echo(orjson.dumps({"brokerName": queue.broker_name, **views.message_json(record)}).decode())
            else:
                click.echo(views.message_line(queue, record, charset, print_body))

    s.run(work)


# --- dead letters (rocketq's own: mqadmin has none) ---------------------------------------------


@mqadmin_command("dlqList")
@opt("-g", "--consumerGroup", "group", type=GROUP, required=True)
@opt("-m", "--maxNum", "max_num", type=click.IntRange(1), default=deadletters.DEFAULT_MAX_LISTED, show_default=True)
@opt("-c", "--charsetName", "charset", type=Charset(), default="utf-8", show_default=True)
def dlq_list(s: Session, group: str, max_num: int, charset: str) -> None:
    """List the messages in a consumer group's dead-letter queue (%DLQ%group)."""

    async def work(admin: AdminClient) -> Output:
        letters = await deadletters.list_dead_letters(admin, group, max_num=max_num)
        lines = [views.message_line(d.queue, d.record, charset, True) for d in letters]
        text = "\n".join(lines) if lines else f"no dead letters for group {group}"
        return Output(text, [{"brokerName": d.queue.broker_name, **views.message_json(d.record)} for d in letters])

    s.run(work)


@mqadmin_command("dlqResend")
@opt("-g", "--consumerGroup", "group", type=GROUP, required=True)
@opt("-i", "--msgId", "msg_ids", help="message id(s) or offset message id(s), comma-separated")
@opt("--all", "resend_all", is_flag=True, help="every dead letter of the group (up to --maxNum)")
@opt("-m", "--maxNum", "max_num", type=click.IntRange(1), default=deadletters.DEFAULT_MAX_LISTED, show_default=True)
def dlq_resend(s: Session, group: str, msg_ids: str | None, resend_all: bool, max_num: int) -> None:
    """Send dead letters back to the group's retry topic (%RETRY%group) for a fresh set of retries."""
    ids = frozenset(i.strip() for i in (msg_ids or "").split(",") if i.strip())
    if bool(ids) == resend_all:
        raise click.UsageError("give either message ids (-i) or --all")

    async def work(admin: AdminClient) -> Output:
        done = await deadletters.resend(admin, group, None if resend_all else ids, max_num=max_num)
        if ids and not done:
            raise NotFoundError(f"no dead letter of group {group} has the id(s) {', '.join(sorted(ids))}")
        rows = [[d.record.msg_id, r.message_queue.broker_name, r.message_queue.queue_id, r.status.value]
                for d, r in done]
        data = [{"msgId": d.record.msg_id, "brokerName": r.message_queue.broker_name,
                 "queueId": r.message_queue.queue_id, "sendStatus": r.status.value, "offsetMsgId": r.offset_msg_id}
                for d, r in done]
        return Output(tables.table(["Message ID", "Broker Name", "QID", "Send Result"], rows), data)

    s.run(work)


# the commands of rocketq.cli.adminacl and adminruntime register on ``command`` when imported
from rocketq.cli import adminacl as _adminacl  # noqa: E402,F401
from rocketq.cli import adminruntime as _adminruntime  # noqa: E402,F401
