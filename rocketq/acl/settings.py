"""The broker.conf keys of ACL.

``aclEnable`` is RocketMQ's. RocketMQ 4.9 reads its account file from
``$ROCKETMQ_HOME/conf/plain_acl.yml``, or from the Java system property
``rocketmq.acl.plain.file``; rocketq takes that property's name as a broker.conf key (and
``--set``), so a pod can point it at a mounted Secret. ``innerClientAuthenticationCredentials``
(RocketMQ 5.3's key) is the account the broker signs its own calls with (``acl.innerclient``).
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
        "(a slave's metadata sync); empty = unsigned", env=innerclient.ENV, secret=True)

    def __post_init__(self) -> None:
        if self.acl_enable:
            self.path()  # a missing location stops the broker before it binds
        try:
            innerclient.parse(self.inner_client_credentials)
        except innerclient.CredentialsError as exc:
            raise SettingsError(str(exc)) from None

    def path(self) -> Path:
        if self.plain_file:
            return Path(self.plain_file)
        home = os.environ.get("ROCKETMQ_HOME")
        if not home:
            raise SettingsError(f"aclEnable=true: set {PLAIN_FILE_KEY} or ROCKETMQ_HOME (for conf/plain_acl.yml)")
        return Path(home) / DEFAULT_RELATIVE_PATH
