"""``plain_acl.yml``: RocketMQ 4.9's account file, parsed into frozen values.

::

    globalWhiteRemoteAddresses: [10.10.103.*]     # these peers need no signature at all
    accounts:
      - accessKey: RocketMQ                       # longer than 6 characters
        secretKey: "12345678"                     # longer than 6; a bare number is read as text
        whiteRemoteAddress: 192.168.0.*           # these peers skip the signature check
        admin: false                              # may use the admin request codes
        defaultTopicPerm: DENY                    # for topics not listed; missing/invalid = DENY
        defaultGroupPerm: SUB                     # for groups not listed; missing/invalid = DENY
        topicPerms: [topicA=DENY, topicB=PUB|SUB]
        groupPerms: [groupA=DENY]                 # kept under %RETRY%groupA, as RocketMQ does

As RocketMQ: a permission that is not PUB, SUB, PUB|SUB, SUB|PUB or DENY counts as DENY (it
fails closed); ``dataVersion`` and unknown keys are ignored. Unlike a silent Java map, every
structural error (an entry without ``=``, a short key, a duplicate accessKey, a bad address
pattern) raises ``AclFileError`` naming the field, so a broken file is never half-applied.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import yaml

from rocketq.acl import addresses, permissions
from rocketq.acl.addresses import AddressPatternError, Pattern
from rocketq.protocol.sharedbodies import BodyError, DataVersion

RETRY_GROUP_PREFIX: Final = "%RETRY%"
MIN_KEY_LENGTH: Final = 7
"""RocketMQ refuses access and secret keys of 6 characters or fewer."""
MAX_FILE_SIZE: Final = 16 * 1024 * 1024
"""A larger plain_acl.yml is refused before it is read."""


class AclFileError(ValueError):
    """plain_acl.yml cannot be used; the message names the field."""


@dataclass(frozen=True, slots=True)
class Account:
    access_key: str
    secret_key: str = field(repr=False)
    white_remote_address: Pattern = addresses.NEVER
    admin: bool = False
    default_topic_perm: int = permissions.DENY
    default_group_perm: int = permissions.DENY
    resource_perms: Mapping[str, int] = field(default_factory=dict)
    """Topic names, and ``%RETRY%<group>`` for groups, to their permission bits."""


@dataclass(frozen=True, slots=True)
class AclConfig:
    global_white_addresses: tuple[Pattern, ...] = ()
    accounts: Mapping[str, Account] = field(default_factory=dict)
    data_version: DataVersion = field(default_factory=DataVersion)


def load(path: str | Path) -> AclConfig:
    return parse_bytes(read(path), path)


def read(path: str | Path) -> bytes:
    """The file's bytes, or AclFileError naming it (missing, unreadable, too large)."""
    path = Path(path)
    try:
        size = path.stat().st_size
        if size > MAX_FILE_SIZE:
            raise AclFileError(f"{path}: {size} bytes, more than {MAX_FILE_SIZE}")
        return path.read_bytes()
    except OSError as exc:
        raise AclFileError(f"{path}: cannot read: {exc}") from None


