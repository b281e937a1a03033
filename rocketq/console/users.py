"""Console users: who may log in, with which role, checked against argon2 password hashes.

The users file has one account per line, ``name:role:hash``, where role is ``admin`` (may change
things) or ``read-only`` (sees everything, changes nothing) and hash is an argon2id hash as
``argon2-cffi`` writes it (``$argon2id$v=19$...``). Blank lines and ``#`` comments are ignored.
A Kubernetes Secret mounted as a file is read the same way. ``rocketq console --add-user`` writes
such a line, so a plain password never has to sit in the file.

Passwords are never stored or logged; checking one costs an argon2 verify (tens of
milliseconds), which also slows password guessing.

A console started with a users file follows it while it runs (``Directory.refresh``): the
file is looked at (one ``stat``) at most every ``RELOAD_CHECK_S`` and read again when it
changed, as a mounted Secret does when someone edits it, so no restart is needed to add,
remove or demote a user. A file that no longer parses is logged and the accounts in force
stay. A logged-in user who was removed, or whose password changed, is logged out on the next
request; one whose role changed gets the new role at once (``Directory.current``).
"""

from __future__ import annotations

import enum
import logging
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

USER_NAME: Final = re.compile(r"[A-Za-z0-9_.@-]{1,64}")
"""Names a user may have: no colon (the field separator), nothing a log line could be forged with."""
MIN_PASSWORD_LENGTH: Final = 8
RELOAD_CHECK_S: Final = 2.0
"""How often, at most, the users file is looked at for a change."""

log = logging.getLogger(__name__)

_HASHER: Final = PasswordHasher()


class Role(enum.StrEnum):
    ADMIN = "admin"
    READ_ONLY = "read-only"


class UsersFileError(ValueError):
    """The users file cannot be read or has a malformed line (the message names the line)."""


@dataclass(frozen=True, slots=True)
class User:
    name: str
    role: Role
    password_hash: str

    @property
    def may_change(self) -> bool:
        return self.role is Role.ADMIN


def hash_password(password: str) -> str:
    if len(password) < MIN_PASSWORD_LENGTH:
        raise ValueError(f"a password needs at least {MIN_PASSWORD_LENGTH} characters")
    return _HASHER.hash(password)


def user_line(name: str, role: Role, password: str) -> str:
    """One line of the users file for a new account."""
    if not USER_NAME.fullmatch(name):
        raise ValueError(f"user name {name!r}: use 1-64 letters, digits, '_', '.', '@' or '-'")
    return f"{name}:{role.value}:{hash_password(password)}"


def parse_users(text: str, source: str = "users file") -> dict[str, User]:
    users: dict[str, User] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        name, sep1, rest = line.partition(":")
        role_text, sep2, password_hash = rest.partition(":")
        where = f"{source} line {number}"
        if not (sep1 and sep2 and password_hash):
            raise UsersFileError(f"{where}: expected name:role:hash")
        if not USER_NAME.fullmatch(name):
            raise UsersFileError(f"{where}: bad user name {name!r}")
        try:
            role = Role(role_text)
        except ValueError:
            raise UsersFileError(f"{where}: role {role_text!r} is not admin or read-only") from None
        if not password_hash.startswith("$argon2"):
            raise UsersFileError(f"{where}: the password must be an argon2 hash (rocketq console --add-user)")
        if name in users:
            raise UsersFileError(f"{where}: user {name!r} appears twice")
        users[name] = User(name, role, password_hash)
    return users


def load_users(path: Path) -> dict[str, User]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsersFileError(f"cannot read {path}: {exc.strerror or exc}") from None
    users = parse_users(text, str(path))
    if not users:
        raise UsersFileError(f"{path} defines no user")
    return users


def _stamp(path: Path) -> tuple[int, int, int] | None:
    """What changes when the file does (a Secret update swaps the file: a new inode)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_ino, st.st_mtime_ns, st.st_size


class Directory:
    """The accounts in force; ``authenticate`` is the only way to get a ``User`` for a session.

    With ``source`` (the users file they were read from), ``refresh`` follows that file."""

    def __init__(self, users: dict[str, User], source: Path | None = None, *,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._users = dict(users)
        self._source = source
        self._clock = clock
        self._stamp = _stamp(source) if source is not None else None
        self._checked = clock()
        # a name that does not exist still costs one verify, so timing does not tell which names exist
        self._decoy = _HASHER.hash("not a password of anyone")

    def refresh(self) -> None:
        """Read the users file again if it changed since it was last read (checked at most every
        ``RELOAD_CHECK_S``); a file that cannot be read or parsed leaves the accounts as they are."""
        if self._source is None or self._clock() - self._checked < RELOAD_CHECK_S:
            return
        self._checked = self._clock()
        stamp = _stamp(self._source)
        if stamp is None or stamp == self._stamp:
            return
        self._stamp = stamp
        try:
            users = load_users(self._source)
        except UsersFileError as exc:
            log.error("users file changed but is not usable, the accounts in force stay: %s", exc)
            return
        log.info("users file %s read again: %d accounts", self._source, len(users))
        self._users = users

    def current(self, user: User) -> User | None:
        """``user`` as the accounts in force have it now: None when removed or given a new password."""
        now = self._users.get(user.name)
        if now is None or now.password_hash != user.password_hash:
            return None
        return now

    def authenticate(self, name: str, password: str) -> User | None:
        user = self._users.get(name)
        try:
            _HASHER.verify(user.password_hash if user else self._decoy, password)
        except (VerifyMismatchError, VerificationError, InvalidHashError):
            return None
        return user

    def __len__(self) -> int:
        return len(self._users)
