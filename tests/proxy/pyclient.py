"""The official RocketMQ 5 Python client in a child process (``pyclient_driver.py``), driven from a test.

``PyClient.call(op, **fields)`` writes one JSON command and waits for its answer; a client
exception comes back as ``PyClientError``. ``close`` shuts the client down and always ends the
process (by its PID). HOME points at the test's temporary directory, where the client writes
its log (``~/logs/rocketmq_python``).
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Final

DRIVER: Final = Path(__file__).with_name("pyclient_driver.py")
ANSWER_TIMEOUT_S: Final = 60.0
"""Generous: receives long-poll, and the machine is shared."""
CLOSE_WAIT_S: Final = 15.0
RECEIVE_TRIES: Final = 20
ROOTS_ENV: Final = "GRPC_DEFAULT_SSL_ROOTS_FILE_PATH"


class PyClientError(RuntimeError):
    pass


class PyClient:
    def __init__(self, endpoint: str, home: Path, credentials: tuple[str, str] = ("", ""),
                 trust: Path | None = None, answer_stacks: bool = False) -> None:
        """``trust``: a PEM certificate; the client then connects with TLS (``tls_enable=True``) trusting it.
        ``answer_stacks``: the client answers thread-stack commands as the Java client does (the driver's doc)."""
        home.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "HOME": str(home)}
        if trust is not None:
            # the client makes grpc.ssl_channel_credentials() with no roots: gRPC's default roots, which
            # this gRPC core variable replaces (the only way to make that client trust a test certificate)
            env[ROOTS_ENV] = str(trust)
        with open(home / "driver.stderr", "wb") as stderr:
            self._proc = subprocess.Popen(
                [sys.executable, str(DRIVER), endpoint, *credentials, "tls" if trust else "plaintext",
                 "answer-stacks" if answer_stacks else "silent"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, env=env, text=True)
        self._answers: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self._next()  # the ready line

    def _read(self) -> None:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            self._answers.put(line)

    def _next(self) -> dict[str, Any]:
        try:
            answer: dict[str, Any] = json.loads(self._answers.get(timeout=ANSWER_TIMEOUT_S))
        except queue.Empty:
            raise PyClientError("the client process did not answer in time") from None
        return answer

    def call(self, op: str, **fields: Any) -> dict[str, Any]:
        assert self._proc.stdin is not None
        self._proc.stdin.write(json.dumps({"op": op, **fields}) + "\n")
        self._proc.stdin.flush()
        answer = self._next()
        if "error" in answer:
            raise PyClientError(answer["error"])
        return answer

    def send_and_receive(self, topic: str, group: str, body: str) -> tuple[str, list[dict[str, Any]]]:
        """One message produced and received back (up to ``RECEIVE_TRIES`` receives): its id and what came."""
        self.call("producer", topics=[topic])
        sent: str = self.call("send", topic=topic, body=body)["id"]
        self.call("consumer", group=group, topic=topic, await_s=5)
        got: list[dict[str, Any]] = []
        for _ in range(RECEIVE_TRIES):
            got += self.call("receive", n=8, invisible_s=30)["messages"]
            if got:
                break
        return sent, got

    def kill(self) -> None:
        """End the client process at once, as a crash would: no termination notice, streams cut."""
        self._proc.kill()
        self._proc.wait(CLOSE_WAIT_S)

    def close(self) -> None:
        """Shut the client down cleanly if it still answers; end the process in any case."""
        try:
            if self._proc.poll() is None:
                self.call("close")
                self._proc.wait(CLOSE_WAIT_S)
        except (PyClientError, OSError, ValueError, subprocess.TimeoutExpired):
            self._proc.kill()
        self._proc.wait(CLOSE_WAIT_S)
