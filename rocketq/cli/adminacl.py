"""``rocketq admin`` ACL commands: mqadmin's updateAclConfig, deleteAclConfig,
updateGlobalWhiteAddr, clusterAclConfigVersion and getAclConfig (RocketMQ 4.9's request codes
50-54). ``getAclConfig`` prints every account as mqadmin does, but with the secret keys masked:
a terminal, a CI log or a shared screen is no place for them (the ACL files hold them).

With ``-c`` a change goes to every broker of the cluster, slaves included (each broker keeps
its own ACL files), as mqadmin does. The broker only takes these from an admin account, so
the commands are signed with ``--accessKey``/``--secretKey`` (or the environment) of one; the
account being changed is ``-a``/``-s`` as in mqadmin, long names ``--aclAccessKey`` and
``--aclSecretKey`` (mqadmin's long ``--accessKey`` already means the signing account here).

Registered on ``rocketq.cli.admin``'s group when that module is imported (it imports this one
last); the shared options come from its ``mqadmin_command``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime

import click
import orjson

from rocketq.acl.plainacl import MIN_KEY_LENGTH
from rocketq.admin import cluster as cluster_ops
from rocketq.admin.client import AdminClient
from rocketq.admin.errors import BodyError
from rocketq.cli.admin import Output, Session, _need_target, broker_or_cluster, mqadmin_command, opt
from rocketq.protocol.aclheaders import CreateAccessConfigRequestHeader
from rocketq.protocol.sharedbodies import BodyError as SharedBodyError
from rocketq.protocol.sharedbodies import DataVersion

PERMS = click.Choice(["DENY", "PUB", "SUB", "PUB|SUB", "SUB|PUB"])


def _key(name: str) -> click.types.FuncParamType:
    def check(value: str) -> str:
        if len(value) < MIN_KEY_LENGTH:
            raise click.BadParameter(f"{name} must be at least {MIN_KEY_LENGTH} characters")
        return value
    return click.types.FuncParamType(check)


async def _change_each(client: AdminClient, broker_addr: str | None, cluster: str | None,
                       change: Callable[[str], Awaitable[None]], verb: str, what: str) -> tuple[str, list[str]]:
    """Apply ``change`` to the one broker or every member of the cluster; mqadmin's lines."""
    addrs = await cluster_ops.targets(client, broker_addr, cluster, with_slaves=True)
    for addr in addrs:
        await change(addr)
    return "\n".join(f"{verb} {what} to {addr} success." for addr in addrs), addrs


@mqadmin_command("updateAclConfig")
@broker_or_cluster
@opt("-a", "--aclAccessKey", "account_key", type=_key("accessKey"), required=True, help="the account's access key")
@opt("-s", "--aclSecretKey", "account_secret", type=_key("secretKey"),
     help="its secret key (required for a new account)")
@opt("-w", "--whiteRemoteAddress", "white", help="addresses that skip the signature check, e.g. 192.168.0.*")
@opt("-i", "--defaultTopicPerm", "default_topic_perm", type=PERMS, help="for topics not listed")
@opt("-u", "--defaultGroupPerm", "default_group_perm", type=PERMS, help="for groups not listed")
@opt("-t", "--topicPerms", "topic_perms", help="topicA=DENY,topicB=PUB|SUB (replaces the list)")
@opt("-g", "--groupPerms", "group_perms", help="groupA=DENY,groupB=SUB (replaces the list)")
@opt("-m", "--admin", "admin", type=click.BOOL, help="may use the admin request codes")
def update_acl_config(s: Session, broker_addr: str | None, cluster: str | None, account_key: str,
                      account_secret: str | None, white: str | None, default_topic_perm: str | None,
                      default_group_perm: str | None, topic_perms: str | None, group_perms: str | None,
                      admin: bool | None) -> None:
    """Create an ACL account or update the fields given (the others stay as they are)."""
    _need_target(broker_addr, cluster)
    header = CreateAccessConfigRequestHeader(
        access_key=account_key, secret_key=account_secret, white_remote_address=white, admin=admin,
        default_topic_perm=default_topic_perm, default_group_perm=default_group_perm,
        topic_perms=topic_perms, group_perms=group_perms)

    async def work(client: AdminClient) -> Output:
        text, addrs = await _change_each(client, broker_addr, cluster, lambda a: client.update_acl_account(a, header),
                                         "create or update plain access config", f"[{account_key}]")
        return Output(text, {"accessKey": account_key, "brokers": addrs})

    s.run(work)


