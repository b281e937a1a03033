"""The broker.conf keys of ACL.

``aclEnable`` is RocketMQ's. RocketMQ 4.9 reads its account file from
``$ROCKETMQ_HOME/conf/plain_acl.yml``, or from the Java system property
``rocketmq.acl.plain.file``; rocketq takes that property's name as a broker.conf key (and
``--set``), so a pod can point it at a mounted Secret. ``innerClientAuthenticationCredentials``
(RocketMQ 5.3's key, JSON) or rocketq's ``innerClientCredentialsFile`` (a tools.yml-form file) is
the account the broker signs its own calls with (``acl.innerclient``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from rocketq.acl import innerclient
from rocketq.settings import SettingsError, setting

PLAIN_FILE_KEY: Final = "rocketmq.acl.plain.file"
DEFAULT_RELATIVE_PATH: Final = Path("conf") / "plain_acl.yml"


@dataclass(frozen=True, slots=True)
class AclSettings:
    acl_enable: bool = setting("aclEnable", False, "check every request against plain_acl.yml")
    plain_file: str = setting(
        PLAIN_FILE_KEY, "", "the account file; empty = $ROCKETMQ_HOME/conf/plain_acl.yml (RocketMQ's place)")
    inner_client_credentials: str = setting(
        innerclient.KEY, "", '{"accessKey": ..., "secretKey": ...}: signs this broker\'s calls to other brokers '
        "(a slave's metadata sync); empty = the file below, else unsigned", env=innerclient.ENV, secret=True)
    inner_client_credentials_file: str = setting(
        innerclient.FILE_KEY, "", "rocketq's key: YAML with accessKey and secretKey (tools.yml form), read when "
        f"{innerclient.KEY} is empty; a file that does not exist = unsigned")

    def __post_init__(self) -> None:
        if self.acl_enable:
            self.path()  # a missing location stops the broker before it binds
        innerclient.parse(self.inner_client_credentials)  # CredentialsError is a SettingsError

    def inner_client(self) -> innerclient.Credentials | None:
        """The account this broker signs its own calls with (reads the file); None = unsigned."""
        return innerclient.resolve(self.inner_client_credentials, self.inner_client_credentials_file)

    def path(self) -> Path:
        if self.plain_file:
            return Path(self.plain_file)
        home = os.environ.get("ROCKETMQ_HOME")
        if not home:
            raise SettingsError(f"aclEnable=true: set {PLAIN_FILE_KEY} or ROCKETMQ_HOME (for conf/plain_acl.yml)")
        return Path(home) / DEFAULT_RELATIVE_PATH
