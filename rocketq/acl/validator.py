"""The broker's decision on one request: allowed, or refused with RocketMQ's reason.

Steps, in RocketMQ 4.9's order (``PlainPermissionManager.validate``):

1. a peer matching a global white address is allowed, signed or not;
2. no ``AccessKey`` → "No accessKey is configured"; an unknown one → "No acl config for <ak>";
3. a peer matching the account's ``whiteRemoteAddress`` is allowed without a signature;
4. a wrong ``Signature`` → "Check signature failed for accessKey=<ak>";
5. a send to the trace topic is allowed (every traced client writes it);
6. admin codes need ``admin: true``; an admin account that lists no resources may do anything;
   otherwise every resource the code touches (``resources``) must be permitted, by its own
   entry or by the account's default for topics or groups (groups are ``%RETRY%<group>``).

Codes not listed in ``resources`` need only a valid signature, as in RocketMQ. rocketq also
checks SEND_BATCH_MESSAGE and SEND_REPLY_MESSAGE(_V2) like SEND_MESSAGE_V2 (RocketMQ 4.9 lets
any signed account send batches to any topic), and accepts a QUERY_MESSAGE signed with or
without ``_UNIQUE_KEY_QUERY`` (RocketMQ's Java client signs it, its broker leaves it out:
apache/rocketmq #5310).
"""

from __future__ import annotations

import hmac
from collections.abc import Callable, Mapping
from typing import Final

from rocketq.acl import permissions, signing
from rocketq.acl.plainacl import RETRY_GROUP_PREFIX, Account, AclConfig
from rocketq.protocol import heartbeat, popbodies
from rocketq.protocol.codes import RequestCode
from rocketq.protocol.frames import RemotingCommand
from rocketq.protocol.headers import HeaderError, SendMessageRequestHeader, send_header_from_v2

TRACE_TOPIC: Final = "RMQ_SYS_TRACE_TOPIC"
UNIQUE_KEY_QUERY: Final = "_UNIQUE_KEY_QUERY"
_LEAVE_OUT: Final = frozenset({signing.SIGNATURE, UNIQUE_KEY_QUERY})
_SIGNATURE_ONLY: Final = frozenset({signing.SIGNATURE})

ADMIN_CODES: Final = frozenset({
    RequestCode.UPDATE_AND_CREATE_TOPIC, RequestCode.UPDATE_BROKER_CONFIG, RequestCode.DELETE_TOPIC_IN_BROKER,
    RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, RequestCode.DELETE_SUBSCRIPTIONGROUP,
    RequestCode.NOTIFY_BROKER_ROLE_CHANGED,
    RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, RequestCode.DELETE_ACL_CONFIG,
    RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG, RequestCode.GET_BROKER_CLUSTER_ACL_INFO,
    RequestCode.GET_BROKER_CLUSTER_ACL_CONFIG,
})
"""RocketMQ's ``Permission.ADMIN_CODE``; NOTIFY_BROKER_ROLE_CHANGED (RocketMQ's controller sends it,
here an operator does: ha/role.py); and the ACL codes 50-54, which RocketMQ 4.9 lets any signed
account use (54 answers with every secret key): rocketq keeps changing (and reading) who may do
what to admin accounts."""

Resources = dict[str, int]


def retry(group: str) -> str:
    return RETRY_GROUP_PREFIX + group


def check(config: AclConfig, request: RemotingCommand, remote_ip: str, internal: Account | None = None) -> str | None:
    """None when ``request`` from ``remote_ip`` may run; otherwise RocketMQ's refusal message.

    ``internal``: an account of the broker's own process (its LOCAL gRPC endpoint's,
    rocketq/proxy/credentials.py), accepted beside the file's and checked the same way."""
    if any(p.match(remote_ip) for p in config.global_white_addresses):
        return None
    ext = request.ext_fields
    access_key = ext.get(signing.ACCESS_KEY)
    if access_key is None:
        return "No accessKey is configured"
    if internal is not None and access_key == internal.access_key:
        account: Account | None = internal
    else:
        account = config.accounts.get(access_key)
    if account is None:
        return f"No acl config for {access_key}"
    if account.white_remote_address.match(remote_ip):
        return None
    if not _signed(account, request):
        return f"Check signature failed for accessKey={access_key}"
    return _permitted(account, request.code, resources(request))


def _signed(account: Account, request: RemotingCommand) -> bool:
    given = request.ext_fields.get(signing.SIGNATURE, "")
    body = signing.body_parts(request)
    expected = signing.sign(account.secret_key, signing.content_parts(request.ext_fields, body, _LEAVE_OUT))
    if hmac.compare_digest(expected, given):
        return True
    if UNIQUE_KEY_QUERY not in request.ext_fields:
        return False
    expected = signing.sign(account.secret_key, signing.content_parts(request.ext_fields, body, _SIGNATURE_ONLY))
    return hmac.compare_digest(expected, given)


def permitted(account: Account, needed: Resources) -> str | None:
    """None when the account may use every resource as ``needed`` (the gRPC proxy's check)."""
    return _permitted(account, RequestCode.SEND_MESSAGE_V2, needed)