@mqadmin_command("deleteAclConfig")
@broker_or_cluster
@opt("-a", "--aclAccessKey", "account_key", required=True, help="the account to delete")
def delete_acl_config(s: Session, broker_addr: str | None, cluster: str | None, account_key: str) -> None:
    """Delete an ACL account from the file that defines it."""
    _need_target(broker_addr, cluster)

    async def work(client: AdminClient) -> Output:
        text, addrs = await _change_each(
            client, broker_addr, cluster, lambda a: client.delete_acl_account(a, account_key),
            "delete plain access config", f"[{account_key}]")
        return Output(text, {"accessKey": account_key, "brokers": addrs})

    s.run(work)


@mqadmin_command("updateGlobalWhiteAddr")
@broker_or_cluster
@opt("-g", "--globalWhiteRemoteAddresses", "patterns", required=True,
     help="comma-separated address patterns (replaces the list); empty clears it")
@opt("-f", "--aclFileFullPath", "acl_file", help="which ACL file holds the list (default plain_acl.yml)")
def update_global_white_addr(s: Session, broker_addr: str | None, cluster: str | None, patterns: str,
                             acl_file: str | None) -> None:
    """Replace the global white address list (peers that need no signature at all)."""
    _need_target(broker_addr, cluster)
    items = [p.strip() for p in patterns.split(",") if p.strip()]

    async def work(client: AdminClient) -> Output:
        text, addrs = await _change_each(
            client, broker_addr, cluster, lambda a: client.update_global_white_addrs(a, items, acl_file),
            "update global white remote addresses", str(items))
        return Output(text, {"globalWhiteRemoteAddresses": items, "brokers": addrs})

    s.run(work)


@mqadmin_command("clusterAclConfigVersion")
@broker_or_cluster
def cluster_acl_config_version(s: Session, broker_addr: str | None, cluster: str | None) -> None:
    """Each broker's ACL files and their versions."""
    _need_target(broker_addr, cluster)

    async def work(client: AdminClient) -> Output:
        addrs = await cluster_ops.targets(client, broker_addr, cluster, with_slaves=True)
        rows: list[dict[str, object]] = []
        for addr in addrs:
            info = await client.acl_version(addr)
            for path, version in _file_versions(info.all_acl_file_version, info.version).items():
                rows.append({"clusterName": info.cluster_name, "brokerName": info.broker_name,
                             "brokerAddr": info.broker_addr, "aclFilePath": path,
                             "counter": version.counter, "timestamp": version.timestamp})
        lines = [f"{'#Cluster Name':<20}{'#Broker Name':<20}{'#Broker Addr':<24}{'#AclFilePath':<40}"
                 f"{'#AclConfigVersionNum':<22}#AclLastUpdateTime"]
        lines += [f"{r['clusterName']!s:<20}{r['brokerName']!s:<20}{r['brokerAddr']!s:<24}{r['aclFilePath']!s:<40}"
                  f"{r['counter']!s:<22}{_when(int(str(r['timestamp'])))}" for r in rows]
        return Output("\n".join(lines), rows)

    s.run(work)


@mqadmin_command("getAclConfig")
@broker_or_cluster
def get_acl_config(s: Session, broker_addr: str | None, cluster: str | None) -> None:
    """Every account of a broker, or of each master of a cluster (secret keys masked)."""
    _need_target(broker_addr, cluster)

    async def work(client: AdminClient) -> Output:
        addrs = await cluster_ops.targets(client, broker_addr, cluster)
        rows: list[dict[str, object]] = []
        lines: list[str] = []
        for addr in addrs:
            config = await client.acl_config(addr)
            accounts = [a.shown() for a in config.accounts]
            rows.append({"brokerAddr": addr, "globalWhiteAddrs": list(config.global_white_addrs),
                         "plainAccessConfigs": accounts})
            lines += ["", f"{'globalWhiteRemoteAddresses':<20}: {list(config.global_white_addrs)}", "", "accounts:"]
            for account in accounts:
                lines += [f"  {key:<18}: {_shown_value(value)}" for key, value in account.items()]
                lines.append("")
        return Output("\n".join(lines), rows)

    s.run(work)


def _shown_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(map(str, value)) + "]"
    return str(value)


def _file_versions(all_files: str | None, default: str) -> dict[str, DataVersion]:
    """``allAclFileVersion`` (4.9.3+), or the one ``version`` an older broker sends."""
    try:
        if all_files:
            raw = orjson.loads(all_files)
            if not isinstance(raw, dict):
                raise BodyError("allAclFileVersion is not a JSON object")
            return {str(path): DataVersion.from_json(v) for path, v in raw.items()}
        return {"plain_acl.yml": DataVersion.from_json(orjson.loads(default))}
    except (orjson.JSONDecodeError, SharedBodyError) as exc:
        raise BodyError(f"unreadable ACL version: {exc}") from None


def _when(timestamp_ms: int) -> str:
    if timestamp_ms <= 0:
        return "-"
    return datetime.fromtimestamp(timestamp_ms / 1000).strftime("%Y-%m-%d %H:%M:%S")
