"""ACL for v2 clients: the ``authorization`` header (MQv2-HMAC-SHA1) checked against plain_acl.yml.

With ``aclEnable=true`` (in rmq-proxy.json, or broker.conf for LOCAL mode; the accounts file is
``rocketmq.acl.plain.file`` or ``$ROCKETMQ_HOME/conf/plain_acl.yml``, as for the broker) every call
must carry

    authorization: MQv2-HMAC-SHA1 Credential=<AK>, SignedHeaders=x-mq-date-time, Signature=<hex>

where the signature is HMAC-SHA1(secret key, the ``x-mq-date-time`` header) in hex. As RocketMQ's
``DefaultAuthenticationContextBuilder``: the value is split at its first space, then at commas;
``Credential`` is cut at ``/``. A peer in a global white address list, or in its account's
``whiteRemoteAddress``, needs no signature (RocketMQ 4.9's order). A missing, unparsable or wrong
signature is UNAUTHORIZED; a topic or group the account may not use is FORBIDDEN (topics need
PUB to send, SUB to receive; groups are checked as ``%RETRY%<group>``, as the broker does). Which
call needs what follows RocketMQ 5's ``DefaultAuthorizationContextBuilder``: besides the calls
that name a topic, a consumer's Heartbeat and NotifyClientTermination need SUB on its group, and a
client's Telemetry settings need PUB on each topic it will publish to, or SUB on its group and
each topic it subscribes to (``heartbeat_needs``, ``settings_needs``).
With ACL off the header is ignored (the Python client always sends one, with empty credentials).
The accounts file is read when the endpoint starts; edits need a restart.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from dataclasses import dataclass
from hashlib import sha1
from typing import Final

from rocketq.acl import permissions, validator
from rocketq.acl.plainacl import Account, AclConfig
from rocketq.proxy.status import Code, ProxyError
from rocketq.proxy.v2 import definition_pb2 as pb

AUTHORIZATION: Final = "authorization"
DATE_TIME: Final = "x-mq-date-time"
ALGORITHM: Final = "MQv2-HMAC-SHA1"
MAX_HEADER_LENGTH: Final = 4096
"""A longer authorization value is refused unread."""


@dataclass(frozen=True, slots=True)
class Authorization:
    access_key: str
    signature: str


def parse(value: str) -> Authorization:
    """The header's credential and signature; UNAUTHORIZED when it is not in the v2 form."""
    if len(value) > MAX_HEADER_LENGTH:
        raise ProxyError(Code.UNAUTHORIZED, "authorization header too long")
    algorithm, _, rest = value.strip().partition(" ")
    if algorithm != ALGORITHM:
        raise ProxyError(Code.UNAUTHORIZED, f"authorization algorithm must be {ALGORITHM}")
    fields: dict[str, str] = {}
    for part in rest.split(","):
        key, sep, val = part.strip().partition("=")
        if sep:
            fields[key] = val
    credential = fields.get("Credential", "").split("/", 1)[0]
    signature = fields.get("Signature", "")
    if not credential or not signature:
        raise ProxyError(Code.UNAUTHORIZED, "authorization lacks Credential or Signature")
    return Authorization(credential, signature)


def sign(secret_key: str, date_time: str) -> str:
    return hmac.new(secret_key.encode(), date_time.encode(), sha1).hexdigest()


def authenticate(config: AclConfig, metadata: Mapping[str, str], remote_ip: str) -> Account | None:
    """The caller's account (None: a white-listed peer, nothing to check); ProxyError if refused."""
    if any(p.match(remote_ip) for p in config.global_white_addresses):
        return None
    header = metadata.get(AUTHORIZATION)
    if not header:
        raise ProxyError(Code.UNAUTHORIZED, "no authorization header")
    auth = parse(header)
    account = config.accounts.get(auth.access_key)
    if account is None:
        raise ProxyError(Code.UNAUTHORIZED, f"No acl config for {auth.access_key}")
    if account.white_remote_address.match(remote_ip):
        return None
    expected = sign(account.secret_key, metadata.get(DATE_TIME, ""))
    if not hmac.compare_digest(expected, auth.signature.lower()):
        raise ProxyError(Code.UNAUTHORIZED, f"Check signature failed for accessKey={auth.access_key}")
    return account


def authorize(account: Account | None, needed: validator.Resources) -> None:
    """FORBIDDEN unless the account may use every resource (topic or %RETRY%group) as needed."""
    if account is None or not needed:
        return
    refusal = validator.permitted(account, needed)
    if refusal is not None:
        raise ProxyError(Code.FORBIDDEN, refusal)


CONSUMER_TYPES: Final = frozenset({pb.ClientType.PUSH_CONSUMER, pb.ClientType.SIMPLE_CONSUMER,
                                   pb.ClientType.PULL_CONSUMER})


def group_needs(group: pb.Resource) -> validator.Resources:
    """SUB on a named group (its ``%RETRY%`` resource); nothing for a blank one (a producer's)."""
    return {validator.retry(group.name): permissions.SUB} if group.name else {}


def heartbeat_needs(client_type: pb.ClientType, group: pb.Resource) -> validator.Resources:
    return group_needs(group) if client_type in CONSUMER_TYPES else {}


def settings_needs(settings: pb.Settings) -> validator.Resources:
    """What a client's Telemetry settings announce it will do: publish to topics, or subscribe."""
    which = settings.WhichOneof("pub_sub")
    if which == "publishing":
        return {t.name: permissions.PUB for t in settings.publishing.topics}
    if which == "subscription":
        needed = group_needs(settings.subscription.group)
        needed.update({e.topic.name: permissions.SUB for e in settings.subscription.subscriptions})
        return needed
    return {}


def peer_ip(peer: str) -> str:
    """The IP of a gRPC peer string (``ipv4:1.2.3.4:5``, ``ipv6:[::1]:5``)."""
    _, _, address = peer.partition(":")
    host = address.rsplit(":", 1)[0]
    return host.strip("[]")
