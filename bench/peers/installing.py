"""The peer servers' binaries: found on PATH, or installed from Debian's packages on demand.

The comparison needs ``nats-server`` (JetStream is built in; Debian's package ``nats-server``)
and ``redis-server`` 7 or newer (package ``redis-server``). When a binary is missing, ``ensure``
runs ``apt-get install`` for its package once (after an ``apt-get update`` if the first try
fails, since a fresh machine has no package lists) and reports why in plain words when that
does not work: the caller then leaves that peer out of the run rather than failing it.

Installing needs root; as another user the message says which command to run. Nothing here
starts a server (``servers`` does that).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from typing import Final

APT_TIMEOUT_S: Final = 600.0
"""Upper bound for one apt-get call (an update or an install) before giving up."""


@dataclass(frozen=True)
class Binary:
    command: str
    package: str
    min_major: int = 0
    """Oldest major version the comparison accepts (0: any)."""


NATS_SERVER: Final = Binary("nats-server", "nats-server")
REDIS_SERVER: Final = Binary("redis-server", "redis-server", min_major=7)


class InstallError(RuntimeError):
    """A binary is missing and could not be installed; the message says why and what to do."""


def ensure(binary: Binary) -> str:
    """The path of ``binary``'s command, installing its package first if it is missing."""
    path = _find(binary.command)
    if path is None:
        _install(binary)
        path = _find(binary.command)
        if path is None:
            raise InstallError(f"{binary.package} installed, but {binary.command} is still not on PATH")
    major = version_major(path)
    if major is not None and major < binary.min_major:
        raise InstallError(f"{path} is version {major}.x; the comparison needs {binary.min_major} or newer")
    return path


def _find(command: str) -> str | None:
    # Debian puts servers in /usr/bin, some images in /usr/sbin, which a plain user may lack on PATH
    return shutil.which(command) or next(
        (p for p in (f"/usr/sbin/{command}", f"/usr/bin/{command}") if os.access(p, os.X_OK)), None)


def _install(binary: Binary) -> None:
    if os.geteuid() != 0:
        raise InstallError(f"{binary.command} is missing and installing needs root: "
                           f"run `sudo apt-get install -y {binary.package}`")
    if shutil.which("apt-get") is None:
        raise InstallError(f"{binary.command} is missing and there is no apt-get here: "
                           f"install {binary.package} with this system's package manager")
    print(f"installing {binary.package} with apt-get (a missing {binary.command})", flush=True)
    first = _apt("install", "-y", "-q", "--no-install-recommends", binary.package)
    if first.returncode == 0:
        return
    # a fresh machine has no package lists: update once and try again
    second = _apt("update", "-q")
    if second.returncode == 0:
        second = _apt("install", "-y", "-q", "--no-install-recommends", binary.package)
    if second.returncode != 0:
        tail = (second.stderr or second.stdout or "").strip().splitlines()[-3:]
        raise InstallError(f"could not install {binary.package} (apt-get exit {second.returncode}): "
                           + " / ".join(tail))


def _apt(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    try:
        return subprocess.run(["apt-get", *args], capture_output=True, text=True, env=env, timeout=APT_TIMEOUT_S,
                              check=False)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(["apt-get", *args], 124, "", f"apt-get {args[0]} timed out")


VERSION: Final = re.compile(r"v=?(\d+)\.(\d+)\.(\d+)|version[: ]v?(\d+)\.(\d+)\.(\d+)", re.IGNORECASE)


def version(path: str) -> str:
    """The server's version as it prints it (``2.9.10``, ``7.0.15``), or "" if it prints none."""
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30, check=False).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ""
    match = VERSION.search(out)
    if match is None:
        return ""
    parts = [g for g in match.groups() if g is not None]
    return ".".join(parts)


def version_major(path: str) -> int | None:
    text = version(path)
    return int(text.split(".")[0]) if text else None
