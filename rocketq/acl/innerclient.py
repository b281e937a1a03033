"""The account a rocketq server signs its own outgoing calls with (its "inner client").

A broker calls other brokers and the name servers (a slave asks its master for topics, groups,
consumer and delay offsets and hands it offsets committed on the slave, ``rocketq.ha.metasync``);
the gRPC proxy calls brokers for its clients (``rocketq.proxy.credentials``). A broker with
``aclEnable=true`` checks those calls like any client's, so an unsigned caller is refused
(NO_PERMISSION "No accessKey is configured") unless its address is a global white address. Each
server therefore signs its calls as RocketMQ's ``AclClientRPCHook`` does (``rocketq.acl.signing``)
with one account, named in one of two forms this module reads:

- JSON text ``{"accessKey": "...", "secretKey": "..."}`` (``securityToken`` optional), RocketMQ
  5.3's key ``innerClientAuthenticationCredentials`` (broker.conf, rmq-proxy.json);
- a YAML file with the same keys, RocketMQ's ``conf/tools.yml`` form (the file its tools and
  its proxy sign with); rocketq's key ``innerClientCredentialsFile`` names it, so a pod can point
  it at a mounted Secret (the operator mounts the cluster's ACL Secret and names its tools.yml).

Both forms read values as RocketMQ does (fastjson / SnakeYAML into a String): a bare number is
its text, so ``secretKey: 12345678`` is the secret "12345678"; anything else that is not text
(true, a list, a date) is refused with a hint to quote it. Errors name the key or the file and
the field, never the secret: YAML's own messages quote the offending line, so they are cut to
the problem and its position.

What is server-specific stays with the server. The proxy (``rocketq.proxy.credentials``) signs
only with ``enableAclRpcHookForClusterMode`` and falls back to ``$ROCKETMQ_HOME/conf/tools.yml``.
A broker (``resolve``) signs when it is given an account: the JSON key, or the environment
variable ``ROCKETQ_INNER_CLIENT_CREDENTIALS`` (same JSON, for a Secret), else the file; a named
file that does not exist means unsigned, with a warning at start (``unusable_reason``), because
an ACL Secret without tools.yml is normal for a cluster with neither slaves nor a proxy.

RocketMQ 4.9's ACL 1.0 has no setting for this (its guide white-lists the brokers' addresses);
RocketMQ 5.3's broker creates the JSON key's user as a super user of its ACL 2.0 store. rocketq's
ACL is 1.0's ``plain_acl.yml``, which the broker does not write, so the account must be in the
master's file with ``admin: true`` (or PUB|SUB on every topic and group): the sync reads every
table and writes consumer offsets.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import orjson
import yaml

from rocketq.acl import plainacl, signing
from rocketq.acl.plainacl import AclConfig
from rocketq.settings import SettingsError

KEY: Final = "innerClientAuthenticationCredentials"
ENV: Final = "ROCKETQ_INNER_CLIENT_CREDENTIALS"
FILE_KEY: Final = "innerClientCredentialsFile"
MAX_FILE_SIZE: Final = 64 * 1024
"""A credentials file holds two or three keys; anything larger is the wrong file."""
FIELDS: Final = ("accessKey", "secretKey", "securityToken")


class CredentialsError(SettingsError):
    """The account's setting or file cannot be used; the message never shows the secret."""


@dataclass(frozen=True, slots=True)
class Credentials:
    access_key: str
    secret_key: str = field(repr=False)
    security_token: str = field(default="", repr=False)

    def options(self) -> dict[str, str]:
        """Keyword options of an SDK client that signs with this account."""
        return {"access_key": self.access_key, "secret_key": self.secret_key, "security_token": self.security_token}

    def signer(self) -> signing.Signer:
        """The rpc hook of a remoting client that signs with this account."""
        return signing.Signer(self.access_key, self.secret_key, self.security_token)


def parse(text: str, where: str = KEY) -> Credentials | None:
    """The account in JSON text; None when the text is blank. ``where`` names the setting in errors."""
    if not text.strip():
        return None
    try:
        data = orjson.loads(text)
    except orjson.JSONDecodeError:
        raise CredentialsError(f'{where}: not JSON text (expected {{"accessKey": ..., "secretKey": ...}})') from None
    return from_mapping(data, where)


def read_file(path: Path) -> Credentials:
    """The account in a YAML file (tools.yml form); CredentialsError when it cannot be read or used."""
    try:
        if path.stat().st_size > MAX_FILE_SIZE:
            raise CredentialsError(f"{path}: larger than {MAX_FILE_SIZE} bytes, not a credentials file")
        data = yaml.safe_load(path.read_bytes())
    except OSError as exc:
        raise CredentialsError(f"cannot read the credentials file {path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise CredentialsError(f"{path}: not YAML: {plainacl.yaml_problem(exc)}") from None
    return from_mapping(data, str(path))


def from_mapping(data: Any, where: str) -> Credentials:
    """The account in a decoded JSON object or YAML mapping."""
    if not isinstance(data, dict):
        raise CredentialsError(f"{where}: expected accessKey and secretKey")
    access_key, secret_key, token = (_text(data.get(name), name, where) for name in FIELDS)
    if not access_key or not secret_key:
        raise CredentialsError(f"{where}: accessKey and secretKey must both be given")
    return Credentials(access_key, secret_key, token)


def _text(value: Any, name: str, where: str) -> str:
    if value is None:
        return ""
    # RocketMQ reads these into String fields, so a bare 12345678 is the text "12345678"
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str):
        raise CredentialsError(f"{where}: {name} is not text (quote it)")
    return value.strip()


def resolve(text: str, file: str) -> Credentials | None:
    """A broker's account: the JSON text (key or env), else the named file; None = sign nothing.

    A named file that does not exist is None too: the operator names its ACL Secret's tools.yml,
    which a cluster without slaves or proxy need not have (``unusable_reason`` says so at start).
    """
    credentials = parse(text)
    if credentials is not None or not file or not Path(file).exists():
        return credentials
    return read_file(Path(file))


def unusable_reason(config: AclConfig, credentials: Credentials | None, file: str = "") -> str | None:
    """Why a master with this ACL table would refuse calls signed with these credentials (or
    unsigned ones), judged on this broker's own table (masters and slaves usually share one);
    None when it would accept them. ``file``: the broker's innerClientCredentialsFile, if any."""
    if credentials is None:
        missing = f"{FILE_KEY} names {file}, which does not exist, and " if file else ""
        return (f"{missing}{KEY} is not set: this broker's calls to its master are unsigned, and a master "
                "with aclEnable=true refuses them unless this broker's address is a global white address")
    access_key = credentials.access_key
    account = config.accounts.get(access_key)
    if account is None:
        return f"the inner-client account names accessKey {access_key!r}, which plain_acl.yml does not hold"
    if account.secret_key != credentials.secret_key:
        return f"the inner-client account {access_key!r}: its secretKey differs from plain_acl.yml's"
    if not account.admin:
        return f"the inner-client account {access_key!r} is not admin: true, so a master may refuse offsets or tables"
    return None
