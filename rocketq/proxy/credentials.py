"""The proxy's own ACL account: what signs its remoting calls to brokers and name servers.

A v2 client signs its gRPC calls with its own account; the proxy checks that signature and the
account's permissions itself (``auth``), then calls the brokers as a remoting client of its own.
Brokers with ``aclEnable=true`` refuse unsigned requests, so those calls are signed as
RocketMQ's ``AclClientRPCHook`` signs them (``rocketq.acl.signing``), with the proxy's account:
the brokers see the proxy, not the client, exactly as with Apache RocketMQ 5's proxy. That
account must therefore be allowed everything the proxy's clients may do (an ``admin: true``
account without topicPerms/groupPerms, as RocketMQ's shipped ``tools.yml`` names).

Where the account comes from, as RocketMQ's ``DefaultMessagingProcessor.createForClusterMode``:

- ``enableAclRpcHookForClusterMode`` (ProxyConfig, default false) turns signing on;
- ``innerClientAuthenticationCredentials`` (AuthConfig, read from the same rmq-proxy.json): JSON
  text ``{"accessKey": "...", "secretKey": "..."}`` (``securityToken`` optional);
- when that is blank, the YAML file ``$ROCKETMQ_HOME/conf/tools.yml`` (keys ``accessKey``,
  ``secretKey``), or the file rocketq's key ``innerClientCredentialsFile`` names (the operator
  points it at the cluster's mounted ACL Secret).

Reading both forms, and the ``Credentials`` they give, is ``rocketq.acl.innerclient``'s, which the
brokers use for their own calls too; this module adds what only the proxy does.

RocketMQ logs and runs unsigned when signing is on but no usable account is found; rocketq stops
at start instead (``SettingsError``: exit 2, key or file named), since every call would then be
refused by the brokers.

LOCAL mode (the endpoint inside a broker) uses none of these keys: RocketMQ's LOCAL proxy calls its
broker in-process, unchecked. rocketq's LOCAL endpoint goes through loopback remoting, so when that
broker has ACL on, the process makes an account of its own (``internal``): random keys that never
leave the process, which the broker accepts beside its file's accounts (``validator.check``'s
``internal``) and which is never listed or written anywhere.
"""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from rocketq.acl import innerclient
from rocketq.acl.innerclient import Credentials as Credentials  # the type the backend signs with
from rocketq.acl.plainacl import Account
from rocketq.settings import SettingsError, setting

ENABLE_KEY: Final = "enableAclRpcHookForClusterMode"
CREDENTIALS_KEY: Final = innerclient.KEY
FILE_KEY: Final = innerclient.FILE_KEY
TOOLS_FILE: Final = Path("conf") / "tools.yml"
"""RocketMQ's ``MixAll.ACL_CONF_TOOLS_FILE``, under ``ROCKETMQ_HOME``."""
INTERNAL_KEY_PREFIX: Final = "rocketq-local-endpoint-"


@dataclass(frozen=True, slots=True)
class InnerClientSettings:
    enable_acl_rpc_hook_for_cluster_mode: bool = setting(
        ENABLE_KEY, False, "CLUSTER mode: sign every remoting call (brokers, name servers) with the proxy's account.")
    inner_client_authentication_credentials: str = setting(
        CREDENTIALS_KEY, "", 'The proxy\'s account as JSON text: {"accessKey": ..., "secretKey": ...}.', secret=True)
    inner_client_credentials_file: str = setting(
        FILE_KEY, "", "rocketq's key: YAML with accessKey and secretKey, read when the JSON key is blank; "
        "empty = $ROCKETMQ_HOME/conf/tools.yml")


def resolve(settings: InnerClientSettings) -> Credentials | None:
    """The account CLUSTER-mode calls are signed with; None when signing is off. SettingsError if unusable."""
    if not settings.enable_acl_rpc_hook_for_cluster_mode:
        return None
    given = innerclient.parse(settings.inner_client_authentication_credentials, CREDENTIALS_KEY)
    return given if given is not None else innerclient.read_file(_file(settings))


def _file(settings: InnerClientSettings) -> Path:
    if settings.inner_client_credentials_file:
        return Path(settings.inner_client_credentials_file)
    home = os.environ.get("ROCKETMQ_HOME")
    if not home:
        raise SettingsError(f"{ENABLE_KEY}=true: set {CREDENTIALS_KEY}, {FILE_KEY} or ROCKETMQ_HOME "
                            f"(for {TOOLS_FILE})")
    return Path(home) / TOOLS_FILE


def internal() -> tuple[Credentials, Account]:
    """A LOCAL endpoint's own account: its signing credentials and the admin account its broker accepts."""
    creds = Credentials(INTERNAL_KEY_PREFIX + secrets.token_hex(8), secrets.token_urlsafe(32))
    return creds, Account(creds.access_key, creds.secret_key, admin=True)
