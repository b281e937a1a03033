"""The servers under test, started on loopback with free ports and temporary directories.

- rocketq: ``rocketq.local.cluster.LocalCluster`` (what ``rocketq local up`` runs): one name
  server and one broker, ASYNC_FLUSH, or SYNC_FLUSH for the durable comparison;
- NATS: ``nats-server`` with JetStream on and its store in the temporary directory. The
  durable variant sets ``sync_interval: always`` (fsync after every write), which only
  nats-server 2.10 and newer understand; an older server refuses the setting, and the
  comparison then has no NATS figure for that row (``ServerUnavailable``);
- Redis: ``redis-server`` with ``appendonly yes`` and ``appendfsync everysec`` (``always`` for
  the durable variant), RDB snapshots off (the AOF is the durability), data in the directory.

Each ``Server`` knows its client address, every process to charge CPU to (``pids``) and the
one whose memory is reported (``main_pid``: the broker, not the name server). ``stop`` ends
exactly those processes (SIGTERM, then SIGKILL after a grace period). Nothing here installs
anything (``installing`` finds the binaries).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from rocketq.local.cluster import ClusterLayout, LocalCluster, LocalClusterError
from rocketq.local.ports import free_port

START_TIMEOUT_S: Final = 60.0
STOP_GRACE_S: Final = 15.0
POLL_S: Final = 0.05
NATS_READY: Final = "Server is ready"
REDIS_READY: Final = "Ready to accept connections"


class ServerUnavailable(RuntimeError):
    """The server cannot run in the asked mode here (the message says why)."""


@dataclass
class Server:
    system: str
    durable: bool
    """True: the SYNC_FLUSH variant (every acknowledged message is on disk)."""
    address: str
    main_pid: int
    pids: list[int]
    version: str
    settings: str
    """The durability settings, as the report shows them."""
    _stop: Callable[[], None] = field(repr=False, default=lambda: None)

    def stop(self) -> None:
        self._stop()
        self._stop = lambda: None


def _terminate(pids: list[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_GRACE_S
    for pid in pids:
        while _running(pid) and time.monotonic() < deadline:
            time.sleep(POLL_S)
        if _running(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            _running(pid)


def _running(pid: int) -> bool:
    try:
        done, _status = os.waitpid(pid, os.WNOHANG)  # reaps our own child once it exits
        return done == 0
    except ChildProcessError:  # not our child: ask the kernel
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True


def _spawn(argv: list[str], log: Path, ready_mark: str, what: str) -> subprocess.Popen[bytes]:
    """Start ``argv`` with its output in ``log`` and wait for ``ready_mark`` in it."""
    with open(log, "wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        text = log.read_text(errors="replace")
        if ready_mark in text:
            return proc
        if proc.poll() is not None:
            raise ServerUnavailable(f"{what} exited with {proc.returncode}: {text.strip()[-500:]}")
        time.sleep(POLL_S)
    _terminate([proc.pid])
    raise ServerUnavailable(f"{what} did not start within {START_TIMEOUT_S:.0f}s (log: {log})")


def start_rocketq(directory: Path, *, durable: bool, version: str) -> Server:
    flush = "SYNC_FLUSH" if durable else "ASYNC_FLUSH"
    cluster = LocalCluster(ClusterLayout.with_free_ports(directory, broker_groups=1, flush_disk_type=flush))
    state = cluster.up()
    broker = next(p for p in state.processes if p.name != "namesrv")
    return Server("rocketq", durable, state.namesrv, broker.pid, [p.pid for p in state.processes], version,
                  f"flushDiskType={flush}", lambda: _stop_cluster(cluster))


def _stop_cluster(cluster: LocalCluster) -> None:
    with contextlib.suppress(LocalClusterError):  # already down: nothing to stop
        cluster.down()


def start_nats(binary: str, directory: Path, *, durable: bool, version: str) -> Server:
    port = free_port()
    store = directory / "jetstream"
    sync = "sync_interval: always" if durable else ""
    conf = directory / "nats.conf"
    conf.write_text(f'listen: "127.0.0.1:{port}"\njetstream {{\n  store_dir: "{store}"\n  {sync}\n}}\n')
    try:
        proc = _spawn([binary, "-c", str(conf)], directory / "nats.log", NATS_READY, "nats-server")
    except ServerUnavailable as exc:
        if durable and "sync_interval" in str(exc):
            raise ServerUnavailable(f"nats-server {version} has no sync file store (sync_interval: always "
                                    f"needs 2.10 or newer)") from None
        raise
    settings = "file store, sync_interval: always" if durable else "file store, default sync (every 2 min)"
    return Server("nats", durable, f"127.0.0.1:{port}", proc.pid, [proc.pid], version, settings,
                  lambda: _terminate([proc.pid]))


def start_redis(binary: str, directory: Path, *, durable: bool, version: str) -> Server:
    port = free_port()
    fsync = "always" if durable else "everysec"
    argv = [binary, "--bind", "127.0.0.1", "--port", str(port), "--dir", str(directory), "--daemonize", "no",
            "--appendonly", "yes", "--appendfsync", fsync, "--save", "", "--logfile", ""]
    proc = _spawn(argv, directory / "redis.log", REDIS_READY, "redis-server")
    return Server("redis", durable, f"127.0.0.1:{port}", proc.pid, [proc.pid], version,
                  f"appendonly yes, appendfsync {fsync}", lambda: _terminate([proc.pid]))
