"""What the charts draw: a few hours of samples taken by the console itself.

``Sampler`` runs in the console's event loop every ``interval`` seconds: it reads every broker's
runtime info (messages in and out per second, from the brokers' own counters, see ``rates``) and
every consumer group's lag (``rocketq.admin.cluster.group_summaries``), and appends them to a
``History``: one bounded series per name (``MAX_POINTS`` points, oldest dropped), at most
``MAX_SERIES`` series. Nothing is stored on disk: a restarted console starts its charts afresh.
A failed round is logged (rate-limited) and the next round tries again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict, deque
from typing import Final

from rocketq.admin import cluster as cluster_ops
from rocketq.admin.client import AdminClient
from rocketq.admin.errors import AdminError, BodyError, UnavailableError
from rocketq.console import rates
from rocketq.ratelimit import LogLimiter
from rocketq.remoting.errors import RemotingError

MAX_POINTS: Final = 720
"""Points per series: three hours at the default interval."""
MAX_SERIES: Final = 512
DEFAULT_INTERVAL_S: Final = 15.0

log = logging.getLogger(__name__)
_failures: Final = LogLimiter(log, interval=300.0)

Point = tuple[int, float]
"""(milliseconds since the epoch, value)."""


class History:
    def __init__(self) -> None:
        self._series: OrderedDict[str, deque[Point]] = OrderedDict()

    def add(self, name: str, when_ms: int, value: float) -> None:
        series = self._series.get(name)
        if series is None:
            if len(self._series) >= MAX_SERIES:
                self._series.popitem(last=False)
            series = self._series[name] = deque(maxlen=MAX_POINTS)
        series.append((when_ms, value))

    def group(self, prefix: str) -> dict[str, list[Point]]:
        """Every series whose name starts with ``prefix``, keyed by the rest of the name."""
        return {name[len(prefix):]: list(points) for name, points in sorted(self._series.items())
                if name.startswith(prefix)}


LAG: Final = "lag "
TPS_IN: Final = "in "
TPS_OUT: Final = "out "


class Sampler:
    def __init__(self, admin: AdminClient, history: History, interval: float = DEFAULT_INTERVAL_S) -> None:
        self.admin, self.history, self.interval = admin, history, interval
        self._meter = rates.RateMeter()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="console-sampler")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _run(self) -> None:
        while True:
            try:
                await self.sample()
            except (RemotingError, AdminError, BodyError, UnavailableError) as exc:
                _failures.warning("sample", "console: sampling the cluster failed: %s", exc)
            await asyncio.sleep(self.interval)

    async def sample(self) -> None:
        now = int(time.time() * 1000)
        info = await self.admin.cluster_info()
        for addr in info.all_addrs():
            try:
                runtime = await self.admin.runtime_info(addr)
            except (RemotingError, AdminError, BodyError):
                continue  # an unreachable broker has no point now; the cluster page says why
            tps_in, tps_out = rates.broker_tps(self._meter, addr, runtime)
            name = info.locate(addr)
            label = f"{name.broker_name} {addr}" if name else addr
            if tps_in is not None:
                self.history.add(TPS_IN + label, now, tps_in)
            if tps_out is not None:
                self.history.add(TPS_OUT + label, now, tps_out)
        for summary in await cluster_ops.group_summaries(self.admin):
            self.history.add(LAG + summary.group, now, summary.diff_total)
