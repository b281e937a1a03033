"""The body of GET_BROKER_CLUSTER_ACL_CONFIG (code 54): a broker's whole ACL table.

RocketMQ answers code 54 (4.6.0 on; ``mqadmin getAclConfig``) with
``GetBrokerClusterAclConfigResponseBody``::

    {"globalWhiteAddrs": ["10.10.103.*"],
     "plainAccessConfigs": [{"accessKey": "RocketMQ", "secretKey": "12345678",
                             "whiteRemoteAddress": "192.168.0.*", "admin": false,
                             "defaultTopicPerm": "DENY", "defaultGroupPerm": "SUB",
                             "topicPerms": ["topicA=DENY"], "groupPerms": ["groupA=SUB"]}]}

Every account carries its secret key: the answer is for admin accounts only (rocketq's broker
counts code 54 among the admin codes), and whoever shows it to a person masks it (the console
never shows it, ``rocketq admin getAclConfig`` prints it masked).

``decode`` reads what fastjson reads (a missing list is empty, ``"admin": "true"`` is true) and
raises ``BodyError`` naming the place for anything else.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

import orjson

from rocketq.protocol.sharedbodies import BodyError, load_json, obj, strings, text
from rocketq.protocol.sharedbodies import flag as read_flag

SECRET_MASK: Final = "******"
"""What a person is shown instead of a secret key (set or not: the length would tell something)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PlainAccessConfig:
    access_key: str
    secret_key: str = field(default="", repr=False)
    white_remote_address: str = ""
    admin: bool = False
    default_topic_perm: str = ""
    default_group_perm: str = ""
    topic_perms: tuple[str, ...] = ()
    """``name=PERM`` entries, as in plain_acl.yml."""
    group_perms: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"accessKey": self.access_key, "secretKey": self.secret_key,
                "whiteRemoteAddress": self.white_remote_address, "admin": self.admin,
                "defaultTopicPerm": self.default_topic_perm, "defaultGroupPerm": self.default_group_perm,
                "topicPerms": list(self.topic_perms), "groupPerms": list(self.group_perms)}

    def shown(self) -> dict[str, Any]:
        """``to_json`` with the secret key masked: what may be printed or rendered."""
        return {**self.to_json(), "secretKey": SECRET_MASK}

    @classmethod
    def from_json(cls, value: Any, where: str) -> PlainAccessConfig:
        raw = obj(value, where)
        return cls(
            access_key=text(raw, "accessKey", where),
            secret_key=text(raw, "secretKey", where, ""),
            white_remote_address=text(raw, "whiteRemoteAddress", where, ""),
            admin=read_flag(raw, "admin", where, False),
            default_topic_perm=text(raw, "defaultTopicPerm", where, ""),
            default_group_perm=text(raw, "defaultGroupPerm", where, ""),
            topic_perms=_optional_strings(raw, "topicPerms", where),
            group_perms=_optional_strings(raw, "groupPerms", where),
        )


@dataclass(frozen=True, slots=True)
class ClusterAclConfig:
    global_white_addrs: tuple[str, ...] = ()
    accounts: tuple[PlainAccessConfig, ...] = ()

    def encode(self) -> bytes:
        return orjson.dumps({"globalWhiteAddrs": list(self.global_white_addrs),
                             "plainAccessConfigs": [a.to_json() for a in self.accounts]})

    @classmethod
    def decode(cls, body: bytes) -> ClusterAclConfig:
        raw = obj(load_json(body, "ACL config"), "ACL config")
        accounts = raw.get("plainAccessConfigs")
        if accounts is None:
            accounts = []
        if not isinstance(accounts, list):
            raise BodyError("ACL config.plainAccessConfigs must be a list")
        return cls(_optional_strings(raw, "globalWhiteAddrs", "ACL config"),
                   tuple(PlainAccessConfig.from_json(a, f"ACL config.plainAccessConfigs[{i}]")
                         for i, a in enumerate(accounts)))


def _optional_strings(raw: dict[Any, Any], key: str, where: str) -> tuple[str, ...]:
    value = raw.get(key)
    return () if value is None else strings(value, f"{where}.{key}")
