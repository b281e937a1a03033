"""Changes to the ACL files that RocketMQ's ACL admin requests make (codes 50, 51 and 53).

Each change reads the file as YAML, edits the document, bumps its ``dataVersion`` (RocketMQ's
``[{counter, timestamp}]``), checks that the result still parses as an ACL file (a change never
writes a file the broker could not load) and replaces the file atomically (a temporary file in
the same directory, fsync, rename), so a crash leaves the old file or the new one.

As RocketMQ 4.9.3: an update of an existing account is written to the file that defines it,
a new account goes to ``plain_acl.yml``; the header's fields that are absent leave the
account's values as they are; the global white list is replaced as a whole, in the file named
by the request or in ``plain_acl.yml``.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml

from rocketq.acl import plainacl
from rocketq.acl.plainacl import MIN_KEY_LENGTH, AclFileError


class AclEditError(ValueError):
    """The change cannot be made; the message says why (it becomes the answer's remark)."""


@dataclass(frozen=True, slots=True)
class AccountChange:
    """UPDATE_AND_CREATE_ACL_CONFIG's header: None means "leave as it is"."""

    access_key: str
    secret_key: str | None = None
    white_remote_address: str | None = None
    admin: bool | None = None
    default_topic_perm: str | None = None
    default_group_perm: str | None = None
    topic_perms: list[str] | None = None
    group_perms: list[str] | None = None


_FIELDS: Final = (
    ("secretKey", "secret_key"), ("whiteRemoteAddress", "white_remote_address"), ("admin", "admin"),
    ("defaultTopicPerm", "default_topic_perm"), ("defaultGroupPerm", "default_group_perm"),
    ("topicPerms", "topic_perms"), ("groupPerms", "group_perms"),
)


def upsert_account(path: Path, change: AccountChange) -> None:
    """Create the account in ``path`` or update it there."""
    _check_key(change.access_key, "accessKey")
    if change.secret_key is not None:
        _check_key(change.secret_key, "secretKey")
    doc = _read(path)
    accounts = _accounts(doc, path)
    account = next((a for a in accounts if isinstance(a, dict) and str(a.get("accessKey")) == change.access_key), None)
    if account is None:
        if change.secret_key is None:
            raise AclEditError(f"a new account needs a secretKey (accessKey={change.access_key})")
        account = {"accessKey": change.access_key}
        accounts.append(account)
    for key, attribute in _FIELDS:
        value = getattr(change, attribute)
        if value is not None:
            account[key] = value
    _write(path, doc)


def delete_account(path: Path, access_key: str) -> bool:
    """Remove the account from ``path``; False when the file does not define it."""
    doc = _read(path)
    accounts = _accounts(doc, path)
    kept = [a for a in accounts if not (isinstance(a, dict) and str(a.get("accessKey")) == access_key)]
    if len(kept) == len(accounts):
        return False
    doc["accounts"] = kept
    _write(path, doc)
    return True


def set_global_white_addresses(path: Path, patterns: Sequence[str]) -> None:
    doc = _read(path)
    doc["globalWhiteRemoteAddresses"] = list(patterns)
    _write(path, doc)


def _check_key(value: str, name: str) -> None:
    if len(value) < MIN_KEY_LENGTH:
        raise AclEditError(f"The {name}={value if name == 'accessKey' else '***'} cannot be null "
                           f"and length should longer than {MIN_KEY_LENGTH - 1}")


def _read(path: Path) -> dict[str, Any]:
    """The file as a YAML mapping: an empty or missing file is an empty document."""
    if not path.exists():
        return {}
    try:
        doc = yaml.safe_load(plainacl.read(path).decode("utf-8"))
    except (AclFileError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise AclEditError(f"{path}: cannot be read as YAML: {exc}") from None
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise AclEditError(f"{path}: the top level is not a mapping")
    return doc


def _accounts(doc: dict[str, Any], path: Path) -> list[Any]:
    accounts = doc.setdefault("accounts", [])
    if accounts is None:
        accounts = doc["accounts"] = []
    if not isinstance(accounts, list):
        raise AclEditError(f"{path}: accounts is not a list")
    return accounts


def _bump_version(doc: dict[str, Any]) -> None:
    old = plainacl.parse_data_version(doc.get("dataVersion"))
    doc["dataVersion"] = [{"counter": old.counter + 1, "timestamp": time.time_ns() // 1_000_000}]


def _write(path: Path, doc: dict[str, Any]) -> None:
    _bump_version(doc)
    text = yaml.safe_dump(doc, sort_keys=False, allow_unicode=True)
    try:
        plainacl.parse(text)
    except AclFileError as exc:
        raise AclEditError(str(exc)) from None
    _replace(path, text.encode("utf-8"))


def _replace(path: Path, content: bytes) -> None:
    try:
        fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    except OSError as exc:
        raise AclEditError(f"{path}: cannot write: {exc}") from None
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(content)
            out.flush()
            os.fsync(out.fileno())
        with contextlib.suppress(FileNotFoundError):  # keep the file's mode (mkstemp makes 0600)
            os.chmod(temporary, path.stat().st_mode & 0o7777)
        os.replace(temporary, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise AclEditError(f"{path}: cannot write: {exc}") from None
