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
                                  "--users", str(users_file), "--audit-log", str(workdir / "audit.jsonl")],
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
