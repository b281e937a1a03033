"""Running the operator's rendered pods as local processes: what the e2e pod tests share.

A pod test renders a group with the operator's pure functions, lays its ConfigMap out as a
volume mount would and runs the container's command with the pod's environment. These helpers
are the parts every such test needs: the RocketMQCluster of a docs/examples file, waiting for a
process's "listening on" line, a real name server for the brokers to register with, and a real
broker (for pods that sit in front of brokers, such as the gRPC proxy).
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Final

import yaml
from rocketq_operator.spec import Cluster, cluster_meta, parse_cluster_spec

from rocketq.local.ports import free_port

EXAMPLES: Final = Path(__file__).resolve().parents[1] / "docs" / "examples"
READY: Final = " listening on "
START_TIMEOUT: Final = 30.0
BROKER_COMMITLOG_FILE: Final = 64 * 1024 * 1024
"""A small CommitLog file, so a test broker does not reserve the default 1 GiB."""


def example_cluster(name: str) -> Cluster:
    """The parsed RocketMQCluster of ``docs/examples/<name>``, as the API server would hand it on."""
    body = yaml.safe_load((EXAMPLES / name).read_text())
    body["metadata"]["uid"] = "uid-1"
    parsed = parse_cluster_spec(body["spec"], body["metadata"]["name"])
    assert parsed.spec is not None, parsed.errors
    return Cluster(cluster_meta(body), parsed.spec)


def wait_ready(proc: subprocess.Popen[bytes], log: Path,
               on_exit: Callable[[int, str], None] | None = None) -> str:
    """The address a process says it listens on; ``on_exit(code, log text)`` may react to an
    early exit (e.g. skip) before it fails the test."""
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        text = log.read_text(errors="replace")
        for line in text.splitlines():
            if READY in line:
                return line.rsplit(READY, 1)[1].strip()
        if proc.poll() is not None:
            if on_exit is not None:
                on_exit(proc.returncode, text)
            break
        time.sleep(0.05)
    raise AssertionError(log.read_text(errors="replace"))


def run_namesrv(workdir: Path) -> Iterator[str]:
    """A ``rocketq namesrv`` on a free port for as long as the generator is open (a fixture body)."""
    port = free_port()
    log = workdir / "namesrv.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "rocketq", "namesrv", "-p", str(port), "--metrics-port", "0"],
                                stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_ready(proc, log)
        yield f"127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(20)


def run_broker(workdir: Path, namesrv: str, cluster: str, name: str,
               config: Mapping[str, str] | None = None) -> Iterator[str]:
    """A ``rocketq broker`` of ``cluster`` registered with ``namesrv``, for as long as the generator is open;
    ``config``: more broker.conf keys."""
    port = free_port()
    log = workdir / f"{name}.log"
    args = ["broker", "-n", namesrv, "-p", str(port), "--store-dir", str(workdir / f"{name}-store"),
            "--metrics-port", "0"]
    for key, value in (("brokerClusterName", cluster), ("brokerName", name), ("brokerIP1", "127.0.0.1"),
                       ("haListenPort", str(free_port())), ("mappedFileSizeCommitLog", str(BROKER_COMMITLOG_FILE)),
                       *(config or {}).items()):
        args += ["--set", f"{key}={value}"]
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "rocketq", *args], stdout=out, stderr=subprocess.STDOUT)
    try:
        yield wait_ready(proc, log)
    finally:
        proc.terminate()
        proc.wait(20)
