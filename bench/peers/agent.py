"""Client agents: the processes that run the workloads, one per system and role.

The comparison runs every client in a process of its own, never in the driver: the client's
CPU time is then its own (``getrusage`` of that process), a slow client library cannot steal
time from the driver's bookkeeping, and the e2e producer and consumer are separate processes as
they would be in real use. An agent lives for the whole run (started once, so start-up and
imports are not measured) and takes commands on stdin, one JSON object a line:

    {"op": "sync", "address": "127.0.0.1:4222", "stream": "s1", "pids": [123], "count": 5000, ...}

and answers on stdout with JSON lines: ``{"event": "ready"}`` when a consumer is set up (e2e
only), then ``{"event": "result", "measurement": {...}}`` or ``{"event": "error", ...}``. Each
command runs in a fresh event loop (uvloop when installed, as ``rocketq bench`` does) under a
timeout. ``Agent`` is the driver's handle on such a process.

    python -m peers.agent rocketq          # bench/ on sys.path
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import gc
import json
import os
import select
import subprocess
import sys
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, Final, TextIO

from peers import workloads
from peers.clients import api

BENCH_DIR: Final = Path(__file__).resolve().parents[1]
ANSWER_GRACE_S: Final = 60.0
"""How much longer than a command's own timeout the driver waits for its answer."""


class AgentError(RuntimeError):
    """An agent reported an error, died, or did not answer in time."""


# --- the agent process --------------------------------------------------------------------


async def _execute(system: str, command: dict[str, Any], ready: Callable[[], None]) -> workloads.Measurement | None:
    op, count, pids = command["op"], command.get("count", 0), command["pids"]
    async with api.open_client(system, command["address"], command["stream"]) as client:
        if op == "sync":
            return await workloads.sync_sends(client, count, pids)
        if op == "pipelined":
            return await workloads.pipelined(client, count, command["window"], pids)
        if op == "batched":
            return await workloads.batched(client, count, command["batch"], command["in_flight"], pids)
        if op == "consume":
            await workloads.fill(client, count, command["batch"], command["in_flight"])
            return await workloads.drain(client, command["group"], count, pids)
        if op == "e2e-consume":
            return await workloads.drain(client, command["group"], count, pids, ready)
        if op == "paced":
            return await workloads.paced(client, count, command["rate"], pids)
        if op == "delete":
            await client.delete()
            return None
    raise ValueError(f"unknown op {op!r}")


def _run(coro: Coroutine[Any, Any, workloads.Measurement | None]) -> workloads.Measurement | None:
    from rocketq.bench.loadgen import run_loop

    return run_loop(coro)


def serve(system: str, commands: TextIO, answers: TextIO) -> None:
    """Answer commands until stdin closes."""

    def say(event: dict[str, Any]) -> None:
        answers.write(json.dumps(event) + "\n")
        answers.flush()

    for line in commands:
        if not line.strip():
            continue
        command = json.loads(line)

        async def bounded(cmd: dict[str, Any] = command) -> workloads.Measurement | None:
            return await asyncio.wait_for(_execute(system, cmd, lambda: say({"event": "ready"})), cmd["timeout"])

        try:
            measurement = _run(bounded())
        except Exception as exc:  # reported to the driver, which decides; the agent stays up
            say({"event": "error", "message": f"{type(exc).__name__}: {exc}"})
        else:
            say({"event": "result", "measurement": dataclasses.asdict(measurement) if measurement else None})
        gc.collect()  # the next command starts from a clean heap


def main() -> None:
    system = sys.argv[1]
    if system not in api.SYSTEMS:
        raise SystemExit(f"usage: python -m peers.agent {{{','.join(api.SYSTEMS)}}}")
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    sys.stdout = sys.stderr  # a stray print from a library must not corrupt the answers
    serve(system, sys.stdin, answers)


# --- the driver's handle ------------------------------------------------------------------


class Agent:
    """A running agent process; ``close`` ends it (idempotent)."""

    def __init__(self, system: str, role: str, log: Path) -> None:
        self.system, self.role = system, role
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(BENCH_DIR),
                                                                          os.environ.get("PYTHONPATH")]))}
        with open(log, "ab") as err:
            self._proc = subprocess.Popen([sys.executable, "-m", "peers.agent", system], stdin=subprocess.PIPE,
                                          stdout=subprocess.PIPE, stderr=err, text=True, env=env)
        self._buffer = ""

    def send(self, command: dict[str, Any]) -> None:
        assert self._proc.stdin is not None
        self._proc.stdin.write(json.dumps(command) + "\n")
        self._proc.stdin.flush()

    def next_event(self, timeout: float) -> dict[str, Any]:
        """The next JSON line the agent writes, waiting at most ``timeout`` seconds."""
        assert self._proc.stdout is not None
        deadline = time.monotonic() + timeout
        while "\n" not in self._buffer:
            left = deadline - time.monotonic()
            readable, _, _ = select.select([self._proc.stdout], [], [], max(0.0, left))
            if not readable:
                raise AgentError(f"{self.system} {self.role} agent: no answer within {timeout:.0f}s")
            chunk = os.read(self._proc.stdout.fileno(), 65536).decode()
            if not chunk:
                raise AgentError(f"{self.system} {self.role} agent exited ({self._proc.poll()})")
            self._buffer += chunk
        line, self._buffer = self._buffer.split("\n", 1)
        event: dict[str, Any] = json.loads(line)
        if event["event"] == "error":
            raise AgentError(f"{self.system} {self.role}: {event['message']}")
        return event

    def result(self, timeout: float) -> workloads.Measurement | None:
        event = self.next_event(timeout + ANSWER_GRACE_S)
        if event["event"] != "result":
            raise AgentError(f"{self.system} {self.role}: expected a result, got {event}")
        raw = event["measurement"]
        return workloads.Measurement(**raw) if raw is not None else None

    def request(self, command: dict[str, Any]) -> workloads.Measurement | None:
        self.send(command)
        return self.result(command["timeout"])

    def close(self) -> None:
        if self._proc.poll() is None:
            assert self._proc.stdin is not None
            with contextlib.suppress(BrokenPipeError):
                self._proc.stdin.close()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()


if __name__ == "__main__":
    main()
