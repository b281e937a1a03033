"""The account a broker signs its own outgoing calls with (broker to broker, broker to name server).

A slave asks its master for topics, groups, consumer and delay offsets, and hands the master
offsets committed on the slave (``rocketq.ha.metasync``). With ``aclEnable=true`` on the master
those calls are checked like any client's, so an unsigned slave is refused (NO_PERMISSION
"No accessKey is configured") unless its address is a global white address.

RocketMQ 4.9's ACL 1.0 has no setting for this: its ``BrokerOuterAPI`` signs nothing unless an
embedding program registers an RPC hook, and its ACL guide white-lists the brokers' addresses.
RocketMQ 5.3 added the broker.conf key ``innerClientAuthenticationCredentials``, a JSON object
``{"accessKey": "...", "secretKey": "..."}``; when it is set, ``BrokerOuterAPI`` signs every
outgoing request with it (``AclClientRPCHook``), and the broker creates that user as a super
user in its ACL 2.0 store. rocketq takes the same key (or the environment variable
``ROCKETQ_INNER_CLIENT_CREDENTIALS``, so a pod can take it from a Secret) and signs with it as
any client signs. rocketq's ACL is 1.0's ``plain_acl.yml``, which the broker does not write, so
the account must be in the master's file; it needs ``admin: true`` (or PUB|SUB on every topic and
group): the sync reads every table and writes consumer offsets. ``unusable_reason`` says at
start-up when the broker's own file (masters and slaves usually share one) lacks it.
"""

from __future__ import annotations

from typing import Final

import orjson

from rocketq.acl import signing
from rocketq.acl.plainacl import AclConfig

KEY: Final = "innerClientAuthenticationCredentials"
ENV: Final = "ROCKETQ_INNER_CLIENT_CREDENTIALS"


class CredentialsError(ValueError):
    """The setting is given but is not ``{"accessKey": ..., "secretKey": ...}``; never shows the secret."""


def parse(text: str) -> tuple[str, str] | None:
    """(accessKey, secretKey) from the setting's JSON; None when the setting is empty."""
    if not text.strip():
        return None
    try:
        raw = orjson.loads(text)
    except orjson.JSONDecodeError:
        raise CredentialsError(f"{KEY}: expected JSON like {{\"accessKey\": ..., \"secretKey\": ...}}") from None
    if not isinstance(raw, dict):
        raise CredentialsError(f"{KEY}: expected a JSON object with accessKey and secretKey")
    access_key, secret_key = raw.get("accessKey"), raw.get("secretKey")
    if not isinstance(access_key, str) or not access_key.strip():
        raise CredentialsError(f"{KEY}: accessKey is missing or blank")
    if not isinstance(secret_key, str) or not secret_key.strip():
        raise CredentialsError(f"{KEY}: secretKey of {access_key!r} is missing or blank")
    return access_key, secret_key


def signer(text: str) -> signing.Signer | None:
    """The rpc hook of the broker's outgoing client: None (unsigned) without credentials."""
    credentials = parse(text)
    return signing.Signer(*credentials) if credentials is not None else None


def unusable_reason(config: AclConfig, text: str) -> str | None:
    """Why a master with this ACL table would refuse calls signed with these credentials (or
    unsigned ones), judged on this broker's own table; None when it would accept them."""
    credentials = parse(text)
    if credentials is None:
        return (f"{KEY} is not set: this broker's calls to its master are unsigned, and a master with "
                "aclEnable=true refuses them unless this broker's address is a global white address")
    access_key, secret_key = credentials
    account = config.accounts.get(access_key)
    if account is None:
        return f"{KEY} names accessKey {access_key!r}, which plain_acl.yml does not hold"
    if account.secret_key != secret_key:
        return f"{KEY}: the secretKey of {access_key!r} differs from plain_acl.yml's"
    if not account.admin:
        return f"{KEY}: account {access_key!r} is not admin: true, so a master may refuse offsets or tables"
    return None
