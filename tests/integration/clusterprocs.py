"""Starting and stopping real rocketq processes (name servers, brokers) for integration tests,
and reading back everything a topic holds."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from rocketq.client.pullconsumer import PullConsumer
from rocketq.local.ports import free_port

READY = " listening on "


@dataclass
class Proc:
    """One rocketq process started by a test."""

    popen: subprocess.Popen[bytes]
    address: str
    log: Path

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 20) -> int:
        if self.popen.poll() is None:
            self.popen.send_signal(sig)
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(5)
        return self.popen.returncode

    def kill9(self) -> None:
        self.stop(signal.SIGKILL)


def start_process(args: list[str], log: Path, timeout: float = 30, env: dict[str, str] | None = None,
                  preexec_fn: Callable[[], None] | None = None) -> Proc:
    """Start ``rocketq ARGS`` with output appended to ``log``; return once it prints its ready line.

    ``preexec_fn`` runs in the child before rocketq starts (e.g. to lower its resource limits)."""
    seen = log.stat().st_size if log.exists() else 0  # a restart appends to the same log
    with open(log, "ab") as out:
        popen = subprocess.Popen(
            [sys.executable, "-m", "rocketq", *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env={**os.environ, **(env or {})},
            preexec_fn=preexec_fn,
        )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = log.read_bytes()[seen:].decode(errors="replace")
        lines = [line for line in text.splitlines() if READY in line]
        if lines:
            return Proc(popen, lines[-1].rsplit(READY, 1)[1].strip(), log)
        if popen.poll() is not None:
            raise RuntimeError(f"rocketq {args[0]} exited {popen.returncode}:\n{text[-3000:]}")
        time.sleep(0.05)
    popen.kill()
    popen.wait(5)
    raise RuntimeError(f"rocketq {args[0]} not ready in {timeout}s:\n{log.read_text(errors='replace')[-3000:]}")


class Processes:
    """Starts namesrv/broker processes for one test and stops all of them at the end."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.started: list[Proc] = []

    def start(self, args: list[str], log_name: str, preexec_fn: Callable[[], None] | None = None) -> Proc:
        """Any ``rocketq ARGS`` process, stopped with the others at the end."""
        proc = start_process(args, self.tmp / f"{log_name}.log", preexec_fn=preexec_fn)
        self.started.append(proc)
        return proc

    def namesrv(self, *extra: str) -> Proc:
        port = free_port()
        return self.start(["namesrv", "-p", str(port), "--metrics-port", "0", *extra], f"namesrv-{port}")

    def broker(
        self,
        namesrv: str,
        name: str = "broker-a",
        *,
        store: Path | None = None,
        port: int | None = None,
        config: dict[str, str] | None = None,
        extra: tuple[str, ...] = (),
        preexec_fn: Callable[[], None] | None = None,
    ) -> Proc:
        port = port or free_port()
        store = store or self.tmp / f"{name}-store"
        args = [
            "broker",
            "-n",
            namesrv,
            "-p",
            str(port),
            "--store-dir",
            str(store),
            "--metrics-port",
            "0",
            "--set",
            f"brokerName={name}",
            "--set",
            "brokerIP1=127.0.0.1",
            "--set",
            "registerNameServerPeriod=1000",
            "--set",
            "mappedFileSizeCommitLog=67108864",
            "--set",
            f"haListenPort={free_port()}",  # a master binds it; listenPort + 1 may be taken
        ]
        for key, value in (config or {}).items():
            args += ["--set", f"{key}={value}"]
        return self.start([*args, *extra], f"{name}-{port}", preexec_fn=preexec_fn)

    def stop_all(self) -> None:
        for proc in reversed(self.started):
            proc.stop()


@contextlib.contextmanager
def running(tmp: Path) -> Iterator[Processes]:
    """Processes of one test (a ``procs`` fixture's body): every one is stopped at the end, by PID."""
    started = Processes(tmp)
    try:
        yield started
    finally:
        started.stop_all()


async def pull_bodies(namesrv: str, topic: str, group: str) -> list[bytes]:
    """The bodies of every message in every queue of ``topic``, queue by queue."""
    bodies: list[bytes] = []
    async with PullConsumer(group, namesrv_addr=namesrv) as consumer:
        for mq in await consumer.fetch_subscribe_queues(topic):
            offset = 0
            while True:
                result = await consumer.pull(mq, "*", offset, max_nums=32)
                bodies.extend(m.body for m in result.messages)
                if not result.messages:
                    break
                offset = result.next_begin_offset
    return bodies


def scrape_metrics(port: int) -> dict[str, list[tuple[dict[str, str], float]]]:
    """A process's /metrics: each sample name with its (labels, value) pairs."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
        text = resp.read().decode()
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out.setdefault(sample.name, []).append((sample.labels, sample.value))
    return out
