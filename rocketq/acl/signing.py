"""The signature of a request, as RocketMQ's ``AclClientRPCHook`` makes it and its
``PlainAccessValidator`` checks it.

The signed content is every extField's *value* (not its key), in the order of the keys sorted
as Java sorts strings (code unit order: upper case < ``_`` < lower case), concatenated with no
separator and encoded as UTF-8, followed by the raw body bytes. ``Signature`` itself is left out.
The signature is the standard padded Base64 of HMAC-SHA1 over that content, keyed with the
account's secretKey (UTF-8).

A client adds ``AccessKey`` (and ``SecurityToken`` when it has one) *before* signing, so both
are part of the content. The broker signs whatever extFields arrived, so a client that sends
more fields (Alibaba's ``OnsChannel``) verifies too.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Callable, Iterable, Mapping
from typing import Final

from rocketq.protocol.frames import RemotingCommand

ACCESS_KEY: Final = "AccessKey"
SECRET_KEY: Final = "SecretKey"
SIGNATURE: Final = "Signature"
SECURITY_TOKEN: Final = "SecurityToken"

RpcHook = Callable[[RemotingCommand], None]
"""Applied to every outgoing request of a client just before it is encoded."""


def _java_order(key: str) -> bytes:
    """Java's ``String.compareTo`` order: UTF-16 code units (differs from code points above U+FFFF)."""
    return key.encode("utf-16-be")


def content_parts(ext_fields: Mapping[str, str], body: Iterable[bytes | memoryview],
                  leave_out: frozenset[str] = frozenset({SIGNATURE})) -> list[bytes | memoryview]:
    """The signed bytes as buffers: the sorted values, then the body's parts."""
    values = "".join(ext_fields[k] for k in sorted(ext_fields, key=_java_order) if k not in leave_out)
    return [values.encode(), *body]


def sign(secret_key: str, parts: Iterable[bytes | memoryview]) -> str:
    mac = hmac.new(secret_key.encode(), digestmod=hashlib.sha1)
    for part in parts:
        mac.update(part)
    return base64.b64encode(mac.digest()).decode("ascii")


def body_parts(cmd: RemotingCommand) -> tuple[bytes | memoryview, ...]:
    return tuple(cmd.body_parts) if cmd.body_parts else (cmd.body,)


def signer(access_key: str, secret_key: str, security_token: str = "") -> Signer | None:
    """The hook for a client given these credentials; None (send unsigned) without an access key."""
    return Signer(access_key, secret_key, security_token) if access_key else None


class Signer:
    """A client's rpc hook: adds AccessKey, SecurityToken and Signature to each request."""

    def __init__(self, access_key: str, secret_key: str, security_token: str = "") -> None:
        if not access_key or not secret_key:
            raise ValueError("signing needs both an access key and a secret key")
        self.access_key = access_key
        self._secret_key = secret_key
        self._security_token = security_token

    def __call__(self, cmd: RemotingCommand) -> None:
        fields = {**cmd.ext_fields, ACCESS_KEY: self.access_key}  # a copy: the caller's dict may be shared
        if self._security_token:
            fields[SECURITY_TOKEN] = self._security_token
        fields[SIGNATURE] = sign(self._secret_key, content_parts(fields, body_parts(cmd)))
        cmd.ext_fields = fields

    def __repr__(self) -> str:  # never show the secret
        return f"Signer(access_key={self.access_key!r})"