def parse_bytes(content: bytes, path: str | Path) -> AclConfig:
    """``parse`` of a file's bytes; errors start with the file's path."""
    try:
        return parse(content.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise AclFileError(f"{path}: not UTF-8: {exc}") from None
    except AclFileError as exc:
        raise AclFileError(f"{path}: {exc}") from None


_QUOTED: Final = re.compile(r"'[^']*'|\"[^\"]*\"")


def yaml_problem(exc: yaml.YAMLError) -> str:
    """YAML's message without the quoted line (which may hold the secret): the problem and where.
    Quoted text in the problem goes too (``found undefined alias 'x'`` quotes an unquoted ``*x``)."""
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem_mark is not None:
        mark = exc.problem_mark
        problem = _QUOTED.sub("'...'", exc.problem or exc.context or type(exc).__name__)
        return f"{problem} at line {mark.line + 1}, column {mark.column + 1}"
    return type(exc).__name__


def parse(text: str) -> AclConfig:
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:  # never YAML's own message: it quotes the line, which may be a secret
        raise AclFileError(f"not YAML: {yaml_problem(exc)}") from None
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise AclFileError("the top level must be a mapping (globalWhiteRemoteAddresses, accounts)")
    white = tuple(_pattern(item, f"globalWhiteRemoteAddresses[{i}]")
                  for i, item in enumerate(_list(raw.get("globalWhiteRemoteAddresses"), "globalWhiteRemoteAddresses")))
    accounts: dict[str, Account] = {}
    for i, item in enumerate(_list(raw.get("accounts"), "accounts")):
        account = _account(item, f"accounts[{i}]")
        if account.access_key in accounts:
            raise AclFileError(f"accounts[{i}].accessKey: {account.access_key!r} is defined twice")
        accounts[account.access_key] = account
    return AclConfig(white, accounts, parse_data_version(raw.get("dataVersion")))


def parse_data_version(raw: Any) -> DataVersion:
    """RocketMQ writes ``dataVersion`` as a one-element list; a bare mapping is read too."""
    if isinstance(raw, list) and raw:
        raw = raw[0]
    try:
        return DataVersion.from_json(raw) if isinstance(raw, dict) else DataVersion()
    except BodyError:
        return DataVersion()


def _account(raw: Any, where: str) -> Account:
    if not isinstance(raw, dict):
        raise AclFileError(f"{where}: expected a mapping")
    access_key = _key(raw.get("accessKey"), f"{where}.accessKey")
    perms: dict[str, int] = {}
    perms.update(_resources(raw.get("topicPerms"), f"{where}.topicPerms", ""))
    perms.update(_resources(raw.get("groupPerms"), f"{where}.groupPerms", RETRY_GROUP_PREFIX))
    return Account(
        access_key=access_key,
        secret_key=_key(raw.get("secretKey"), f"{where}.secretKey"),
        white_remote_address=_pattern(raw.get("whiteRemoteAddress"), f"{where}.whiteRemoteAddress"),
        admin=_flag(raw.get("admin"), f"{where}.admin"),
        default_topic_perm=permissions.parse(raw.get("defaultTopicPerm")) or permissions.DENY,
        default_group_perm=permissions.parse(raw.get("defaultGroupPerm")) or permissions.DENY,
        resource_perms=perms,
    )


def _scalar(value: Any) -> str | None:
    """A YAML scalar as Java's map-to-string would give it (``12345678`` is a key, not a number)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return str(value)
    return None


def _key(value: Any, where: str) -> str:
    text = _scalar(value)
    if text is None or len(text) < MIN_KEY_LENGTH:
        raise AclFileError(f"{where}: required, text of at least {MIN_KEY_LENGTH} characters")
    return text


def _flag(value: Any, where: str) -> bool:
    text = _scalar(value)
    if text is None:
        return False
    if text.lower() not in ("true", "false"):
        raise AclFileError(f"{where}: expected true or false, got {text!r}")
    return text.lower() == "true"


def _list(value: Any, where: str) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, str):  # RocketMQ accepts a single string where a list is expected
        return [value]
    if not isinstance(value, list):
        raise AclFileError(f"{where}: expected a list")
    return value


def _pattern(value: Any, where: str) -> Pattern:
    try:
        return addresses.parse(value)
    except AddressPatternError as exc:
        raise AclFileError(f"{where}: {exc}") from None


def _resources(value: Any, where: str, prefix: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for i, item in enumerate(_list(value, where)):
        text = _scalar(item)
        name, sep, perm = (text or "").partition("=")
        if not sep or not name.strip() or "=" in perm:
            raise AclFileError(f"{where}[{i}]: expected <name>=<PUB|SUB|PUB|SUB|DENY>, got {item!r}")
        out[prefix + name.strip()] = permissions.parse(perm) or permissions.DENY
    return out
