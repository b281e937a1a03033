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


class PyClientError(RuntimeError):
    pass


class PyClient:
    def __init__(self, endpoint: str, home: Path, credentials: tuple[str, str] = ("", "")) -> None:
        home.mkdir(parents=True, exist_ok=True)
        with open(home / "driver.stderr", "wb") as stderr:
            self._proc = subprocess.Popen(
                [sys.executable, str(DRIVER), endpoint, *credentials], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=stderr, env={**os.environ, "HOME": str(home)}, text=True)
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

    def close(self) -> None:
        """Shut the client down cleanly if it still answers; end the process in any case."""
        try:
            if self._proc.poll() is None:
                self.call("close")
                self._proc.wait(CLOSE_WAIT_S)
        except (PyClientError, OSError, ValueError, subprocess.TimeoutExpired):
            self._proc.kill()
        self._proc.wait(CLOSE_WAIT_S)