def _permitted(account: Account, code: int, needed: Resources) -> str | None:
    if needed.get(TRACE_TOPIC) == permissions.PUB:
        return None
    if code in ADMIN_CODES and not account.admin:
        return f"Need admin permission for request code={code}, but accessKey={account.access_key} is not"
    if account.admin and not account.resource_perms:
        return None
    for resource, perm in needed.items():
        is_group = resource.startswith(RETRY_GROUP_PREFIX)
        owned = account.resource_perms.get(resource)
        if owned is None:
            owned = account.default_group_perm if is_group else account.default_topic_perm
        if not permissions.allows(perm, owned):
            what = f"group:{resource[len(RETRY_GROUP_PREFIX):]}" if is_group else f"topic:{resource}"
            return f"No default permission for {what}"
    return None


# --- what each request code touches ---------------------------------------------------------


def resources(request: RemotingCommand) -> Resources:
    """The topics and ``%RETRY%<group>`` resources a request needs, with the permission each needs.

    A field the handler needs but the request lacks adds nothing: the handler refuses the
    request itself, with the same error it gives when ACL is off.
    """
    parse = _BY_CODE.get(request.code)
    return parse(request) if parse is not None else {}


def _send(header: SendMessageRequestHeader) -> Resources:
    if header.topic.startswith(RETRY_GROUP_PREFIX):
        return {retry(header.producer_group): permissions.SUB}
    return {header.topic: permissions.PUB}


def _send_v1(request: RemotingCommand) -> Resources:
    try:
        return _send(SendMessageRequestHeader.from_ext(request.ext_fields))
    except HeaderError:
        return {}


def _send_v2(request: RemotingCommand) -> Resources:
    try:
        return _send(send_header_from_v2(request.ext_fields))
    except HeaderError:
        return {}


def _fields(group_key: str | None, topic_key: str | None) -> Callable[[RemotingCommand], Resources]:
    """A code whose header names a group (SUB on its retry topic) and/or a topic (SUB)."""
    def parse(request: RemotingCommand) -> Resources:
        ext: Mapping[str, str] = request.ext_fields
        out: Resources = {}
        if topic_key is not None and ext.get(topic_key):
            out[ext[topic_key]] = permissions.SUB
        if group_key is not None and ext.get(group_key):
            out[retry(ext[group_key])] = permissions.SUB
        return out
    return parse


def _heartbeat(request: RemotingCommand) -> Resources:
    try:
        data = heartbeat.decode(bytes(request.body))
    except heartbeat.HeartbeatError:
        return {}
    out: Resources = {}
    for consumer in data.consumers:
        out[retry(consumer.group_name)] = permissions.SUB
        for subscription in consumer.subscriptions:
            out[subscription.topic] = permissions.SUB
    return out


def _batch_ack(request: RemotingCommand) -> Resources:
    try:
        _, acks = popbodies.decode_batch_ack_body(bytes(request.body or b""))
    except popbodies.BodyError:
        return {}
    out: Resources = {}
    for ack in acks:
        out[ack.topic] = permissions.SUB
        out[retry(ack.group)] = permissions.SUB
    return out


def _body_group_topic(decode: Callable[[bytes], popbodies.QueryAssignmentRequest | popbodies.MessageRequestMode],
                      ) -> Callable[[RemotingCommand], Resources]:
    """A code whose JSON body names a topic and a consumer group (QUERY_ASSIGNMENT, 400/401)."""
    def parse(request: RemotingCommand) -> Resources:
        try:
            body = decode(bytes(request.body or b""))
        except popbodies.BodyError:
            return {}
        return {body.topic: permissions.SUB, retry(body.consumer_group): permissions.SUB}
    return parse


# POP's codes: RocketMQ 5's ACL 1.0 lists none of them, so any signed account may pop any topic
# there; rocketq asks the same SUB rights as a pull of that topic by that group.
_BY_CODE: Final[dict[int, Callable[[RemotingCommand], Resources]]] = {
    RequestCode.SEND_MESSAGE: _send_v1,
    RequestCode.SEND_REPLY_MESSAGE: _send_v1,
    RequestCode.SEND_MESSAGE_V2: _send_v2,
    RequestCode.SEND_BATCH_MESSAGE: _send_v2,
    RequestCode.SEND_REPLY_MESSAGE_V2: _send_v2,
    RequestCode.CONSUMER_SEND_MSG_BACK: _fields("group", None),
    RequestCode.PULL_MESSAGE: _fields("consumerGroup", "topic"),
    RequestCode.QUERY_MESSAGE: _fields(None, "topic"),
    RequestCode.HEART_BEAT: _heartbeat,
    RequestCode.UNREGISTER_CLIENT: _fields("consumerGroup", None),
    RequestCode.GET_CONSUMER_LIST_BY_GROUP: _fields("consumerGroup", None),
    RequestCode.UPDATE_CONSUMER_OFFSET: _fields("consumerGroup", "topic"),
    RequestCode.POP_MESSAGE: _fields("consumerGroup", "topic"),
    RequestCode.ACK_MESSAGE: _fields("consumerGroup", "topic"),
    RequestCode.CHANGE_MESSAGE_INVISIBLETIME: _fields("consumerGroup", "topic"),
    RequestCode.BATCH_ACK_MESSAGE: _batch_ack,
    RequestCode.QUERY_ASSIGNMENT: _body_group_topic(popbodies.QueryAssignmentRequest.decode),
    RequestCode.SET_MESSAGE_REQUEST_MODE: _body_group_topic(popbodies.MessageRequestMode.decode),
}
