"""A real headless Chromium for the console's browser test, and the console as a real process.

``chromedriver()`` finds Debian's ``chromium`` and ``chromium-driver``; when they are missing
and this process may install packages (root, apt-get present), it installs them, so a fresh
CI machine runs the browser test rather than skipping it. Only when that is impossible does it
tell the caller why, and the test skips with that reason.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Final

CHROMEDRIVER: Final = Path("/usr/bin/chromedriver")
CHROMIUM: Final = Path("/usr/bin/chromium")
APT_PACKAGES: Final = ("chromium", "chromium-driver")
APT_TIMEOUT_S: Final = 900.0
CHROMIUM_FLAGS: Final = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                         "--disable-background-networking", "--disable-component-update", "--disable-sync",
                         "--disable-dev-shm-usage", "--window-size=1280,900")
READY: Final = re.compile(r"rocketq console listening on (http://\S+)")
START_DEADLINE_S: Final = 30.0


def ensure_chromium() -> str | None:
    """None when chromium and chromedriver are there (installed now if need be), else why not."""
    if CHROMEDRIVER.exists() and CHROMIUM.exists():
        return None
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        return "chromium/chromium-driver are missing and cannot be installed here (needs root and apt-get)"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    try:
        subprocess.run(["apt-get", "update", "-qq"], check=True, env=env, timeout=APT_TIMEOUT_S,
                       capture_output=True)
        subprocess.run(["apt-get", "install", "-y", "-qq", *APT_PACKAGES], check=True, env=env,
                       timeout=APT_TIMEOUT_S, capture_output=True)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
        output = getattr(exc, "stderr", b"") or b""
        return f"installing {' '.join(APT_PACKAGES)} failed: {exc}: {output.decode(errors='replace')[-500:]}"
    if not (CHROMEDRIVER.exists() and CHROMIUM.exists()):
        return f"apt-get installed {' '.join(APT_PACKAGES)} but {CHROMEDRIVER} or {CHROMIUM} is still missing"
    return None


@dataclass
class ConsoleProcess:
    popen: subprocess.Popen[bytes]
    url: str
    log: Path

    def stop(self) -> None:
        if self.popen.poll() is None:
            self.popen.terminate()
            try:
                self.popen.wait(15)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()


def start_console(namesrv: str, users_file: Path, workdir: Path) -> ConsoleProcess:
    """``rocketq console`` on a free port; waits for its ready line (fails with its log if none)."""
    log = workdir / "console.log"
    with log.open("wb") as sink:
        popen = subprocess.Popen([sys.executable, "-m", "rocketq", "console", "-n", namesrv, "-p", "0",
                                  "--users", str(users_file), "--audit-log", str(workdir / "audit.jsonl"),
                                  "--sample-interval", "1"],
                                 stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                 env={**os.environ, "PYTHONUNBUFFERED": "1"})
    deadline = time.monotonic() + START_DEADLINE_S
    while True:
        found = READY.search(log.read_text(errors="replace"))
        if found:
            return ConsoleProcess(popen, found.group(1), log)
        if popen.poll() is not None or time.monotonic() > deadline:
            process = ConsoleProcess(popen, "", log)
            process.stop()
            raise RuntimeError(f"rocketq console did not start:\n{log.read_text(errors='replace')[-3000:]}")
        time.sleep(0.05)


class Traffic:
    """Messages and consumers for the browser test, on an event loop in a thread of its own.

    ``messages`` go to ``topic``; group ``slow_group`` holds them until ``release()`` (so the
    page shows its lag, then sees it fall), and group ``failing_group`` fails every message with
    no retries, so they become its dead letters.
    """

    def __init__(self, namesrv: str, topic: str, slow_group: str, failing_group: str, messages: int) -> None:
        import asyncio
        import threading

        self.namesrv, self.topic, self.messages = namesrv, topic, messages
        self.slow_group, self.failing_group = slow_group, failing_group
        self._loop = asyncio.new_event_loop()
        self._stop = asyncio.Event()
        self._gate = asyncio.Event()
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="browser-traffic", daemon=True)

    def start(self) -> None:
        self._thread.start()
        if not self._ready.wait(60) or self._error is not None:
            raise RuntimeError(f"traffic did not start: {self._error!r}")

    def release(self) -> None:
        self._loop.call_soon_threadsafe(self._gate.set)

    def stop(self) -> None:
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(30)

    def _run(self) -> None:
        self._loop.run_until_complete(self._main())

    async def _main(self) -> None:
        from rocketq.admin import messages as admin_messages
        from rocketq.admin.client import AdminClient
        from rocketq.client.consuming import ConsumeStatus
        from rocketq.client.pushconsumer import PushConsumer
        from rocketq.client.settings import ConsumeFromWhere
        from rocketq.protocol.messagetypes import Message

        async def held(msgs, ctx):  # type: ignore[no-untyped-def]
            await self._gate.wait()
            return ConsumeStatus.CONSUME_SUCCESS

        consumers = []
        try:
            async with AdminClient(self.namesrv) as admin:
                for i in range(self.messages):
                    msg = Message(self.topic, f'{{"n": {i}}}'.encode())
                    msg.keys = [f"traffic-{i}"]
                    await admin_messages.send(admin, msg)
            for group, listener, retries in ((self.slow_group, held, -1),
                                             (self.failing_group, lambda m, c: ConsumeStatus.RECONSUME_LATER, 0)):
                consumer = PushConsumer(group, self.namesrv, max_reconsume_times=retries,
                                        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
                                        persist_consumer_offset_interval=500)
                consumer.subscribe(self.topic)
                consumer.register_listener(listener)
                await consumer.start()
                consumers.append(consumer)
        except BaseException as exc:
            self._error = exc
            self._ready.set()
            raise
        self._ready.set()
        await self._stop.wait()
        self._gate.set()
        for consumer in consumers:
            await consumer.close()
