"""Headers of RocketMQ 4.9's ACL admin requests (codes 50-53) and the ACL version answer.

The account's permission lists travel as one comma-separated string (``topicA=DENY,topicB=SUB``),
as ``mqadmin updateAclConfig`` sends them; ``split_list`` turns them back into entries the way
RocketMQ's ``UtilAll.split`` does (an empty string is an empty list, which clears the entries).
"""

from __future__ import annotations

from dataclasses import dataclass

from rocketq.protocol.headers import Header, wire


@dataclass(frozen=True, slots=True, kw_only=True)
class CreateAccessConfigRequestHeader(Header):
    access_key: str = wire("accessKey")
    secret_key: str | None = wire("secretKey", None)
    white_remote_address: str | None = wire("whiteRemoteAddress", None)
    admin: bool | None = wire("admin", None)
    default_topic_perm: str | None = wire("defaultTopicPerm", None)
    default_group_perm: str | None = wire("defaultGroupPerm", None)
    topic_perms: str | None = wire("topicPerms", None)
    group_perms: str | None = wire("groupPerms", None)


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteAccessConfigRequestHeader(Header):
    access_key: str = wire("accessKey")


@dataclass(frozen=True, slots=True, kw_only=True)
class UpdateGlobalWhiteAddrsConfigRequestHeader(Header):
    global_white_addrs: str = wire("globalWhiteAddrs")
    acl_file_full_path: str | None = wire("aclFileFullPath", None)


@dataclass(frozen=True, slots=True, kw_only=True)
class GetBrokerAclConfigResponseHeader(Header):
    """``version``: the DataVersion JSON of plain_acl.yml; ``allAclFileVersion`` (4.9.3): a JSON
    object of every ACL file's path to its DataVersion."""

    version: str = wire("version")
    all_acl_file_version: str | None = wire("allAclFileVersion", None)
    broker_name: str = wire("brokerName")
    broker_addr: str = wire("brokerAddr")
    cluster_name: str = wire("clusterName")


def split_list(text: str | None) -> list[str] | None:
    if text is None:
        return None
    return [item.strip() for item in text.split(",") if item.strip()]
