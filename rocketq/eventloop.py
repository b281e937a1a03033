"""Which event loop rocketq's own processes run on, and how their garbage collector is set.

Every process rocketq starts itself — ``rocketq namesrv/broker/proxy`` (``cli/serving.py``)
and ``rocketq bench`` (``bench/loadgen.py``, also the comparison agent in ``bench/peers``) —
runs its main coroutine through ``run``:

* **uvloop** when it is installed (a default dependency everywhere but Windows), asyncio's own
  loop otherwise. ``ROCKETQ_UVLOOP=0`` in the environment forces asyncio's loop (read at each
  ``run``). Measured in docs/benchmarks.md ("Round 3: the loop and the socket").
* **collection thresholds** ``GC_THRESHOLDS``: these processes allocate many short-lived
  objects per message and keep few; with CPython's default (a young collection every 700
  net allocations) a producer with 1 000 sends in flight promoted each send's objects into
  the older generations and spent about a quarter of its CPU collecting them.

Applications that use the SDK run their own loop; this module does not touch their process.
Its ``tune_gc`` is what they can call themselves for the same effect (docs/operations.md).
"""

from __future__ import annotations

import asyncio
import gc
import os
from collections.abc import Coroutine
from typing import Any, Final, TypeVar

T = TypeVar("T")

SWITCH: Final = "ROCKETQ_UVLOOP"
"""Environment variable: ``0`` (or ``false``/``no``/``off``) runs asyncio's loop even when
uvloop is installed."""
_OFF: Final = frozenset({"0", "false", "no", "off"})

GC_THRESHOLDS: Final = (100_000, 50, 1_000)
"""``gc.set_threshold`` of rocketq's processes: a young collection every 100 000 net
allocations instead of 700. Cut a broker's CPU per sync send by ~14 % and a pipelined
producer's by ~30 % (docs/benchmarks.md), without growing memory noticeably: what a request
allocates is freed by reference counting, not by the collector."""


def uvloop_wanted() -> bool:
    """False when ``ROCKETQ_UVLOOP`` turns uvloop off."""
    return os.environ.get(SWITCH, "").strip().lower() not in _OFF


def loop_name() -> str:
    """``uvloop`` or ``asyncio``: what ``run`` would use now."""
    return "uvloop" if _uvloop() is not None else "asyncio"


def tune_gc() -> None:
    """Set the collector's thresholds to ``GC_THRESHOLDS`` for this process."""
    gc.set_threshold(*GC_THRESHOLDS)


def run(main: Coroutine[Any, Any, T], *, tune: bool = True) -> T:
    """Run ``main`` to completion on a new loop (uvloop unless switched off or missing);
    ``tune``: apply ``GC_THRESHOLDS`` first."""
    if tune:
        tune_gc()
    box: list[T] = []
    uvloop = _uvloop()
    if uvloop is None:
        asyncio.run(_boxed(main, box))
    else:
        uvloop.run(_boxed(main, box))
    return box[0]


async def _boxed(main: Coroutine[Any, Any, T], box: list[T]) -> None:
    """Run ``main`` and keep its result out of the main task's. Python 3.11's ``asyncio.Runner``
    formats that task (result included) when it restores the SIGINT handler at exit, and a
    benchmark's result holds every latency sample: ~0.8 µs of CPU per message it sent."""
    box.append(await main)


def _uvloop() -> Any:
    if not uvloop_wanted():
        return None
    try:
        import uvloop
    except ImportError:  # optional: not on Windows, or not installed
        return None
    return uvloop
