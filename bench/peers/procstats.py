"""CPU time and resident memory of server processes, read from /proc (Linux only).

On a machine shared with other work, CPU seconds per message are steadier than throughput, so
each measurement records the CPU the servers used during its timed part (``cpu_seconds``,
user + system, from ``/proc/PID/stat``) next to the client's own (``resource.getrusage``).

Memory under load is the peak resident set of each server process, sampled by a background
``RssSampler`` (``VmRSS``), together with the peak of its anonymous part (``RssAnon``: heap,
buffers), because a broker that maps its CommitLog counts
the file pages it touched in its RSS (``RssFile``) while a server that writes with ``write()``
does not, and the two numbers side by side keep that comparison honest.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Final

TICKS: Final = os.sysconf("SC_CLK_TCK")
SAMPLE_INTERVAL_S: Final = 0.1
"""How often ``RssSampler`` reads each process's RssAnon."""


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU seconds the processes have used so far (a process gone counts 0)."""
    total = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):
            continue
        total += (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime
    return total


def memory_kib(pid: int) -> dict[str, int]:
    """``VmHWM``, ``VmRSS``, ``RssAnon`` and ``RssFile`` of a process in KiB ({} if it is gone)."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return {}
    wanted = ("VmHWM", "VmRSS", "RssAnon", "RssFile")
    out = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key in wanted:
            out[key] = int(value.split()[0])
    return out


@dataclass
class PeakMemory:
    rss_kib: int = 0
    """The largest resident set (VmRSS) seen since the last ``take``."""
    anon_kib: int = 0
    """The largest anonymous part of it (RssAnon) seen since the last ``take``."""


class RssSampler:
    """Follows the peak memory of some processes in a thread: every ``SAMPLE_INTERVAL_S``,
    and once more whenever the peaks are taken. ``take`` returns the peaks since the last
    ``take`` and starts over, so each repeat of the comparison gets its own peaks; the
    kernel's own high-water mark for the whole life of a process is ``memory_kib``'s VmHWM."""

    def __init__(self, pids: list[int]) -> None:
        self._peaks = {pid: PeakMemory() for pid in pids}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rss-sampler", daemon=True)
        self._thread.start()

    def take(self) -> dict[int, PeakMemory]:
        self._sample()
        with self._lock:
            peaks, self._peaks = self._peaks, {pid: PeakMemory() for pid in self._peaks}
        return peaks

    def close(self) -> None:
        """Stop the thread (idempotent)."""
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(SAMPLE_INTERVAL_S):
            self._sample()

    def _sample(self) -> None:
        with self._lock:
            for pid, peak in self._peaks.items():
                mem = memory_kib(pid)
                peak.rss_kib = max(peak.rss_kib, mem.get("VmRSS", 0))
                peak.anon_kib = max(peak.anon_kib, mem.get("RssAnon", 0))
